package workflows

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/odaflow/odaflow/activities"
	"github.com/odaflow/odaflow/listener/hubtest"
	"github.com/odaflow/odaflow/oda"
)

// fakeKeycloak stands in for the Identity activities: failWith, when set,
// is returned instead of doing the work.
type fakeKeycloak struct {
	ensures   []activities.EnsureIdentityInput
	creds     []activities.EnsureCredentialsInput
	deletes   int
	statuses  []activities.WriteStatusInput
	removed   []activities.RemoveFinalizersInput
	failWith  func() error
	driftNext bool
	// rotatedFor is the rotate-credentials value already handled.
	rotatedFor string
	// hub is a TMF hub double the real RegisterHub and UnregisterHub
	// activities talk to; roleEvents are the ApplyRoleEvent calls, and
	// roleFail, when set, fails them.
	hub *hubtest.Hub
	// identity holds the real hub activities.
	identity   *activities.Identity
	roleEvents []activities.ApplyRoleEventInput
	roleFail   func() error
	// hubsAtDelete is how many subscriptions the hub held when the client
	// was deleted.
	hubsAtDelete []int
}

func (f *fakeKeycloak) events() []string {
	var out []string
	for _, s := range f.statuses {
		if s.Event != nil {
			out = append(out, s.Event.Reason)
		}
	}
	return out
}

func (f *fakeKeycloak) lastStatus() map[string]any {
	for i := len(f.statuses) - 1; i >= 0; i-- {
		if len(f.statuses[i].Status) > 0 {
			return f.statuses[i].Status
		}
	}
	return nil
}

func newIdentityEnv(t *testing.T) (*testsuite.TestWorkflowEnvironment, *fakeKeycloak) {
	t.Helper()
	hub := hubtest.New()
	t.Cleanup(hub.Close)
	return newIdentityEnvWithHub(t, hub)
}

// newIdentityEnvWithHub shares a hub double between runs (Continue-As-New).
func newIdentityEnvWithHub(t *testing.T, hub *hubtest.Hub) (*testsuite.TestWorkflowEnvironment, *fakeKeycloak) {
	t.Helper()
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	env.RegisterWorkflow(IdentityConfigWorkflow)
	f := &fakeKeycloak{hub: hub}
	// The hub activities are real, against the hub double; the Keycloak
	// ones are mocked below.
	id := &activities.Identity{Hub: activities.HubConfig{
		ListenerBaseURL: "http://odaflow-worker.canvas.svc.cluster.local:8080",
		Keys:            func() ([][]byte, error) { return [][]byte{[]byte("workflow-test-listener-key-0123456789")}, nil },
		HTTP:            f.hub.Client(),
	}}
	f.identity = id
	var kube *activities.Kube
	env.RegisterActivity(id)
	env.RegisterActivity(kube)
	env.OnActivity(id.EnsureIdentity, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.EnsureIdentityInput) (activities.EnsureIdentityResult, error) {
			f.ensures = append(f.ensures, in)
			if f.failWith != nil {
				return activities.EnsureIdentityResult{}, f.failWith()
			}
			res := activities.EnsureIdentityResult{ClientUUID: "client-uuid"}
			if f.driftNext {
				f.driftNext = false
				res.RolesCreated = []string{"pcadmin"}
			}
			return res, nil
		})
	env.OnActivity(id.EnsureCredentials, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.EnsureCredentialsInput) (activities.EnsureCredentialsResult, error) {
			f.creds = append(f.creds, in)
			// Like the real activity (which records it on the Secret),
			// each annotation value rotates once.
			rotated := in.Rotate != "" && in.Rotate != f.rotatedFor
			f.rotatedFor = in.Rotate
			return activities.EnsureCredentialsResult{SecretName: in.Ref.Name + "-secret", Rotated: rotated, Written: rotated}, nil
		})
	env.OnActivity(id.DeleteIdentity, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.DeleteIdentityInput) (activities.DeleteIdentityResult, error) {
			f.deletes++
			f.hubsAtDelete = append(f.hubsAtDelete, len(f.hub.Subscriptions()))
			if f.failWith != nil {
				return activities.DeleteIdentityResult{}, f.failWith()
			}
			return activities.DeleteIdentityResult{ClientDeleted: true}, nil
		})
	env.OnActivity(id.ApplyRoleEvent, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.ApplyRoleEventInput) (activities.ApplyRoleEventResult, error) {
			f.roleEvents = append(f.roleEvents, in)
			if f.roleFail != nil {
				if err := f.roleFail(); err != nil {
					return activities.ApplyRoleEventResult{}, err
				}
			}
			return activities.ApplyRoleEventResult{Changed: true}, nil
		})
	env.OnActivity(kube.WriteStatus, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.WriteStatusInput) error {
			f.statuses = append(f.statuses, in)
			return nil
		})
	env.OnActivity(kube.EnsureFinalizer, mock.Anything, mock.Anything).Return(nil)
	env.OnActivity(kube.RemoveFinalizers, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.RemoveFinalizersInput) error {
			f.removed = append(f.removed, in)
			return nil
		})
	return env, f
}

func icSpec(roles ...string) map[string]any {
	spec := map[string]any{"canvasSystemRole": "Admin"}
	var list []any
	for _, r := range roles {
		list = append(list, map[string]any{"name": r})
	}
	if list != nil {
		spec["componentRole"] = list
	}
	return spec
}

func icEvent(hash string, spec map[string]any) ResourceEvent {
	return ResourceEvent{UID: "ic-uid", Hash: hash, Spec: spec, Finalizers: []string{oda.Finalizer}}
}

func icDeleting(hash string, annotations map[string]string) ResourceEvent {
	ev := icEvent(hash, icSpec())
	ev.Deleting, ev.Annotations = true, annotations
	return ev
}

const icName = "ctk-productcatalogmanagement"

func runIdentity(env *testsuite.TestWorkflowEnvironment, interval time.Duration) {
	env.ExecuteWorkflow(IdentityConfigWorkflow, IdentityConfigInput{Namespace: testNS, Name: icName, CheckInterval: interval})
}

func TestIdentityConfigInstallAndRoleChange(t *testing.T) {
	env, f := newIdentityEnv(t)
	at(env, time.Second, SignalResourceEvent, icEvent("h1", icSpec("cat1owner", "cat2owner")))
	at(env, time.Minute, SignalResourceEvent, icEvent("h2", icSpec("cat1owner")))
	at(env, 2*time.Minute, SignalResourceEvent, ResourceEvent{UID: "ic-uid", Deleted: true})
	runIdentity(env, time.Hour)
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if len(f.ensures) != 2 {
		t.Fatalf("EnsureIdentity calls = %d", len(f.ensures))
	}
	first, second := f.ensures[0], f.ensures[1]
	if first.Desired.ClientID != icName || len(first.Desired.Roles) != 3 || first.PreviousRoles != nil {
		t.Errorf("install input = %+v", first)
	}
	if len(second.Desired.Roles) != 2 || strings.Join(second.PreviousRoles, ",") != "Admin,cat1owner,cat2owner" {
		t.Errorf("upgrade input = %+v: the removed role must be known", second)
	}
	st := f.lastStatus()
	ic, _ := st["identityConfig"].(map[string]any)
	impl, _ := st["implementation"].(map[string]any)
	if ic["identityProvider"] != "Keycloak" || ic["listenerRegistered"] != false || impl["ready"] != true {
		t.Errorf("status = %+v", st)
	}
	// The Component reads this status exactly so.
	cs := ChildStatusFromObject(oda.KindIdentityConfig.Name, icName, "ic-uid", st)
	if cs.IdentityProvider != "Keycloak" || !cs.Ready {
		t.Errorf("component view = %+v", cs)
	}
	if got := strings.Join(f.events(), ","); got != "Ready" {
		t.Errorf("events = %s, want one Ready (no event for an upgrade that stays Ready)", got)
	}
	if f.statuses[len(f.statuses)-1].ObservedHash != "h2" {
		t.Errorf("observed hash = %q", f.statuses[len(f.statuses)-1].ObservedHash)
	}
}

func TestIdentityConfigKeycloakDownThenBack(t *testing.T) {
	env, f := newIdentityEnv(t)
	down := true
	f.failWith = func() error {
		if down {
			return temporal.NewApplicationError("Keycloak at http://kc: unreachable", activities.ErrTypeKeycloakUnavailable)
		}
		return nil
	}
	at(env, time.Second, SignalResourceEvent, icEvent("h1", icSpec()))
	env.RegisterDelayedCallback(func() { down = false }, 2*time.Minute)
	at(env, time.Hour, SignalResourceEvent, ResourceEvent{UID: "ic-uid", Deleted: true})
	runIdentity(env, 2*time.Hour)
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	// The activity retries 4 times (2, 4, 8 s apart) from 1 s, fails; the
	// workflow's 1 min backoff brings 4 more that fail; after the 2 min
	// backoff (about 3.5 min in) Keycloak is back: 9 activity attempts.
	if len(f.ensures) != 9 {
		t.Fatalf("attempts = %d, want 9", len(f.ensures))
	}
	if got := strings.Join(f.events(), ","); got != "KeycloakUnavailable,Ready" {
		t.Errorf("events = %s", got)
	}
	if impl, _ := f.lastStatus()["implementation"].(map[string]any); impl["ready"] != true {
		t.Errorf("not ready after recovery: %+v", f.lastStatus())
	}
}

func TestIdentityConfigWrongCredentialsFailsWithoutRetryStorm(t *testing.T) {
	env, f := newIdentityEnv(t)
	f.failWith = func() error {
		return temporal.NewNonRetryableApplicationError("Keycloak refused the admin credentials in Secret canvas/keycloak-admin", activities.ErrTypeKeycloakUnauthorized, nil)
	}
	at(env, time.Second, SignalResourceEvent, icEvent("h1", icSpec()))
	at(env, 30*time.Minute, SignalResourceEvent, ResourceEvent{UID: "ic-uid", Deleted: true})
	runIdentity(env, time.Hour)
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	// Attempts at 1 s, then after backoffs of 1, 2, 4, 8 and 10 min: six
	// in 30 minutes, one activity attempt each (non-retryable).
	if n := len(f.ensures); n != 6 {
		t.Fatalf("attempts in 30 min = %d", n)
	}
	st := f.lastStatus()
	conds, _ := st["conditions"].([]any)
	c, _ := conds[0].(map[string]any)
	if c["reason"] != activities.ErrTypeKeycloakUnauthorized || c["status"] != "False" {
		t.Errorf("condition = %+v", c)
	}
	if _, has := st["identityConfig"]; has {
		t.Errorf("a failed identity claims a provider: %+v", st)
	}
	if got := strings.Join(f.events(), ","); got != "KeycloakUnauthorized" {
		t.Errorf("events = %s, want one warning, not one per attempt", got)
	}
}

func TestIdentityConfigDriftRepairedOnTimerAndRotation(t *testing.T) {
	env, f := newIdentityEnv(t)
	at(env, time.Second, SignalResourceEvent, icEvent("h1", icSpec("pcadmin")))
	env.RegisterDelayedCallback(func() { f.driftNext = true }, 5*time.Minute)
	rot := icEvent("h2", icSpec("pcadmin"))
	rot.Annotations = map[string]string{oda.AnnotationRotateCredentials: "1"}
	at(env, 25*time.Minute, SignalResourceEvent, rot)
	at(env, 35*time.Minute, SignalResourceEvent, ResourceEvent{UID: "ic-uid", Deleted: true})
	runIdentity(env, 10*time.Minute)
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	// Install at 1 s, checks at ~10 and ~20 min, the rotation at 25 min,
	// and the check at ~30 min.
	if len(f.ensures) != 5 {
		t.Fatalf("EnsureIdentity calls = %d, want 5", len(f.ensures))
	}
	if got := strings.Join(f.events(), ","); got != "Ready,DriftRepaired,CredentialsRotated" {
		t.Errorf("events = %s", got)
	}
	var statusWrites int
	for _, s := range f.statuses {
		if s.Event == nil || s.Event.Reason == "Ready" {
			statusWrites++
		}
	}
	if statusWrites != 2 {
		t.Errorf("status writes = %d, want 2 (install, rotation hash): drift checks that find nothing write nothing", statusWrites)
	}
	if f.creds[3].Rotate != "1" {
		t.Errorf("rotation not passed on: %+v", f.creds[3])
	}
}

func TestIdentityConfigDeletionBlockedThenSkipped(t *testing.T) {
	env, f := newIdentityEnv(t)
	at(env, time.Second, SignalResourceEvent, icEvent("h1", icSpec()))
	env.RegisterDelayedCallback(func() {
		f.failWith = func() error {
			return temporal.NewApplicationError("Keycloak at http://kc: unreachable", activities.ErrTypeKeycloakUnavailable)
		}
	}, time.Minute)
	at(env, 2*time.Minute, SignalResourceEvent, icDeleting("h2", nil))
	at(env, 3*time.Hour, SignalResourceEvent, icDeleting("h3", map[string]string{oda.AnnotationSkipCleanup: "true"}))
	at(env, 4*time.Hour, SignalResourceEvent, ResourceEvent{UID: "ic-uid", Deleted: true})
	runIdentity(env, time.Hour)
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	evs := f.events()
	if !containsString(evs, "CleanupBlocked") || evs[len(evs)-1] != "CleanupSkipped" {
		t.Fatalf("events = %v", evs)
	}
	if f.deletes < maxCleanupFailures {
		t.Errorf("delete attempts = %d, want at least %d before CleanupBlocked", f.deletes, maxCleanupFailures)
	}
	if len(f.removed) != 1 || !containsString(f.removed[0].Finalizers, oda.Finalizer) {
		t.Fatalf("finalizers released: %+v", f.removed)
	}
}

func TestIdentityConfigDeletionCleansUp(t *testing.T) {
	env, f := newIdentityEnv(t)
	at(env, time.Second, SignalResourceEvent, icEvent("h1", icSpec()))
	at(env, time.Minute, SignalResourceEvent, icDeleting("h2", nil))
	at(env, 2*time.Minute, SignalResourceEvent, ResourceEvent{UID: "ic-uid", Deleted: true})
	runIdentity(env, time.Hour)
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if f.deletes != 1 || len(f.removed) != 1 {
		t.Fatalf("deletes %d, finalizer removals %d", f.deletes, len(f.removed))
	}
}

func TestIdentityConfigContinuesAsNew(t *testing.T) {
	env, _ := newIdentityEnv(t)
	// The test environment does not count history; pretend it grew.
	env.RegisterDelayedCallback(func() { env.SetCurrentHistoryLength(31) }, 500*time.Millisecond)
	at(env, time.Second, SignalResourceEvent, icEvent("h1", icSpec()))
	env.ExecuteWorkflow(IdentityConfigWorkflow, IdentityConfigInput{Namespace: testNS, Name: icName, HistoryLimit: 30, CheckInterval: time.Hour})
	var can *workflow.ContinueAsNewError
	if err := env.GetWorkflowError(); !errors.As(err, &can) {
		t.Fatalf("workflow error = %v, want continue-as-new", err)
	}
	var in IdentityConfigInput
	if err := converterFor().FromPayloads(can.Input, &in); err != nil {
		t.Fatal(err)
	}
	if in.State == nil || in.State.Resource.Phase != PhaseIdentityReady || in.State.Resource.DoneHash != "h1" ||
		in.CheckInterval != time.Hour || in.HistoryLimit != 30 || strings.Join(in.State.Roles, ",") != "Admin" {
		t.Errorf("carried input = %+v", in)
	}
}

// An IdentityConfig that belongs to a Component records no Event for its
// first Ready (its Component's DeploymentStatus Event says so); a failure
// and the recovery from it still do. One made by hand records all three.
func TestIdentityConfigOfAComponentIsQuietOnItsFirstReady(t *testing.T) {
	for _, tc := range []struct {
		name  string
		owned bool
		want  string
	}{
		{"owned by a Component", true, "KeycloakUnavailable,Ready"},
		{"made by hand", false, "Ready,KeycloakUnavailable,Ready"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env, f := newIdentityEnv(t)
			down := false
			f.failWith = func() error {
				if down {
					return temporal.NewNonRetryableApplicationError("Keycloak at http://kc: unreachable", activities.ErrTypeKeycloakUnavailable, nil)
				}
				return nil
			}
			owned := func(hash string, roles ...string) ResourceEvent {
				ev := icEvent(hash, icSpec(roles...))
				if tc.owned {
					ev.Labels = map[string]string{oda.LabelComponentName: testName}
				}
				return ev
			}
			at(env, time.Second, SignalResourceEvent, owned("h1", "cat1owner"))
			env.RegisterDelayedCallback(func() { down = true }, time.Minute)
			at(env, time.Minute+time.Second, SignalResourceEvent, owned("h2", "cat2owner"))
			env.RegisterDelayedCallback(func() { down = false }, 2*time.Minute)
			at(env, time.Hour, SignalResourceEvent, ResourceEvent{UID: "ic-uid", Deleted: true})
			runIdentity(env, 2*time.Hour)
			if err := env.GetWorkflowError(); err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(f.events(), ","); got != tc.want {
				t.Errorf("events = %s, want %s", got, tc.want)
			}
		})
	}
}
