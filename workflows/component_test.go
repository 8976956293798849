package workflows

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/odaflow/odaflow/activities"
	"github.com/odaflow/odaflow/oda"
	"github.com/odaflow/odaflow/tests/fixtures"
)

const (
	testNS   = "components"
	testName = "ctk-productcatalogmanagement"
	testUID  = "uid-1"
)

// fakeKube records what the workflow asked of the apiserver.
type fakeKube struct {
	applies  []activities.ApplyChildrenInput
	statuses []activities.WriteStatusInput
	released []activities.RemoveFinalizersInput
	failNext int
	// writtenAt is the test clock's time of each status write.
	writtenAt []time.Time
	clock     func() time.Time
}

func (f *fakeKube) apply(_ context.Context, in activities.ApplyChildrenInput) (activities.ApplyChildrenResult, error) {
	if f.failNext > 0 {
		f.failNext--
		return activities.ApplyChildrenResult{}, temporal.NewNonRetryableApplicationError("apiserver said no", "Boom", errors.New("boom"))
	}
	f.applies = append(f.applies, in)
	var res activities.ApplyChildrenResult
	for _, c := range in.Children {
		res.Children = append(res.Children, activities.AppliedChild{Kind: c.Kind, Name: c.Name, UID: "uid-" + c.Name})
	}
	return res, nil
}

func (f *fakeKube) write(_ context.Context, in activities.WriteStatusInput) error {
	f.statuses = append(f.statuses, in)
	f.writtenAt = append(f.writtenAt, f.clock())
	return nil
}

func (f *fakeKube) lastPhase() string {
	if len(f.statuses) == 0 {
		return ""
	}
	s, _ := f.statuses[len(f.statuses)-1].Status["summary/status"].(map[string]any)
	phase, _ := s["deployment_status"].(string)
	return phase
}

func (f *fakeKube) phases() []string {
	var out []string
	for _, st := range f.statuses {
		s, _ := st.Status["summary/status"].(map[string]any)
		p, _ := s["deployment_status"].(string)
		if len(out) == 0 || out[len(out)-1] != p {
			out = append(out, p)
		}
	}
	return out
}

func newEnv(t *testing.T) (*testsuite.TestWorkflowEnvironment, *fakeKube) {
	t.Helper()
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	env.RegisterWorkflow(ComponentWorkflow)
	var kube *activities.Kube
	env.RegisterActivity(kube)
	f := &fakeKube{clock: env.Now}
	env.OnActivity(kube.ApplyChildren, mock.Anything, mock.Anything).Return(
		func(ctx context.Context, in activities.ApplyChildrenInput) (activities.ApplyChildrenResult, error) {
			return f.apply(ctx, in)
		})
	env.OnActivity(kube.WriteStatus, mock.Anything, mock.Anything).Return(
		func(ctx context.Context, in activities.WriteStatusInput) error { return f.write(ctx, in) })
	env.OnActivity(kube.RemoveFinalizers, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.RemoveFinalizersInput) error {
			f.released = append(f.released, in)
			return nil
		})
	return env, f
}

func event(spec map[string]any, hash string) ResourceEvent {
	return ResourceEvent{UID: testUID, Generation: 1, Hash: hash, Spec: spec,
		Labels: map[string]string{oda.LabelComponentName: testName}}
}

func productCatalogSpec() map[string]any {
	return fixtures.Spec(fixtures.WithoutDependentAPIs(fixtures.ProductCatalog(testNS, testName)))
}

// at schedules a signal at a point of simulated time.
func at(env *testsuite.TestWorkflowEnvironment, d time.Duration, signal string, arg any) {
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(signal, arg) }, d)
}

func exposedReady(name string) ChildStatus {
	return ChildStatus{Kind: oda.KindExposedAPI.Name, Name: name, UID: "uid-" + name, Ready: true, URL: "https://10.0.0.1/" + name}
}

var exposedNames = []string{
	"ctk-productcatalogmanagement-productcatalogmanagement-v4",
	"ctk-productcatalogmanagement-promotionmanagement-v4",
	"ctk-productcatalogmanagement-metrics",
	"ctk-productcatalogmanagement-partyrole-v4",
}

func TestComponentInstallReachesComplete(t *testing.T) {
	env, f := newEnv(t)
	at(env, time.Second, SignalResourceEvent, event(productCatalogSpec(), "h1"))
	for i, n := range exposedNames {
		at(env, time.Duration(2+i)*time.Second, SignalChildStatus, exposedReady(n))
	}
	at(env, 10*time.Second, SignalChildStatus, ChildStatus{Kind: oda.KindIdentityConfig.Name, Name: testName, UID: "uid-" + testName, IdentityProvider: "Keycloak"})
	at(env, 20*time.Second, SignalResourceEvent, ResourceEvent{UID: testUID, Deleted: true})
	env.ExecuteWorkflow(ComponentWorkflow, ComponentInput{Namespace: testNS, Name: testName})

	if err := env.GetWorkflowError(); err != nil {
		t.Fatalf("workflow error: %v", err)
	}
	if len(f.applies) != 1 {
		t.Fatalf("applies = %d, want 1", len(f.applies))
	}
	var names []string
	for _, c := range f.applies[0].Children {
		names = append(names, c.Kind+"/"+c.Name)
	}
	want := []string{
		"ExposedAPI/" + exposedNames[0], "ExposedAPI/" + exposedNames[1], "ExposedAPI/" + exposedNames[2],
		"ExposedAPI/" + exposedNames[3], "IdentityConfig/" + testName,
	}
	if fmt.Sprint(names) != fmt.Sprint(want) {
		t.Errorf("children = %v, want %v", names, want)
	}
	wantPhases := []string{oda.StatusCompCon, oda.StatusIDConfOp, oda.StatusComplete}
	if got := f.phases(); fmt.Sprint(got) != fmt.Sprint(wantPhases) {
		t.Errorf("phases = %v, want %v", got, wantPhases)
	}
	// Four ready signals in separate workflow tasks: one status write each at
	// most, never one per unchanged signal.
	if n := len(f.statuses); n > 7 {
		t.Errorf("status writes = %d, want at most 7", n)
	}
}

func TestComponentUpgradeRemovesAndAddsChildren(t *testing.T) {
	env, f := newEnv(t)
	at(env, time.Second, SignalResourceEvent, event(productCatalogSpec(), "h1"))
	upgraded := fixtures.Spec(fixtures.WithoutAPI(fixtures.WithoutDependentAPIs(fixtures.ProductCatalog(testNS, testName)), "promotionmanagement"))
	at(env, 5*time.Second, SignalResourceEvent, event(upgraded, "h2"))
	// The same desired state again (a status write echo): no new apply.
	at(env, 6*time.Second, SignalResourceEvent, event(upgraded, "h2"))
	back := productCatalogSpec()
	at(env, 10*time.Second, SignalResourceEvent, event(back, "h3"))
	at(env, 20*time.Second, SignalResourceEvent, ResourceEvent{UID: testUID, Deleted: true})
	env.ExecuteWorkflow(ComponentWorkflow, ComponentInput{Namespace: testNS, Name: testName})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatalf("workflow error: %v", err)
	}
	if len(f.applies) != 3 {
		t.Fatalf("applies = %d, want 3 (install, remove, add back)", len(f.applies))
	}
	if d := f.applies[1].Delete; len(d) != 1 || d[0].Name != exposedNames[1] {
		t.Errorf("upgrade deletes %v, want only %s", d, exposedNames[1])
	}
	if len(f.applies[1].Children) != 4 {
		t.Errorf("upgrade applies %d children, want 4", len(f.applies[1].Children))
	}
	if len(f.applies[2].Delete) != 0 || len(f.applies[2].Children) != 5 {
		t.Errorf("add back: %d children, %d deletes; want 5 and 0", len(f.applies[2].Children), len(f.applies[2].Delete))
	}
}

func TestComponentRoleChangeReachesIdentityConfigOnEveryUpgrade(t *testing.T) {
	env, f := newEnv(t)
	spec := productCatalogSpec()
	at(env, time.Second, SignalResourceEvent, event(spec, "h1"))
	changed := productCatalogSpec()
	changed["securityFunction"].(map[string]any)["canvasSystemRole"] = "Operator"
	at(env, 5*time.Second, SignalResourceEvent, event(changed, "h2"))
	at(env, 20*time.Second, SignalResourceEvent, ResourceEvent{UID: testUID, Deleted: true})
	env.ExecuteWorkflow(ComponentWorkflow, ComponentInput{Namespace: testNS, Name: testName})
	if len(f.applies) != 2 {
		t.Fatalf("applies = %d, want 2", len(f.applies))
	}
	var role any
	for _, c := range f.applies[1].Children {
		if c.Kind == oda.KindIdentityConfig.Name {
			role = c.Spec["canvasSystemRole"]
		}
	}
	if role != "Operator" {
		t.Errorf("IdentityConfig canvasSystemRole after upgrade = %v, want Operator", role)
	}
}

func TestComponentInvalidSpecFailsThenRecovers(t *testing.T) {
	env, f := newEnv(t)
	bad := productCatalogSpec()
	bad["coreFunction"].(map[string]any)["exposedAPIs"] = "not-a-list"
	at(env, time.Second, SignalResourceEvent, event(bad, "bad"))
	at(env, 5*time.Second, SignalResourceEvent, event(productCatalogSpec(), "good"))
	at(env, 20*time.Second, SignalResourceEvent, ResourceEvent{UID: testUID, Deleted: true})
	env.ExecuteWorkflow(ComponentWorkflow, ComponentInput{Namespace: testNS, Name: testName})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatalf("workflow error: %v", err)
	}
	if len(f.statuses) < 2 {
		t.Fatalf("status writes = %d, want at least 2", len(f.statuses))
	}
	first := f.statuses[0]
	s, _ := first.Status["summary/status"].(map[string]any)
	if s["deployment_status"] != oda.StatusFailed {
		t.Errorf("first phase = %v, want Failed", s["deployment_status"])
	}
	if first.Event == nil || first.Event.Type != "Warning" || first.Event.Reason != "InvalidSpec" {
		t.Errorf("first event = %+v, want a Warning InvalidSpec", first.Event)
	}
	conds, _ := first.Status["conditions"].([]any)
	c, _ := conds[0].(map[string]any)
	if c["status"] != "False" || c["reason"] != "InvalidSpec" {
		t.Errorf("condition = %v", c)
	}
	if msg, _ := c["message"].(string); msg == "" || !strings.Contains(msg, "spec.coreFunction.exposedAPIs") {
		t.Errorf("condition message %q does not name the field", msg)
	}
	if len(f.applies) != 1 {
		t.Errorf("applies = %d, want 1 (none for the invalid spec)", len(f.applies))
	}
	if got := f.lastPhase(); got != oda.StatusCompCon {
		t.Errorf("phase after the fix = %s, want %s", got, oda.StatusCompCon)
	}
}

func TestComponentApplyFailureRetriesByItself(t *testing.T) {
	env, f := newEnv(t)
	f.failNext = 1
	at(env, time.Second, SignalResourceEvent, event(productCatalogSpec(), "h1"))
	at(env, time.Hour, SignalResourceEvent, ResourceEvent{UID: testUID, Deleted: true})
	env.ExecuteWorkflow(ComponentWorkflow, ComponentInput{Namespace: testNS, Name: testName})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatalf("workflow error: %v", err)
	}
	phases := f.phases()
	if len(phases) < 2 || phases[0] != oda.StatusFailed || phases[len(phases)-1] != oda.StatusCompCon {
		t.Errorf("phases = %v, want Failed then %s", phases, oda.StatusCompCon)
	}
	if len(f.applies) != 1 {
		t.Errorf("successful applies = %d, want 1", len(f.applies))
	}
}

func TestComponentContinuesAsNewBeforeHistoryGrows(t *testing.T) {
	env, _ := newEnv(t)
	at(env, time.Second, SignalResourceEvent, event(productCatalogSpec(), "h1"))
	// The test environment does not count history; pretend it grew.
	env.RegisterDelayedCallback(func() { env.SetCurrentHistoryLength(31) }, 2*time.Second)
	at(env, 3*time.Second, SignalChildStatus, exposedReady(exposedNames[0]))
	env.ExecuteWorkflow(ComponentWorkflow, ComponentInput{Namespace: testNS, Name: testName, HistoryLimit: 30})
	var can *workflow.ContinueAsNewError
	if err := env.GetWorkflowError(); !errors.As(err, &can) {
		t.Fatalf("workflow error = %v, want continue-as-new", err)
	}
	var next ComponentInput
	if err := converterFor().FromPayloads(can.Input, &next); err != nil {
		t.Fatalf("decode continue-as-new input: %v", err)
	}
	if next.State == nil || next.State.Resource.UID != testUID || len(next.State.Children) != 5 || next.HistoryLimit != 30 {
		t.Errorf("carried state = %+v", next.State)
	}
}

func TestComponentNewUIDStartsANewLifecycle(t *testing.T) {
	env, _ := newEnv(t)
	at(env, time.Second, SignalResourceEvent, event(productCatalogSpec(), "h1"))
	reborn := event(productCatalogSpec(), "h1")
	reborn.UID = "uid-2"
	at(env, 5*time.Second, SignalResourceEvent, reborn)
	env.ExecuteWorkflow(ComponentWorkflow, ComponentInput{Namespace: testNS, Name: testName})
	var can *workflow.ContinueAsNewError
	if err := env.GetWorkflowError(); !errors.As(err, &can) {
		t.Fatalf("workflow error = %v, want continue-as-new", err)
	}
	var next ComponentInput
	if err := converterFor().FromPayloads(can.Input, &next); err != nil {
		t.Fatal(err)
	}
	if next.State != nil || next.Pending == nil || next.Pending.UID != "uid-2" {
		t.Errorf("new lifecycle input = %+v, want no state and the new uid pending", next)
	}
}

func TestComponentDeletionReleasesKopfFinalizer(t *testing.T) {
	env, f := newEnv(t)
	at(env, time.Second, SignalResourceEvent, event(productCatalogSpec(), "h1"))
	deleting := event(productCatalogSpec(), "h2")
	deleting.Deleting = true
	deleting.Finalizers = []string{oda.KopfFinalizer, "other.example/keep"}
	at(env, 5*time.Second, SignalResourceEvent, deleting)
	at(env, 10*time.Second, SignalResourceEvent, ResourceEvent{UID: testUID, Deleted: true})
	env.ExecuteWorkflow(ComponentWorkflow, ComponentInput{Namespace: testNS, Name: testName})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatalf("workflow error: %v", err)
	}
	// The Component's own finalizers (odaflow's and kopf's), then (once it
	// is gone) its IdentityConfig child's kopf finalizer, which no odaflow
	// workflow serves yet.
	want := []string{
		"Component/components/ctk-productcatalogmanagement uid-1 [" + oda.Finalizer + " " + oda.KopfFinalizer + "]",
		"IdentityConfig/components/ctk-productcatalogmanagement uid-ctk-productcatalogmanagement [" + oda.KopfFinalizer + "]",
	}
	var got []string
	for _, r := range f.released {
		got = append(got, fmt.Sprintf("%s %s %v", r.Ref, r.UID, r.Finalizers))
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("released %v, want %v", got, want)
	}
}

func converterFor() converter.DataConverter { return converter.GetDefaultDataConverter() }

// A path that takes the gateway's root fails the Component up front,
// before any child is applied, with an Event that says why.
func TestComponentRejectsAPathOnTheGatewayRoot(t *testing.T) {
	env, f := newEnv(t)
	spec := productCatalogSpec()
	spec["coreFunction"].(map[string]any)["exposedAPIs"].([]any)[0].(map[string]any)["path"] = "/"
	at(env, time.Second, SignalResourceEvent, event(spec, "root"))
	at(env, 20*time.Second, SignalResourceEvent, ResourceEvent{UID: testUID, Deleted: true})
	env.ExecuteWorkflow(ComponentWorkflow, ComponentInput{Namespace: testNS, Name: testName})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatalf("workflow error: %v", err)
	}
	if len(f.applies) != 0 || f.phases()[0] != oda.StatusFailed {
		t.Errorf("applies %d, phases %v; want none and Failed", len(f.applies), f.phases())
	}
	if !strings.Contains(f.statuses[0].Event.Message, "every path on the gateway") {
		t.Errorf("event %+v does not say why", f.statuses[0].Event)
	}
}

// installTimeline signals a productcatalog install: children applied at 1 s,
// every ExposedAPI ready at exposed, the IdentityConfig ready at identity.
func installTimeline(env *testsuite.TestWorkflowEnvironment, exposed, identity time.Duration) {
	at(env, time.Second, SignalResourceEvent, event(productCatalogSpec(), "h1"))
	for _, n := range exposedNames {
		at(env, exposed, SignalChildStatus, exposedReady(n))
	}
	at(env, identity, SignalChildStatus, ChildStatus{Kind: oda.KindIdentityConfig.Name, Name: testName, UID: "uid-" + testName, IdentityProvider: "Keycloak"})
	at(env, 30*time.Second, SignalResourceEvent, ResourceEvent{UID: testUID, Deleted: true})
}

// An install that is through its In-Progress phases within progressDelay
// writes its status once, Complete, with one Event; the timer that held
// the In-Progress write back is cancelled, not left to fire into a
// workflow task that writes nothing.
func TestComponentWritesNoShortInProgressPhase(t *testing.T) {
	env, f := newEnv(t)
	fired, cancelled := 0, 0
	env.SetOnTimerFiredListener(func(string) { fired++ })
	env.SetOnTimerCanceledListener(func(string) { cancelled++ })
	installTimeline(env, time.Second+progressDelay/4, time.Second+progressDelay/2)
	env.ExecuteWorkflow(ComponentWorkflow, ComponentInput{Namespace: testNS, Name: testName})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatalf("workflow error: %v", err)
	}
	want := []string{oda.StatusComplete}
	if got := f.phases(); fmt.Sprint(got) != fmt.Sprint(want) || len(f.statuses) != 1 {
		t.Errorf("phases = %v in %d writes, want %v in one", got, len(f.statuses), want)
	}
	for i, st := range f.statuses {
		if st.Event == nil || st.Event.Reason != "DeploymentStatus" {
			t.Errorf("write %d event = %+v, want a DeploymentStatus Event", i, st.Event)
		}
	}
	if fired != 0 || cancelled != 1 {
		t.Errorf("progress timer fired %d, cancelled %d; want 0 and 1", fired, cancelled)
	}
}

// A phase that lasts longer than progressDelay is written when the delay is
// over, and each later phase once; nothing is written for a phase twice.
func TestComponentWritesALongInProgressPhaseAfterTheDelay(t *testing.T) {
	env, f := newEnv(t)
	start := env.Now()
	installTimeline(env, 5*time.Second, 10*time.Second)
	env.ExecuteWorkflow(ComponentWorkflow, ComponentInput{Namespace: testNS, Name: testName})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatalf("workflow error: %v", err)
	}
	want := []string{oda.StatusCompCon, oda.StatusIDConfOp, oda.StatusComplete}
	if got := f.phases(); fmt.Sprint(got) != fmt.Sprint(want) || len(f.statuses) != len(want) {
		t.Fatalf("phases = %v in %d writes, want %v, one write each", got, len(f.statuses), want)
	}
	// CompCon a delay after the apply, IDConfOp a delay after the APIs,
	// Complete at once.
	wantAt := []time.Duration{time.Second + progressDelay, 5*time.Second + progressDelay, 10 * time.Second}
	for i := range wantAt {
		if got := f.writtenAt[i].Sub(start); got != wantAt[i] {
			t.Errorf("write %d (%s) at %s, want %s", i, want[i], got, wantAt[i])
		}
	}
}

// The children whose workflows clean up outside the cluster are created
// with odaflow's finalizer; the others without.
func TestComponentCreatesCleanupChildrenWithTheFinalizer(t *testing.T) {
	env, f := newEnv(t)
	installTimeline(env, 5*time.Second, 10*time.Second)
	env.ExecuteWorkflow(ComponentWorkflow, ComponentInput{Namespace: testNS, Name: testName})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatalf("workflow error: %v", err)
	}
	for _, c := range f.applies[0].Children {
		want := []string(nil)
		if c.Kind == oda.KindIdentityConfig.Name {
			want = []string{oda.Finalizer}
		}
		if fmt.Sprint(c.Finalizers) != fmt.Sprint(want) {
			t.Errorf("%s/%s finalizers %v, want %v", c.Kind, c.Name, c.Finalizers, want)
		}
	}
}

// Once an In-Progress phase is written, children that only add their urls
// to it are written refreshDelay later, together; a new phase still goes
// out progressDelay after it began, taking the pending entries with it.
func TestComponentRefreshesAWrittenPhaseLessOften(t *testing.T) {
	type write struct {
		at    time.Duration
		phase string
	}
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	for _, tc := range []struct {
		name      string
		ready     []time.Duration // each ExposedAPI's, in exposedNames order
		identity  time.Duration
		wantWrite []write
	}{
		{
			name:  "refresh written after refreshDelay",
			ready: []time.Duration{ms(3000), ms(4500), ms(5200), ms(10000)}, identity: ms(10500),
			wantWrite: []write{{ms(2000), oda.StatusCompCon}, {ms(8000), oda.StatusCompCon}, {ms(10500), oda.StatusComplete}},
		},
		{
			name:  "a new phase does not wait for the refresh",
			ready: []time.Duration{ms(3000), ms(4500), ms(5200), ms(6000)}, identity: ms(9000),
			wantWrite: []write{{ms(2000), oda.StatusCompCon}, {ms(7000), oda.StatusIDConfOp}, {ms(9000), oda.StatusComplete}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env, f := newEnv(t)
			start := env.Now()
			at(env, time.Second, SignalResourceEvent, event(productCatalogSpec(), "h1"))
			for i, n := range exposedNames {
				at(env, tc.ready[i], SignalChildStatus, exposedReady(n))
			}
			at(env, tc.identity, SignalChildStatus, ChildStatus{Kind: oda.KindIdentityConfig.Name, Name: testName, UID: "uid-" + testName, IdentityProvider: "Keycloak"})
			at(env, 30*time.Second, SignalResourceEvent, ResourceEvent{UID: testUID, Deleted: true})
			env.ExecuteWorkflow(ComponentWorkflow, ComponentInput{Namespace: testNS, Name: testName})
			if err := env.GetWorkflowError(); err != nil {
				t.Fatalf("workflow error: %v", err)
			}
			var got []write
			for i, st := range f.statuses {
				s, _ := st.Status["summary/status"].(map[string]any)
				p, _ := s["deployment_status"].(string)
				got = append(got, write{f.writtenAt[i].Sub(start), p})
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.wantWrite) {
				t.Errorf("writes = %v, want %v", got, tc.wantWrite)
			}
		})
	}
}

func TestProgressDeferral(t *testing.T) {
	normal := &activities.Event{Type: "Normal", Reason: "ChildrenApplied"}
	warning := &activities.Event{Type: "Warning", Reason: "ApplyFailed"}
	for _, tc := range []struct {
		name               string
		fired, dirty, held bool
		event              *activities.Event
		phase, written     string
		want               time.Duration
		wantDefer          bool
	}{
		{"nothing new", false, false, false, nil, oda.StatusCompCon, oda.StatusCompCon, 0, false},
		{"the timer fired", true, true, false, nil, oda.StatusCompCon, "", 0, false},
		{"a Warning goes at once", false, true, false, warning, oda.StatusCompCon, "", 0, false},
		{"a phase out of progress goes at once", false, true, false, nil, oda.StatusComplete, oda.StatusCompCon, 0, false},
		{"a new In-Progress phase waits", false, true, false, nil, oda.StatusIDConfOp, oda.StatusCompCon, progressDelay, true},
		{"the first phase waits with its Event", false, false, false, normal, oda.StatusCompCon, "", progressDelay, true},
		{"a refresh of the written phase", false, true, false, nil, oda.StatusCompCon, oda.StatusCompCon, refreshDelay, true},
		{"a refresh with an Event held back", false, true, true, nil, oda.StatusCompCon, oda.StatusCompCon, progressDelay, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, ok := progressDeferral(tc.fired, tc.dirty, tc.event, tc.phase, tc.written, tc.held)
			if d != tc.want || ok != tc.wantDefer {
				t.Errorf("progressDeferral = %s, %v; want %s, %v", d, ok, tc.want, tc.wantDefer)
			}
		})
	}
}

func TestDeploymentEvent(t *testing.T) {
	failure := &oda.Failure{Reason: "InvalidSpec", Message: "spec.x is wrong"}
	applied := &activities.Event{Type: "Normal", Reason: "ChildrenApplied"}
	rejected := &activities.Event{Type: "Warning", Reason: "ChildRejected", Message: "no"}
	for _, tc := range []struct {
		name           string
		written, phase string
		failure        *oda.Failure
		event          *activities.Event
		want           string
	}{
		{"same phase, no Event", oda.StatusCompCon, oda.StatusCompCon, nil, nil, ""},
		{"same phase keeps its Event", oda.StatusCompCon, oda.StatusCompCon, nil, applied, "Normal ChildrenApplied"},
		{"a new phase is told", oda.StatusCompCon, oda.StatusComplete, nil, nil, "Normal DeploymentStatus deployment_status is now Complete"},
		{"a new phase replaces a Normal Event", "", oda.StatusCompCon, nil, applied, "Normal DeploymentStatus deployment_status is now In-Progress-CompCon"},
		{"Failed says why", "", oda.StatusFailed, failure, nil, "Warning DeploymentStatus deployment_status is now Failed: spec.x is wrong"},
		{"a Warning stays", oda.StatusCompCon, oda.StatusFailed, failure, rejected, "Warning ChildRejected no"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := deploymentEvent(tc.written, tc.phase, tc.failure, tc.event)
			got := ""
			if ev != nil {
				got = strings.TrimSpace(ev.Type + " " + ev.Reason + " " + ev.Message)
			}
			if got != tc.want {
				t.Errorf("event = %q, want %q", got, tc.want)
			}
		})
	}
}
