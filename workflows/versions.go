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
// The baseline has levels. Level 1 is every change up to session 7's; a
// later batch of changes raises the newest level (baselineLevel) instead of
// adding change ids, because GetVersion records whatever maximum the code
// supports when the run first meets it: a run started on code with level 2
// records 2 and takes every level-2 change; a run recorded at level 1 (or
// without the marker) keeps the older behaviour for the rest of that run and
// takes the new one when it continues as new. Each level's changes are
// listed at its constant.
const changeBaseline = "baseline-1"

// Baseline levels.
const (
	// baselineFolded folds every change id named in this package before it
	// (changeLocalKube, changeSettle, ... changeCancelSettle).
	baselineFolded workflow.Version = 1
	// baselineQuietProgress: a Component creates the children whose
	// workflows clean up outside the cluster (IdentityConfig,
	// SecretsManagement) with odaflow's finalizer already on, so their
	// workflows need no separate request to add it; a Component's
	// In-Progress phase is written only once it has lasted progressDelay;
	// and a resource owned by a Component records no Normal Event for
	// reaching its first phase (its Component's DeploymentStatus Event
	// says so).
	baselineQuietProgress workflow.Version = 2
	// baselineQuietRefresh: once a Component's In-Progress phase is
	// written, a change that only refreshes its child entries is written
	// refreshDelay later (with whatever else changed meanwhile), not
	// progressDelay; a new phase still waits only progressDelay.
	baselineQuietRefresh workflow.Version = 3
)

// baselineLevel is the level a run started on this code records.
const baselineLevel = baselineQuietRefresh

type baselineKey struct{}

// withBaseline decides, once per run and as the run's first command, which
// baseline level the run has. Every workflow function calls it first and
// hands the returned context down.
func withBaseline(ctx workflow.Context) workflow.Context {
	level := workflow.GetVersion(ctx, changeBaseline, workflow.DefaultVersion, baselineLevel)
	return workflow.WithValue(ctx, baselineKey{}, level)
}

// baselineOf is the run's baseline level (DefaultVersion without one).
func baselineOf(ctx workflow.Context) workflow.Version {
	level, ok := ctx.Value(baselineKey{}).(workflow.Version)
	if !ok {
		return workflow.DefaultVersion
	}
	return level
}

// atBaseline reports whether the run has at least the given baseline level.
func atBaseline(ctx workflow.Context, level workflow.Version) bool {
	return baselineOf(ctx) >= level
}

// versionOf is workflow.GetVersion(ctx, changeID, DefaultVersion, 1) for a
// change folded into the baseline: 1 without a marker when the run has the
// baseline, the recorded (or new) version otherwise.
func versionOf(ctx workflow.Context, changeID string) workflow.Version {
	if atBaseline(ctx, baselineFolded) {
		return 1
	}
	return workflow.GetVersion(ctx, changeID, workflow.DefaultVersion, 1)
}

// changed reports whether the run takes the new branch of a change folded
// into the baseline.
func changed(ctx workflow.Context, changeID string) bool {
	return versionOf(ctx, changeID) >= 1
}
