// Package keycloak_test is the Keycloak contract suite: the Identity
// activities' Keycloak side, and the Keycloak behaviours they rely on,
// checked against the test double always and against a real Keycloak when
// KEYCLOAK_URL, KEYCLOAK_ADMIN and KEYCLOAK_ADMIN_PASSWORD are set
// (KEYCLOAK_REALM, default odari, must hold the canvassystem client). The
// same assertions on both targets keep the double honest.
package keycloak_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/Nerzal/gocloak/v13"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/odaflow/odaflow/activities"
	"github.com/odaflow/odaflow/identity"
	kcdouble "github.com/odaflow/odaflow/internal/doubles/keycloak"
	"github.com/odaflow/odaflow/oda"
)

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
	if os.Getenv("KEYCLOAK_URL") == "" {
		t.Log("real Keycloak: not configured (set KEYCLOAK_URL, KEYCLOAK_ADMIN, KEYCLOAK_ADMIN_PASSWORD); ran against the double only")
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
	core := fake.NewClientset(&corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "keycloak-admin", Namespace: "canvas"},
		Data:       map[string][]byte{"username": []byte(tg.user), "password": []byte(tg.password)},
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
