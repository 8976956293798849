package workflows

import "go.temporal.io/sdk/workflow"

// changeBaseline folds every workflow change made before it into one
// version marker. Each workflow.GetVersion records a marker and upserts the
// TemporalChangeVersion search attribute: two history events, two
// persistence writes and a visibility update per change id per run, about a
// quarter of a Component's histories (the Component's, its IdentityConfig's
// and its ExposedAPIs') before this change. A run that starts on this code
// records the baseline once and takes the new branch of every earlier
// change without asking for it. A run that started before it replays its
// first workflow task without the marker, gets DefaultVersion, and decides
// each earlier change through its own GetVersion exactly as before, so the
// histories recorded earlier (testdata/histories/*-v4-before-baseline.json
// and older) replay unchanged.
//
// A change made after the baseline gets its own GetVersion as usual.
const changeBaseline = "baseline-1"

type baselineKey struct{}

// withBaseline decides, once per run and as the run's first command, whether
// the run started on code that has every change of changeBaseline. Every
// workflow function calls it first and hands the returned context down.
func withBaseline(ctx workflow.Context) workflow.Context {
	on := workflow.GetVersion(ctx, changeBaseline, workflow.DefaultVersion, 1) >= 1
	return workflow.WithValue(ctx, baselineKey{}, on)
}

// versionOf is workflow.GetVersion(ctx, changeID, DefaultVersion, 1) for a
// change folded into the baseline: 1 without a marker when the run has the
// baseline, the recorded (or new) version otherwise.
func versionOf(ctx workflow.Context, changeID string) workflow.Version {
	if on, _ := ctx.Value(baselineKey{}).(bool); on {
		return 1
	}
	return workflow.GetVersion(ctx, changeID, workflow.DefaultVersion, 1)
}

// changed reports whether the run takes the new branch of a change folded
// into the baseline.
func changed(ctx workflow.Context, changeID string) bool {
	return versionOf(ctx, changeID) >= 1
}
