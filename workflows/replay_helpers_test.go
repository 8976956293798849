package workflows

import (
	"go.temporal.io/sdk/workflow"
)

func workflowOptions(name string) workflow.RegisterOptions {
	return workflow.RegisterOptions{Name: name}
}

// brokenComponentWorkflow waits for a signal and then a timer instead of
// running the Component's activities.
func brokenComponentWorkflow(ctx workflow.Context, in ComponentInput) error {
	var ev ResourceEvent
	workflow.GetSignalChannel(ctx, SignalResourceEvent).Receive(ctx, &ev)
	return workflow.Sleep(ctx, 1)
}
