package workflows

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// TestReplayRecordedHistories replays every history recorded from the real
// servers (`make record-histories`) against today's workflow code. A change
// that is not behind workflow.GetVersion fails here with a non-determinism
// error (TMPRL1100): record again only for a deliberate, versioned change.
func TestReplayRecordedHistories(t *testing.T) {
	for _, f := range recordedHistories(t) {
		t.Run(filepath.Base(f), func(t *testing.T) {
			r := worker.NewWorkflowReplayer()
			Register(r)
			if err := r.ReplayWorkflowHistoryFromJSONFile(nil, f); err != nil {
				t.Fatalf("replay %s: %v", f, err)
			}
		})
	}
}

// TestReplayDetectsAnUnversionedChange proves the suite above can fail:
// every recorded history is replayed against workflows that each schedule
// one activity more than the real ones before anything else, the smallest
// new step a running workflow can meet. Every replay must fail with a
// non-determinism error.
func TestReplayDetectsAnUnversionedChange(t *testing.T) {
	for _, f := range recordedHistories(t) {
		t.Run(filepath.Base(f), func(t *testing.T) {
			r := worker.NewWorkflowReplayer()
			registerWithExtraStep(r)
			err := r.ReplayWorkflowHistoryFromJSONFile(nil, f)
			if err == nil {
				t.Fatal("replaying a changed workflow succeeded; the replay suite would not catch unversioned changes")
			}
			if !strings.Contains(err.Error(), "TMPRL1100") {
				t.Fatalf("replay failed for another reason than non-determinism: %v", err)
			}
		})
	}
}

func recordedHistories(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "histories", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	// The histories of every release are kept as they were recorded and
	// replayed forever: a workflow a release started may still be running.
	released, err := filepath.Glob(filepath.Join("testdata", "releases", "*", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, released...)
	if len(files) == 0 {
		t.Fatal("no recorded histories in testdata/histories: run make record-histories")
	}
	return files
}

// registerWithExtraStep registers every workflow of Register under its own
// name, changed to schedule an activity before it does anything else.
func registerWithExtraStep(r worker.WorkflowRegistry) {
	r.RegisterWorkflowWithOptions(withExtraStep(ComponentWorkflow), workflow.RegisterOptions{Name: "ComponentWorkflow"})
	r.RegisterWorkflowWithOptions(withExtraStep(ExposedAPIWorkflow), workflow.RegisterOptions{Name: "ExposedAPIWorkflow"})
	r.RegisterWorkflowWithOptions(withExtraStep(DependentAPIWorkflow), workflow.RegisterOptions{Name: "DependentAPIWorkflow"})
	r.RegisterWorkflowWithOptions(withExtraStep(IdentityConfigWorkflow), workflow.RegisterOptions{Name: "IdentityConfigWorkflow"})
	r.RegisterWorkflowWithOptions(withExtraStep(SecretsManagementWorkflow), workflow.RegisterOptions{Name: "SecretsManagementWorkflow"})
}

func withExtraStep[In any](wf func(workflow.Context, In) error) func(workflow.Context, In) error {
	return func(ctx workflow.Context, in In) error {
		workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute}), "ExtraStep")
		return wf(ctx, in)
	}
}

// The changed registry must cover every registered workflow type, or the
// test above would only prove that an unknown type fails.
func TestExtraStepRegistryCoversEveryWorkflow(t *testing.T) {
	changed := &typeRecorder{}
	registerWithExtraStep(changed)
	for _, name := range registeredWorkflowTypes(t) {
		found := false
		for _, n := range changed.names {
			found = found || n == name
		}
		if !found {
			t.Errorf("registerWithExtraStep misses %s", name)
		}
	}
}
