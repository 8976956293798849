package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/odaflow/odaflow/identity"
	"github.com/odaflow/odaflow/listener"
	"github.com/odaflow/odaflow/listener/hubtest"
)

var (
	hubKey  = []byte("hub-test-listener-key-0123456789abcdef")
	hubKey2 = []byte("hub-test-listener-key-rotated-0123456789")
)

const permHub = "http://dyn-permissionspec.comp.svc.cluster.local:8080/dyn-pc/rolesAndPermissionsManagement/v5/hub"

func hubIdentity(hc *http.Client, keys *[][]byte) *Identity {
	return &Identity{Hub: HubConfig{
		ListenerBaseURL: "http://odaflow-worker.canvas.svc.cluster.local:8080",
		Keys:            func() ([][]byte, error) { return *keys, nil },
		HTTP:            hc,
	}}
}

func TestRegisterHubOnceRotateAndUnregister(t *testing.T) {
	hub := hubtest.New()
	defer hub.Close()
	keys := [][]byte{hubKey}
	a := hubIdentity(hub.Client(), &keys)
	ctx := context.Background()
	in := RegisterHubInput{Ref: icRef("dyn-pc"), Hub: identity.Hub{API: identity.APIPermissionSpecificationSet, URL: permHub}}

	res, err := a.RegisterHub(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	want := HubSubscription{API: identity.APIPermissionSpecificationSet, HubURL: permHub,
		Callback: "http://odaflow-worker.canvas.svc.cluster.local:8080/listener/components/dyn-pc", KeyID: identity.KeyID(hubKey), ID: "sub-1"}
	if !res.Registered || res.Subscription != want {
		t.Fatalf("result = %+v", res)
	}
	subs := hub.Subscriptions()
	token := identity.ListenerToken(hubKey, "components", "dyn-pc")
	if len(subs) != 1 || subs[0].Callback != want.Callback+"?token="+token || subs[0].Type != "Hub" ||
		subs[0].Path != "/dyn-pc/rolesAndPermissionsManagement/v5/hub" {
		t.Fatalf("hub holds %+v", subs)
	}
	// What goes to the workflow history holds no token.
	if b, _ := json.Marshal(res); strings.Contains(string(b), token) {
		t.Fatalf("result carries the token: %s", b)
	}

	// The workflow's record is current: no call at all.
	in.Existing = &res.Subscription
	again, err := a.RegisterHub(ctx, in)
	if err != nil || again.Registered || again.Subscription != want || hub.Registrations() != 1 {
		t.Fatalf("second run: %+v %v, registrations %d", again, err, hub.Registrations())
	}

	// A rotated key: subscribe with the new token, then drop the old one.
	keys = [][]byte{hubKey2, hubKey}
	rot, err := a.RegisterHub(ctx, in)
	if err != nil || !rot.Registered || rot.Replaced != "sub-1" || rot.StaleLeft || rot.Subscription.KeyID != identity.KeyID(hubKey2) {
		t.Fatalf("rotation: %+v %v", rot, err)
	}
	if subs := hub.Subscriptions(); len(subs) != 1 || subs[0].ID != "sub-2" ||
		!strings.HasSuffix(subs[0].Callback, "?token="+identity.ListenerToken(hubKey2, "components", "dyn-pc")) {
		t.Fatalf("after rotation the hub holds %+v", subs)
	}

	un, err := a.UnregisterHub(ctx, UnregisterHubInput{Ref: icRef("dyn-pc"), Subscription: rot.Subscription})
	if err != nil || !un.Deleted || len(hub.Subscriptions()) != 0 {
		t.Fatalf("unregister: %+v %v %+v", un, err, hub.Subscriptions())
	}
	// Already gone (404) is success.
	if un, err := a.UnregisterHub(ctx, UnregisterHubInput{Ref: icRef("dyn-pc"), Subscription: rot.Subscription}); err != nil || un.Deleted {
		t.Fatalf("second unregister: %+v %v", un, err)
	}
	// A party-role hub gets no @type.
	pr, err := a.RegisterHub(ctx, RegisterHubInput{Ref: icRef("dyn-pc"), Hub: identity.Hub{API: identity.APIPartyRole, URL: "http://pr.comp.svc.cluster.local:8080/api/hub"}})
	if err != nil || hub.Subscriptions()[0].Type != "" || pr.Subscription.ID != "sub-3" {
		t.Fatalf("party role: %+v %v %+v", pr, err, hub.Subscriptions())
	}
}

func TestHubErrorsAreClassifiedAndLeakNoToken(t *testing.T) {
	ctx := context.Background()
	keys := [][]byte{hubKey}
	token := identity.ListenerToken(hubKey, "components", "pc")
	in := RegisterHubInput{Ref: icRef("pc"), Hub: identity.Hub{API: identity.APIPartyRole, URL: permHub}}

	hub := hubtest.New()
	a := hubIdentity(hub.Client(), &keys)
	hub.Fail(http.StatusServiceUnavailable)
	_, err := a.RegisterHub(ctx, in)
	assertAppError(t, err, ErrTypeHubUnavailable, false)
	_, err = a.UnregisterHub(ctx, UnregisterHubInput{Ref: icRef("pc"), Subscription: HubSubscription{HubURL: permHub, ID: "sub-1"}})
	assertAppError(t, err, ErrTypeHubUnavailable, false)
	hub.Fail(http.StatusForbidden)
	_, err = a.UnregisterHub(ctx, UnregisterHubInput{Ref: icRef("pc"), Subscription: HubSubscription{HubURL: permHub, ID: "sub-1"}})
	assertAppError(t, err, ErrTypeHubRejected, true)
	hub.Close()
	_, err = a.RegisterHub(ctx, in)
	assertAppError(t, err, ErrTypeHubUnavailable, false)
	if !strings.Contains(err.Error(), "unreachable") || !strings.Contains(err.Error(), permHub) {
		t.Errorf("message does not say why: %v", err)
	}

	// A hub that refuses and echoes the body back, with something it
	// wants read: the error says the status code and nothing of the body
	// (neither the token nor the host's content reaches status or Events).
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write(append([]byte("AccessKeyId=AKIAMETADATA "), b...))
	}))
	defer echo.Close()
	a = hubIdentity(echo.Client(), &keys)
	_, err = a.RegisterHub(ctx, RegisterHubInput{Ref: icRef("pc"), Hub: identity.Hub{API: identity.APIPartyRole, URL: echo.URL + "/hub"}})
	assertAppError(t, err, ErrTypeHubRejected, true)
	if strings.Contains(err.Error(), token) || strings.Contains(err.Error(), "AKIAMETADATA") || !strings.Contains(err.Error(), "HTTP 400") {
		t.Errorf("error copies the hub's answer: %v", err)
	}

	// A hub that redirects (to a metadata endpoint, say) is not followed:
	// the redirect is an answer like any other non-2xx.
	var followed atomic.Bool
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		followed.Store(true)
		w.WriteHeader(http.StatusCreated)
	}))
	defer target.Close()
	redirect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL+"/latest/meta-data", http.StatusTemporaryRedirect)
	}))
	defer redirect.Close()
	a = hubIdentity(redirect.Client(), &keys)
	_, err = a.RegisterHub(ctx, RegisterHubInput{Ref: icRef("pc"), Hub: identity.Hub{API: identity.APIPartyRole, URL: redirect.URL + "/hub"}})
	assertAppError(t, err, ErrTypeHubRejected, true)
	if followed.Load() {
		t.Error("the worker followed the hub's redirect")
	}

	// A worker without a listener says what to configure.
	_, err = (&Identity{}).RegisterHub(ctx, in)
	assertAppError(t, err, ErrTypeListenerMisconfigured, true)
	if !strings.Contains(err.Error(), "--listener-base-url") {
		t.Errorf("message does not name the flag: %v", err)
	}
	a.Hub.Keys = func() ([][]byte, error) {
		return nil, errors.New("listener key file /etc/odaflow/listener/key: permission denied")
	}
	_, err = a.RegisterHub(ctx, in)
	assertAppError(t, err, ErrTypeListenerMisconfigured, true)
}

func TestIdentityApplyRoleEventIsIdempotentAndSurvivesTheDriftCheck(t *testing.T) {
	a, kc, _ := newIdentityFixture(t, identityAdminPassword)
	ctx := context.Background()
	in := EnsureIdentityInput{Ref: icRef("dyn-pc"), Desired: desired(t, "dyn-pc", map[string]any{"canvasSystemRole": "Admin"})}
	if _, err := a.EnsureIdentity(ctx, in); err != nil {
		t.Fatal(err)
	}
	ev := identity.RoleEvent{Component: "dyn-pc", API: identity.APIPermissionSpecificationSet, Action: identity.RoleAdd,
		Role: identity.Role{Name: "DynamicRole1", Description: "made by a hub"}, EventType: "PermissionSpecificationSetCreationNotification"}
	apply := func(ev identity.RoleEvent) ApplyRoleEventResult {
		t.Helper()
		res, err := a.ApplyRoleEvent(ctx, ApplyRoleEventInput{Ref: icRef("dyn-pc"), ClientID: "dyn-pc", Event: ev})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if !apply(ev).Changed || apply(ev).Changed {
		t.Fatal("add: want changed once, then unchanged")
	}
	if got := roleNames(t, kc, "dyn-pc"); !slices.Equal(got, []string{"Admin", "DynamicRole1"}) {
		t.Fatalf("roles = %v", got)
	}
	// The drift check leaves the dynamic role alone.
	if res, err := a.EnsureIdentity(ctx, EnsureIdentityInput{Ref: in.Ref, Desired: in.Desired, PreviousRoles: []string{"Admin"}}); err != nil || len(res.RolesDeleted) != 0 {
		t.Fatalf("drift check: %+v %v", res, err)
	}
	ev.Action = identity.RoleRemove
	if !apply(ev).Changed || apply(ev).Changed {
		t.Fatal("remove: want changed once, then unchanged")
	}
	if got := roleNames(t, kc, "dyn-pc"); !slices.Equal(got, []string{"Admin"}) {
		t.Fatalf("roles after remove = %v", got)
	}
	_, err := a.ApplyRoleEvent(ctx, ApplyRoleEventInput{Ref: icRef("gone"), ClientID: "gone", Event: ev})
	assertAppError(t, err, ErrTypeKeycloakUnavailable, false)
}

// recordingSignaller stands in for the Temporal client behind the listener.
type recordingSignaller struct{ events []identity.RoleEvent }

func (s *recordingSignaller) SignalWorkflow(_ context.Context, workflowID, _, name string, arg any) error {
	if workflowID != "IdentityConfig/components/dyn-pc" || name != identity.SignalRoleEvent {
		return fmt.Errorf("unexpected signal %s to %s", name, workflowID)
	}
	s.events = append(s.events, arg.(identity.RoleEvent))
	return nil
}

// The token the activity gives the hub is the one the listener accepts:
// hub → listener → signal, end to end over HTTP.
func TestHubEventsReachTheListenerWithTheRegisteredToken(t *testing.T) {
	hub := hubtest.New()
	defer hub.Close()
	sig := &recordingSignaller{}
	keys := [][]byte{hubKey}
	l := httptest.NewServer(listener.New(sig, func() ([][]byte, error) { return keys, nil }, nil))
	defer l.Close()
	a := hubIdentity(hub.Client(), &keys)
	a.Hub.ListenerBaseURL = l.URL
	if _, err := a.RegisterHub(context.Background(), RegisterHubInput{Ref: icRef("dyn-pc"), Hub: identity.Hub{API: identity.APIPermissionSpecificationSet, URL: permHub}}); err != nil {
		t.Fatal(err)
	}
	codes, err := hub.Publish(http.DefaultClient, map[string]any{
		"eventType": "PermissionSpecificationSetCreationNotification",
		"event": map[string]any{"permissionSpecificationSet": map[string]any{
			"@baseType": "PermissionSpecificationSet", "name": "DynamicRole1", "description": "d",
		}},
	})
	if err != nil || len(codes) != 1 || codes[0] != http.StatusCreated {
		t.Fatalf("delivery: %v %v", codes, err)
	}
	if len(sig.events) != 1 || sig.events[0].Action != identity.RoleAdd || sig.events[0].Role.Name != "DynamicRole1" || sig.events[0].Component != "dyn-pc" {
		t.Fatalf("signalled %+v", sig.events)
	}
	// After a key change without re-registration the old token is refused.
	keys = [][]byte{hubKey2}
	if codes, _ := hub.Publish(http.DefaultClient, map[string]any{"eventType": "x"}); len(codes) != 1 || codes[0] != http.StatusUnauthorized {
		t.Fatalf("stale token: %v", codes)
	}
}
