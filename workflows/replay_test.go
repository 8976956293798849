package workflows

import (
	"path/filepath"
	"testing"

	"go.temporal.io/sdk/worker"
)

// TestReplayRecordedHistories replays every history recorded from the real
// servers (`make record-histories`) against today's workflow code. A change
// that is not behind workflow.GetVersion fails here with a non-determinism
// error (TMPRL1100): record again only for a deliberate, versioned change.
func TestReplayRecordedHistories(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "histories", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no recorded histories in testdata/histories: run make record-histories")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			r := worker.NewWorkflowReplayer()
			Register(r)
			if err := r.ReplayWorkflowHistoryFromJSONFile(nil, f); err != nil {
				t.Fatalf("replay %s: %v", f, err)
			}
		})
	}
}

func TestReplayDetectsAnUnversionedChange(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("testdata", "histories", "component-*.json"))
	if len(files) == 0 {
		t.Fatal("no recorded Component history")
	}
	// A Component workflow that skips its first activity: what an
	// unversioned edit looks like to a running workflow.
	r := worker.NewWorkflowReplayer()
	r.RegisterWorkflowWithOptions(brokenComponentWorkflow, workflowOptions("ComponentWorkflow"))
	r.RegisterWorkflow(ExposedAPIWorkflow)
	err := r.ReplayWorkflowHistoryFromJSONFile(nil, files[0])
	if err == nil {
		t.Fatal("replaying a changed workflow succeeded; the replay suite would not catch unversioned changes")
	}
}
