package workflows

import "go.temporal.io/sdk/worker"

// Register registers every odaflow workflow.
func Register(r worker.WorkflowRegistry) {
	r.RegisterWorkflow(ComponentWorkflow)
	r.RegisterWorkflow(ExposedAPIWorkflow)
	r.RegisterWorkflow(DependentAPIWorkflow)
	r.RegisterWorkflow(IdentityConfigWorkflow)
	r.RegisterWorkflow(SecretsManagementWorkflow)
}
