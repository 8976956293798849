// Package keycloak_test is the Keycloak contract suite: the Identity
// activities' Keycloak side, and the Keycloak behaviours they rely on,
// checked against the test double always and against real Keycloaks: the
// one KEYCLOAK_URL, KEYCLOAK_ADMIN and KEYCLOAK_ADMIN_PASSWORD name
// (KEYCLOAK_REALM, default odari, must hold the canvassystem client), or
// else the ones `hack/tools.sh keycloak` fetched, started once by TestMain:
// the current release and the Canvas's (20.0.5, under /auth). The same
// assertions on every target keep the double honest.
package keycloak_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Nerzal/gocloak/v13"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/odaflow/odaflow/activities"
	"github.com/odaflow/odaflow/identity"
	kcdouble "github.com/odaflow/odaflow/internal/doubles/keycloak"
	"github.com/odaflow/odaflow/internal/localstack"
	"github.com/odaflow/odaflow/oda"
)

// real are the Keycloaks TestMain started, in the order of realVersions.
var real []*localstack.Keycloak

// realVersions are the Keycloaks the suite starts when KEYCLOAK_URL is
// unset: the default ("", the newest this machine's JDKs run) and the
// Canvas's.
var realVersions = []string{"", localstack.CanvasKeycloakVersion}

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

// run starts the real Keycloaks side by side (once for the package, not
// per test). A missing one fails the run under CI, as in tests/integration;
// elsewhere it is named and left out.
func run(m *testing.M) int {
	if os.Getenv("KEYCLOAK_URL") != "" {
		return m.Run()
	}
	started := make([]*localstack.Keycloak, len(realVersions))
	errs := make([]error, len(realVersions))
	var wg sync.WaitGroup
	for i, v := range realVersions {
		home, err := localstack.KeycloakHome(v)
		if err != nil {
			errs[i] = err
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			started[i], errs[i] = localstack.StartKeycloak(context.Background(), localstack.KeycloakOptions{Home: home, RelativePath: "default"})
		}()
	}
	wg.Wait()
	defer func() {
		for _, k := range started {
			if k != nil {
				_ = k.Stop()
			}
		}
	}()
	failed := false
	for i, k := range started {
		if k != nil {
			fmt.Fprintf(os.Stderr, "contract: Keycloak %s ready in %s at %s\n", k.Version, k.Started.Round(time.Millisecond), k.URL)
			real = append(real, k)
			continue
		}
		fmt.Fprintf(os.Stderr, "contract: real Keycloak %q: %v\n", realVersions[i], errs[i])
		failed = failed || os.Getenv("CI") != ""
	}
	if failed {
		return 1
	}
	return m.Run()
}

type target struct {
	name, url, realm, user, password string
	// double: the target is odaflow's stand-in, not a Keycloak.
	double bool
}

func targets(t *testing.T) []target {
	pw := fmt.Sprintf("contract-%d", time.Now().UnixNano())
	d, err := kcdouble.New(kcdouble.Options{AdminPassword: pw})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Close)
	if err := d.SeedCanvas("odari"); err != nil {
		t.Fatal(err)
	}
	out := []target{{name: "double (imitating Keycloak " + kcdouble.KeycloakVersion + ")", url: d.URL(), realm: "odari", user: "admin", password: pw, double: true}}
	if u := os.Getenv("KEYCLOAK_URL"); u != "" {
		realm := os.Getenv("KEYCLOAK_REALM")
		if realm == "" {
			realm = "odari"
		}
		out = append(out, target{name: "real Keycloak at " + u, url: u, realm: realm, user: os.Getenv("KEYCLOAK_ADMIN"), password: os.Getenv("KEYCLOAK_ADMIN_PASSWORD")})
	}
	for _, k := range real {
		out = append(out, target{name: "real Keycloak " + k.Version + " at " + k.URL, url: k.URL, realm: k.Realm, user: k.AdminUser, password: k.AdminPassword()})
	}
	return out
}

func TestKeycloakContract(t *testing.T) {
	ran := 0
	for _, tg := range targets(t) {
		t.Run(tg.name, func(t *testing.T) {
			t.Logf("target: %s", tg.name)
			runContract(t, tg)
		})
		ran++
	}
	if ran == 1 {
		t.Log("real Keycloak: none (fetch one with hack/tools.sh keycloak, or set KEYCLOAK_URL, KEYCLOAK_ADMIN, KEYCLOAK_ADMIN_PASSWORD); ran against the double only")
	}
	t.Logf("targets run: %d", ran)
}

func code(err error) int {
	var e *gocloak.APIError
	if errors.As(err, &e) {
		return e.Code
	}
	return -1
}

func runContract(t *testing.T, tg target) {
	ctx := context.Background()
	// The double's admin Secret has odaflow's keys, a real Keycloak's the
	// Canvas's: both are read.
	adminData := map[string][]byte{"username": []byte(tg.user), "password": []byte(tg.password)}
	if !tg.double {
		adminData = map[string][]byte{"KEYCLOAK_USER": []byte(tg.user), "KEYCLOAK_PASSWORD": []byte(tg.password)}
	}
	core := fake.NewClientset(&corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "keycloak-admin", Namespace: "canvas"},
		Data:       adminData,
	})
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	a := activities.NewIdentity(&activities.Kube{Core: core, Log: log}, activities.KeycloakConfig{
		URL: tg.url, Realm: tg.realm, AdminSecretNamespace: "canvas", AdminSecretName: "keycloak-admin",
	}, log)
	name := fmt.Sprintf("contract-%d", time.Now().UnixNano()%1_000_000_000)
	ref := oda.Ref{Kind: oda.KindIdentityConfig.Name, Namespace: "components", Name: name}
	kc := gocloak.NewClient(tg.url)
	tok, err := kc.LoginAdmin(ctx, tg.user, tg.password, "master")
	if err != nil {
		t.Fatal(err)
	}
	at := tok.AccessToken
	t.Cleanup(func() { _, _ = a.DeleteIdentity(ctx, activities.DeleteIdentityInput{Ref: ref, ClientID: name}) })

	spec := map[string]any{"canvasSystemRole": "Admin", "componentRole": []any{map[string]any{"name": "cat1owner"}, map[string]any{"name": "cat2owner"}}}
	d, err := identity.FromSpec(name, spec)
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.EnsureIdentity(ctx, activities.EnsureIdentityInput{Ref: ref, Desired: d})
	if err != nil {
		t.Fatal(err)
	}
	if !res.ClientCreated || len(res.RolesCreated) != 3 {
		t.Fatalf("install: %+v", res)
	}
	again, err := a.EnsureIdentity(ctx, activities.EnsureIdentityInput{Ref: ref, Desired: d})
	if err != nil || again.Changed() {
		t.Fatalf("second run changed something: %+v %v", again, err)
	}
	// Configured with the other base path (/auth added or dropped), the
	// activities find Keycloak's and see the same state.
	other := activities.NewIdentity(&activities.Kube{Core: core, Log: log}, activities.KeycloakConfig{
		URL: activities.AlternateKeycloakBase(tg.url), Realm: tg.realm, AdminSecretNamespace: "canvas", AdminSecretName: "keycloak-admin",
	}, log)
	if viaOther, err := other.EnsureIdentity(ctx, activities.EnsureIdentityInput{Ref: ref, Desired: d}); err != nil || viaOther.Changed() || viaOther.ClientUUID != res.ClientUUID {
		t.Fatalf("through %s: %+v %v", activities.AlternateKeycloakBase(tg.url), viaOther, err)
	}

	// What the BDD tests look at (UC005-F001, F003).
	canvas, err := kc.GetClients(ctx, at, tg.realm, gocloak.GetClientsParams{ClientID: gocloak.StringP("canvassystem")})
	if err != nil || len(canvas) != 1 {
		t.Fatalf("canvassystem: %v", err)
	}
	if _, err := kc.GetClientRole(ctx, at, tg.realm, *canvas[0].ID, "Admin"); err != nil {
		t.Errorf("canvassystem lacks role Admin: %v", err)
	}
	if _, err := kc.GetClientRole(ctx, at, tg.realm, res.ClientUUID, "cat2owner"); err != nil {
		t.Errorf("cat2owner: %v", err)
	}
	// Keycloak's own answers the activities depend on.
	_, err = kc.GetClientRole(ctx, at, tg.realm, res.ClientUUID, "no-such-role")
	if code(err) != 404 || !strings.Contains(err.Error(), "Could not find role") {
		t.Errorf("missing role: %v", err)
	}
	_, err = kc.CreateClient(ctx, at, tg.realm, gocloak.Client{ClientID: gocloak.StringP(name)})
	if code(err) != 409 {
		t.Errorf("duplicate client: %v", err)
	}
	_, err = kc.CreateClientRole(ctx, at, tg.realm, res.ClientUUID, gocloak.Role{Name: gocloak.StringP("cat1owner")})
	if code(err) != 409 {
		t.Errorf("duplicate role: %v", err)
	}
	if _, err := kc.GetClients(ctx, "not-a-token", tg.realm, gocloak.GetClientsParams{}); code(err) != 401 {
		t.Errorf("bad token: %v", err)
	}
	// Keycloak 26 answers a wrong password 400, Keycloak 20 (the
	// Canvas's) 401; both say invalid_grant, and odaflow treats both as
	// refused credentials. The double answers as the current release.
	_, err = kc.LoginAdmin(ctx, tg.user, tg.password+"-wrong", "master")
	if c := code(err); (c != 400 && c != 401) || !strings.Contains(err.Error(), "invalid_grant") || (tg.double && c != 400) {
		t.Errorf("wrong admin password: %v", err)
	}

	// Upgrade drops cat2owner.
	spec["componentRole"] = []any{map[string]any{"name": "cat1owner"}}
	d2, _ := identity.FromSpec(name, spec)
	up, err := a.EnsureIdentity(ctx, activities.EnsureIdentityInput{Ref: ref, Desired: d2, PreviousRoles: identity.RoleNames(d.Roles)})
	if err != nil || strings.Join(up.RolesDeleted, ",") != "cat2owner" {
		t.Fatalf("upgrade: %+v %v", up, err)
	}

	// A dynamic role (what the identity listener applies): added once,
	// kept by the drift check, removed once.
	ev := identity.RoleEvent{Component: name, API: identity.APIPermissionSpecificationSet, Action: identity.RoleAdd,
		Role: identity.Role{Name: "DynamicRole1", Description: "made by a hub"}, EventType: "PermissionSpecificationSetCreationNotification"}
	applyEvent := func(ev identity.RoleEvent) bool {
		t.Helper()
		r, err := a.ApplyRoleEvent(ctx, activities.ApplyRoleEventInput{Ref: ref, ClientID: name, Event: ev})
		if err != nil {
			t.Fatalf("role event %s %s: %v", ev.Action, ev.Role.Name, err)
		}
		return r.Changed
	}
	if !applyEvent(ev) || applyEvent(ev) {
		t.Errorf("dynamic role add: want a change once, then none")
	}
	if drift, err := a.EnsureIdentity(ctx, activities.EnsureIdentityInput{Ref: ref, Desired: d2, PreviousRoles: identity.RoleNames(d2.Roles)}); err != nil || len(drift.RolesDeleted) != 0 {
		t.Errorf("the drift check after a dynamic role: %+v %v", drift, err)
	}
	if _, err := kc.GetClientRole(ctx, at, tg.realm, res.ClientUUID, "DynamicRole1"); err != nil {
		t.Errorf("DynamicRole1: %v", err)
	}
	ev.Action = identity.RoleRemove
	if !applyEvent(ev) || applyEvent(ev) {
		t.Errorf("dynamic role remove: want a change once, then none")
	}

	// The Secret's credentials log in; after a rotation only the new ones.
	creds, err := a.EnsureCredentials(ctx, activities.EnsureCredentialsInput{Ref: ref, UID: "uid", ClientID: name})
	if err != nil || !creds.Written {
		t.Fatalf("credentials: %+v %v", creds, err)
	}
	secretValue := func() string {
		s, err := core.CoreV1().Secrets("components").Get(ctx, identity.SecretName(name), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return string(s.Data["client_secret"])
	}
	old := secretValue()
	if _, err := kc.LoginClient(ctx, name, old, tg.realm); err != nil {
		t.Errorf("the Secret's credentials do not log in: %v", err)
	}
	if _, err := a.EnsureCredentials(ctx, activities.EnsureCredentialsInput{Ref: ref, UID: "uid", ClientID: name, Rotate: "r1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := kc.LoginClient(ctx, name, old, tg.realm); code(err) != 401 {
		t.Errorf("the old secret still logs in after rotation: %v", err)
	}
	if _, err := kc.LoginClient(ctx, name, secretValue(), tg.realm); err != nil {
		t.Errorf("the rotated secret does not log in: %v", err)
	}

	del, err := a.DeleteIdentity(ctx, activities.DeleteIdentityInput{Ref: ref, ClientID: name})
	if err != nil || !del.ClientDeleted {
		t.Fatalf("delete: %+v %v", del, err)
	}
	if left, _ := kc.GetClients(ctx, at, tg.realm, gocloak.GetClientsParams{ClientID: gocloak.StringP(name)}); len(left) != 0 {
		t.Errorf("client still listed after delete")
	}
}
