package integration

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/temporalproto"

	"github.com/odaflow/odaflow/internal/localstack"
)

// recordHistory saves a workflow's history (its latest run) for the replay
// suite in workflows/testdata/histories, when ODAFLOW_RECORD_HISTORIES is
// set (`make record-histories`). The replay tests then prove every later
// change to the workflow code is compatible with what production recorded.
func recordHistory(t *testing.T, workflowID, file string) {
	t.Helper()
	recordRun(t, workflowID, "", file)
}

// recordRun is recordHistory for one run ("" for the latest).
func recordRun(t *testing.T, workflowID, runID, file string) {
	t.Helper()
	if os.Getenv("ODAFLOW_RECORD_HISTORIES") == "" {
		return
	}
	var events []*historypb.HistoryEvent
	it := stack.tc.GetWorkflowHistory(context.Background(), workflowID, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatalf("history of %s: %v", workflowID, err)
		}
		events = append(events, ev)
	}
	events = withoutUnfinishedTask(events)
	b, err := temporalproto.CustomJSONMarshalOptions{Indent: "  "}.Marshal(&historypb.History{Events: events})
	if err != nil {
		t.Fatalf("encode history: %v", err)
	}
	root, err := localstack.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(root, "workflows", "testdata", "histories", file)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("recorded %d events of %s into %s", len(events), workflowID, path)
}

// withoutUnfinishedTask drops a workflow task still in flight at the end of
// a history (its Scheduled and Started events): replaying a history that
// ends with one leaves the commands of the task before it unchecked, so a
// change to them would pass the replay suite.
func withoutUnfinishedTask(events []*historypb.HistoryEvent) []*historypb.HistoryEvent {
	for len(events) > 0 {
		switch events[len(events)-1].GetEventType() {
		case enumspb.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED, enumspb.EVENT_TYPE_WORKFLOW_TASK_STARTED:
			events = events[:len(events)-1]
		default:
			return events
		}
	}
	return events
}
