package workflows

import (
	"testing"

	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"
)

// versionsWorkflow reports, for each change id, the version the run takes.
func versionsWorkflow(ctx workflow.Context, ids []string) ([]workflow.Version, error) {
	ctx = withBaseline(ctx)
	var out []workflow.Version
	for _, id := range ids {
		out = append(out, versionOf(ctx, id))
	}
	return out, nil
}

// A run with the baseline takes the new branch of every earlier change
// without asking for it (the mocks below, which would answer
// DefaultVersion, are never consulted); a run from before the baseline asks
// each change for its own recorded version.
func TestBaselineFoldsEveryEarlierChange(t *testing.T) {
	ids := []string{changeLocalKube, changeSettle, changeSearchAttributes}
	for _, tc := range []struct {
		name     string
		baseline workflow.Version
		want     []workflow.Version
	}{
		{"started with the baseline", 1, []workflow.Version{1, 1, 1}},
		// changeSearchAttributes has no recorded marker in this run: the
		// test environment answers with the newest version, as a worker
		// does for a change first met after the run started.
		{"started before the baseline", workflow.DefaultVersion, []workflow.Version{workflow.DefaultVersion, workflow.DefaultVersion, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var suite testsuite.WorkflowTestSuite
			env := suite.NewTestWorkflowEnvironment()
			env.RegisterWorkflow(versionsWorkflow)
			env.OnGetVersion(changeBaseline, workflow.DefaultVersion, baselineLevel).Return(tc.baseline)
			env.OnGetVersion(changeLocalKube, workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
			env.OnGetVersion(changeSettle, workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
			env.ExecuteWorkflow(versionsWorkflow, ids)
			var got []workflow.Version
			if err := env.GetWorkflowResult(&got); err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("versions %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("%s: version %d, want %d", ids[i], got[i], tc.want[i])
				}
			}
		})
	}
}
