package workflows

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/odaflow/odaflow/activities"
	"github.com/odaflow/odaflow/identity"
	"github.com/odaflow/odaflow/oda"
)

// icHubSpec is an IdentityConfig naming both hub APIs, as the Component
// workflow writes it for productcatalog-dynamic-roles (BDD UC005-F002).
func icHubSpec(roles ...string) map[string]any {
	spec := icSpec(roles...)
	spec["partyRoleAPI"] = map[string]any{"implementation": "dyn-partyroleapi", "path": "/dyn-pc/tmf-api/partyRoleManagement/v4", "port": float64(8080)}
	spec["permissionSpecificationSetAPI"] = map[string]any{"implementation": "dyn-permissionspec", "path": "/dyn-pc/rolesAndPermissionsManagement/v5", "port": float64(8080)}
	return spec
}

func listenerRegistered(st map[string]any) any {
	ic, _ := st["identityConfig"].(map[string]any)
	return ic["listenerRegistered"]
}

func roleEvent(action identity.RoleAction, name string) identity.RoleEvent {
	return identity.RoleEvent{Component: icName, API: identity.APIPermissionSpecificationSet, Action: action,
		Role: identity.Role{Name: name}, EventType: "PermissionSpecificationSet" + map[identity.RoleAction]string{identity.RoleAdd: "CreationNotification", identity.RoleRemove: "RemoveNotification"}[action]}
}

func TestIdentityConfigRegistersHubsOnceAcrossUpdatesAndContinueAsNew(t *testing.T) {
	env, f := newIdentityEnv(t)
	hubCalls := 0
	env.OnActivity(f.identity.RegisterHub, mock.Anything, mock.Anything).Return(
		func(ctx context.Context, in activities.RegisterHubInput) (activities.RegisterHubResult, error) {
			res, err := f.identity.RegisterHub(ctx, in)
			if err == nil {
				hubCalls++
			}
			return res, err
		})
	at(env, time.Second, SignalResourceEvent, icEvent("h1", icHubSpec()))
	at(env, time.Minute, SignalResourceEvent, icEvent("h2", icHubSpec("cat1owner")))
	// Drift checks at ~10 and ~20 min; then the history is "long".
	env.RegisterDelayedCallback(func() { env.SetCurrentHistoryLength(1000) }, 25*time.Minute)
	at(env, 26*time.Minute, SignalResourceEvent, icEvent("h3", icHubSpec("cat2owner")))
	env.ExecuteWorkflow(IdentityConfigWorkflow, IdentityConfigInput{Namespace: testNS, Name: icName, HistoryLimit: 500, CheckInterval: 10 * time.Minute})
	var can *workflow.ContinueAsNewError
	if err := env.GetWorkflowError(); !errors.As(err, &can) {
		t.Fatalf("workflow error = %v, want continue-as-new", err)
	}
	if n := f.hub.Registrations(); n != 2 {
		t.Fatalf("hub registrations after install, update and two drift checks = %d, want 2 (one per API)", n)
	}
	// Install (2), then each drift check hands the record to the activity
	// (2 at ~10 and 2 at ~20 min), which finds it current; updates do not
	// call it at all.
	if hubCalls != 6 {
		t.Errorf("RegisterHub activities = %d, want 6", hubCalls)
	}
	subs := f.hub.Subscriptions()
	if len(subs) != 2 || !strings.Contains(subs[0].Path, "partyRoleManagement") || subs[1].Type != "Hub" ||
		!strings.HasPrefix(subs[0].Callback, "http://odaflow-worker.canvas.svc.cluster.local:8080/listener/components/"+icName+"?token=") {
		t.Fatalf("hub holds %+v", subs)
	}
	if listenerRegistered(f.lastStatus()) != true {
		t.Errorf("status = %+v", f.lastStatus())
	}
	if got := strings.Join(f.events(), ","); got != "HubRegistered,HubRegistered,Ready" {
		t.Errorf("events = %s", got)
	}
	var in IdentityConfigInput
	if err := converterFor().FromPayloads(can.Input, &in); err != nil {
		t.Fatal(err)
	}
	if in.State == nil || len(in.State.Hubs) != 2 || in.State.Hubs[0].ID == "" {
		t.Fatalf("carried state = %+v", in.State)
	}
	for _, h := range in.State.Hubs {
		if strings.Contains(h.Callback, "token") {
			t.Errorf("the token reached the workflow state: %+v", h)
		}
	}

	// The next run: more updates and drift checks, still no registration.
	env2, _ := newIdentityEnvWithHub(t, f.hub)
	at(env2, time.Second, SignalResourceEvent, icEvent("h4", icHubSpec("cat1owner", "cat2owner")))
	at(env2, 15*time.Minute, SignalResourceEvent, icEvent("h5", icHubSpec()))
	at(env2, 31*time.Minute, SignalResourceEvent, ResourceEventDeleted())
	env2.ExecuteWorkflow(IdentityConfigWorkflow, in)
	if err := env2.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if n := f.hub.Registrations(); n != 2 {
		t.Errorf("registrations after Continue-As-New = %d, want still 2", n)
	}
}

// ResourceEventDeleted is the watcher's signal for the object gone.
func ResourceEventDeleted() ResourceEvent { return ResourceEvent{UID: "ic-uid", Deleted: true} }

func TestIdentityConfigRoleEventsBySignal(t *testing.T) {
	env, f := newIdentityEnv(t)
	// An event before the identity exists waits for it.
	at(env, 500*time.Millisecond, identity.SignalRoleEvent, roleEvent(identity.RoleAdd, "Early"))
	at(env, time.Second, SignalResourceEvent, icEvent("h1", icHubSpec("pcadmin")))
	at(env, 2*time.Minute, identity.SignalRoleEvent, roleEvent(identity.RoleAdd, "DynamicRole1"))
	at(env, 3*time.Minute, identity.SignalRoleEvent, roleEvent(identity.RoleRemove, "DynamicRole1"))
	// The spec's roles are out of the listener's reach.
	at(env, 4*time.Minute, identity.SignalRoleEvent, roleEvent(identity.RoleRemove, "pcadmin"))
	// Keycloak down: the event waits, the status says why, then it applies.
	env.RegisterDelayedCallback(func() {
		f.roleFail = func() error {
			return temporal.NewApplicationError("Keycloak at http://kc: unreachable", activities.ErrTypeKeycloakUnavailable)
		}
	}, 5*time.Minute)
	at(env, 6*time.Minute, identity.SignalRoleEvent, roleEvent(identity.RoleAdd, "DynamicRole2"))
	env.RegisterDelayedCallback(func() { f.roleFail = nil }, 7*time.Minute)
	at(env, 20*time.Minute, SignalResourceEvent, ResourceEventDeleted())
	runIdentity(env, time.Hour)
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	var applied []string
	for _, in := range f.roleEvents {
		if in.ClientID != icName {
			t.Errorf("role event for client %s", in.ClientID)
		}
		applied = append(applied, string(in.Event.Action)+" "+in.Event.Role.Name)
	}
	// DynamicRole2: 4 attempts while down, then the one after the backoff.
	want := "add Early,add DynamicRole1,remove DynamicRole1,add DynamicRole2,add DynamicRole2,add DynamicRole2,add DynamicRole2,add DynamicRole2"
	if got := strings.Join(applied, ","); got != want {
		t.Errorf("applied:\n got %s\nwant %s", got, want)
	}
	wantEvents := "HubRegistered,HubRegistered,Ready,DynamicRoleAdded,DynamicRoleAdded,DynamicRoleRemoved,RoleEventIgnored,KeycloakUnavailable,Ready,DynamicRoleAdded"
	if got := strings.Join(f.events(), ","); got != wantEvents {
		t.Errorf("events:\n got %s\nwant %s", got, wantEvents)
	}
	if f.hub.Registrations() != 2 {
		t.Errorf("registrations = %d", f.hub.Registrations())
	}
}

func TestIdentityConfigUnregistersHubsOnDelete(t *testing.T) {
	env, f := newIdentityEnv(t)
	at(env, time.Second, SignalResourceEvent, icEvent("h1", icHubSpec()))
	at(env, time.Minute, SignalResourceEvent, icDeleting("h2", nil))
	at(env, 2*time.Minute, SignalResourceEvent, ResourceEventDeleted())
	runIdentity(env, time.Hour)
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if f.hub.Unregistrations() != 2 || len(f.hub.Subscriptions()) != 0 {
		t.Fatalf("unregistered %d, left %+v", f.hub.Unregistrations(), f.hub.Subscriptions())
	}
	if f.deletes != 1 || f.hubsAtDelete[0] != 0 || len(f.removed) != 1 {
		t.Fatalf("client deleted %d times with %v subscriptions left; finalizer removals %d", f.deletes, f.hubsAtDelete, len(f.removed))
	}
}

func TestIdentityConfigDeleteWithTheHubGone(t *testing.T) {
	env, f := newIdentityEnv(t)
	at(env, time.Second, SignalResourceEvent, icEvent("h1", icHubSpec()))
	// helm uninstall takes the component's API down with its IdentityConfig.
	env.RegisterDelayedCallback(f.hub.Close, 50*time.Second)
	at(env, time.Minute, SignalResourceEvent, icDeleting("h2", nil))
	at(env, 2*time.Minute, SignalResourceEvent, ResourceEventDeleted())
	runIdentity(env, time.Hour)
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if f.deletes != 1 || len(f.removed) != 1 {
		t.Fatalf("the client must still go: deletes %d, finalizer removals %d", f.deletes, len(f.removed))
	}
	if got := strings.Join(f.events(), ","); !strings.HasSuffix(got, "HubUnsubscribeFailed,HubUnsubscribeFailed") {
		t.Errorf("events = %s, want what was left behind", got)
	}
}

func TestIdentityConfigHubDownRetriesWithReason(t *testing.T) {
	env, f := newIdentityEnv(t)
	f.hub.Fail(http.StatusServiceUnavailable)
	at(env, time.Second, SignalResourceEvent, icEvent("h1", icHubSpec()))
	env.RegisterDelayedCallback(func() { f.hub.Fail(0) }, 2*time.Minute)
	at(env, 30*time.Minute, SignalResourceEvent, ResourceEventDeleted())
	runIdentity(env, time.Hour)
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	// The client and credentials are there: the identity is ready, and
	// the Ready condition says why dynamic roles are not listened to yet.
	var failed map[string]any
	var failedStatus map[string]any
	for _, s := range f.statuses {
		if conds, _ := s.Status["conditions"].([]any); len(conds) > 0 {
			if c, _ := conds[0].(map[string]any); c["reason"] == activities.ErrTypeHubUnavailable {
				failed, failedStatus = c, s.Status
			}
		}
	}
	if failed == nil || failed["status"] != "True" || !strings.Contains(failed["message"].(string), "HTTP 503") {
		t.Fatalf("no HubUnavailable reason on the Ready condition: %+v", f.statuses)
	}
	if ready, _ := failedStatus["implementation"].(map[string]any)["ready"].(bool); !ready || listenerRegistered(failedStatus) != false {
		t.Fatalf("with the hub down the identity must be ready and the listener not registered: %+v", failedStatus)
	}
	if got := strings.Join(f.events(), ","); got != "HubUnavailable,HubRegistered,HubRegistered,Ready" {
		t.Errorf("events = %s", got)
	}
	if f.hub.Registrations() != 2 || listenerRegistered(f.lastStatus()) != true {
		t.Errorf("registrations %d, status %+v", f.hub.Registrations(), f.lastStatus())
	}
}

// A worker without a listener is a setting: the identity is ready with the
// reason on its Ready condition, and the hub is tried again only by the
// drift check, not on a backoff (which, across thousands of
// IdentityConfigs, would be a steady stream of failing activities).
func TestIdentityConfigWithoutAListenerDoesNotRetryOnABackoff(t *testing.T) {
	f := runRefusedHub(t, temporal.NewNonRetryableApplicationError("the worker has no identity listener", activities.ErrTypeListenerMisconfigured, nil))
	var reason any
	for _, s := range f.statuses {
		if conds, _ := s.Status["conditions"].([]any); len(conds) > 0 {
			if c, _ := conds[0].(map[string]any); c["status"] == "True" {
				reason = c["reason"]
			}
		}
	}
	if reason != activities.ErrTypeListenerMisconfigured {
		t.Errorf("Ready condition reason = %v, want %s", reason, activities.ErrTypeListenerMisconfigured)
	}
}

// A Component's IdentityConfig records no HubRegistered for the
// subscriptions of its first install: they are part of its first Ready,
// which its Component's Event tells. One made by hand records them.
func TestIdentityConfigOfAComponentSubscribesQuietly(t *testing.T) {
	for _, tc := range []struct {
		owned bool
		want  string
	}{
		{true, ""},
		{false, "HubRegistered,HubRegistered,Ready"},
	} {
		env, f := newIdentityEnv(t)
		ev := icEvent("h1", icHubSpec())
		if tc.owned {
			ev.Labels = map[string]string{oda.LabelComponentName: testName}
		}
		at(env, time.Second, SignalResourceEvent, ev)
		at(env, time.Minute, SignalResourceEvent, ResourceEvent{UID: "ic-uid", Deleted: true})
		runIdentity(env, time.Hour)
		if err := env.GetWorkflowError(); err != nil {
			t.Fatal(err)
		}
		if n := f.hub.Registrations(); n != 2 {
			t.Errorf("owned %v: hub registrations = %d, want 2", tc.owned, n)
		}
		if got := strings.Join(f.events(), ","); got != tc.want {
			t.Errorf("owned %v: events = %q, want %q", tc.owned, got, tc.want)
		}
	}
}

// A hub the activity refuses (an ExternalName Service) leaves the
// IdentityConfig Failed, not Ready, with the reason on its condition and a
// Warning Event, and is not retried on a backoff: only a change (or the
// drift check) looks again.
func TestIdentityConfigWithARefusedHubIsFailed(t *testing.T) {
	f := runRefusedHub(t, temporal.NewNonRetryableApplicationError("hub Service pr is of type ExternalName", activities.ErrTypeHubRefused, nil))
	var cond map[string]any
	warned := false
	for _, s := range f.statuses {
		if conds, _ := s.Status["conditions"].([]any); len(conds) > 0 {
			cond, _ = conds[0].(map[string]any)
		}
		if s.Event != nil && s.Event.Type == "Warning" && s.Event.Reason == activities.ErrTypeHubRefused {
			warned = true
		}
	}
	if cond["status"] != "False" || cond["reason"] != activities.ErrTypeHubRefused || !strings.Contains(fmt.Sprint(cond["message"]), "ExternalName") {
		t.Errorf("Ready condition = %v, want False/%s naming ExternalName", cond, activities.ErrTypeHubRefused)
	}
	if !warned {
		t.Errorf("events = %v, want a Warning %s Event", f.events(), activities.ErrTypeHubRefused)
	}
}

// runRefusedHub runs an IdentityConfig with hubs for three hours while
// every RegisterHub fails with err, and checks it was tried once: a
// refusal retrying cannot change is not retried on a backoff.
func runRefusedHub(t *testing.T, err error) *fakeKeycloak {
	t.Helper()
	env, f := newIdentityEnv(t)
	var id *activities.Identity
	calls := 0
	env.OnActivity(id.RegisterHub, mock.Anything, mock.Anything).Return(
		func(context.Context, activities.RegisterHubInput) (activities.RegisterHubResult, error) {
			calls++
			return activities.RegisterHubResult{}, err
		})
	at(env, time.Second, SignalResourceEvent, icEvent("h1", icHubSpec()))
	at(env, 3*time.Hour, SignalResourceEvent, ResourceEventDeleted())
	runIdentity(env, 24*time.Hour)
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if calls != 1 {
		t.Errorf("RegisterHub called %d times in 3 hours, want 1", calls)
	}
	return f
}
