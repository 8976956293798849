package activities

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/Nerzal/gocloak/v13"
	"go.temporal.io/sdk/temporal"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/odaflow/odaflow/identity"
	kcdouble "github.com/odaflow/odaflow/internal/doubles/keycloak"
	"github.com/odaflow/odaflow/oda"
)

const identityAdminPassword = "pw-that-must-not-leak"

func newIdentityFixture(t *testing.T, password string) (*Identity, *kcdouble.Server, *fake.Clientset) {
	t.Helper()
	kc, err := kcdouble.New(kcdouble.Options{AdminPassword: identityAdminPassword})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(kc.Close)
	if err := kc.SeedCanvas("odari"); err != nil {
		t.Fatal(err)
	}
	core := fake.NewClientset(&corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "keycloak-admin", Namespace: "canvas"},
		Data:       map[string][]byte{"username": []byte("admin"), "password": []byte(password)},
	})
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	a := NewIdentity(&Kube{Core: core, Log: log}, KeycloakConfig{
		URL: kc.URL(), Realm: "odari", AdminSecretNamespace: "canvas", AdminSecretName: "keycloak-admin",
	}, log)
	return a, kc, core
}

func icRef(name string) oda.Ref {
	return oda.Ref{Kind: oda.KindIdentityConfig.Name, Namespace: "components", Name: name}
}

func desired(t *testing.T, name string, spec map[string]any) identity.Desired {
	t.Helper()
	d, err := identity.FromSpec(name, spec)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func adminClient(t *testing.T, kc *kcdouble.Server) (*gocloak.GoCloak, string) {
	t.Helper()
	g := gocloak.NewClient(kc.URL())
	tok, err := g.LoginAdmin(context.Background(), "admin", identityAdminPassword, "master")
	if err != nil {
		t.Fatal(err)
	}
	return g, tok.AccessToken
}

func roleNames(t *testing.T, kc *kcdouble.Server, clientID string) []string {
	t.Helper()
	g, tok := adminClient(t, kc)
	cs, err := g.GetClients(context.Background(), tok, "odari", gocloak.GetClientsParams{ClientID: &clientID})
	if err != nil || len(cs) != 1 {
		t.Fatalf("client %s: %v %d", clientID, err, len(cs))
	}
	roles, err := g.GetClientRoles(context.Background(), tok, "odari", *cs[0].ID, gocloak.GetRoleParams{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range roles {
		out = append(out, *r.Name)
	}
	return out
}

func writes(kc *kcdouble.Server) []string {
	var out []string
	for _, r := range kc.Requests() {
		if r.Method != http.MethodGet && !strings.HasSuffix(r.Path, "/token") {
			out = append(out, r.Method+" "+r.Path)
		}
	}
	return out
}

func TestEnsureIdentityCreatesUpdatesAndIsIdempotent(t *testing.T) {
	a, kc, _ := newIdentityFixture(t, identityAdminPassword)
	ctx := context.Background()
	spec := map[string]any{"canvasSystemRole": "Admin", "componentRole": []any{
		map[string]any{"name": "pcadmin", "description": "Product Catalogue Administrator"},
		map[string]any{"name": "cat1owner"}, map[string]any{"name": "cat2owner"},
	}}
	in := EnsureIdentityInput{Ref: icRef("static-pc"), Desired: desired(t, "static-pc", spec)}
	res, err := a.EnsureIdentity(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	if !res.ClientCreated || len(res.RolesCreated) != 4 || !res.CanvasRoleCreated || !res.CanvasMappingAdded {
		t.Fatalf("first run: %+v", res)
	}
	if got := strings.Join(roleNames(t, kc, "static-pc"), ","); got != "Admin,cat1owner,cat2owner,pcadmin" {
		t.Errorf("component roles = %s", got)
	}
	if got := strings.Join(roleNames(t, kc, "canvassystem"), ","); got != "Admin" {
		t.Errorf("canvassystem roles = %s (UC005-F001 looks for Admin)", got)
	}
	// The real grant: the canvassystem service account holds the role.
	g, tok := adminClient(t, kc)
	canvas, _ := g.GetClients(ctx, tok, "odari", gocloak.GetClientsParams{ClientID: gocloak.StringP("canvassystem")})
	sa, err := g.GetClientServiceAccount(ctx, tok, "odari", *canvas[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	mapped, err := g.GetClientRolesByUserID(ctx, tok, "odari", res.ClientUUID, *sa.ID)
	if err != nil || len(mapped) != 1 || *mapped[0].Name != "Admin" {
		t.Fatalf("mapping: %+v %v", mapped, err)
	}

	// A role the listener added at run time.
	if _, err := g.CreateClientRole(ctx, tok, "odari", res.ClientUUID, gocloak.Role{Name: gocloak.StringP("DynamicRole1")}); err != nil {
		t.Fatal(err)
	}
	kc.ResetRequests()
	again, err := a.EnsureIdentity(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	if again.Changed() || len(writes(kc)) != 0 {
		t.Fatalf("second run changed %+v, writes %v", again, writes(kc))
	}

	// Upgrade: cat2owner removed, canvas role renamed.
	spec["canvasSystemRole"] = "Operator"
	spec["componentRole"] = []any{map[string]any{"name": "pcadmin"}, map[string]any{"name": "cat1owner"}}
	up, err := a.EnsureIdentity(ctx, EnsureIdentityInput{Ref: icRef("static-pc"), Desired: desired(t, "static-pc", spec)})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(up.RolesCreated, up.RolesDeleted) != "[Operator] [Admin cat2owner]" || !up.CanvasMappingAdded {
		t.Fatalf("upgrade: %+v", up)
	}
	if got := strings.Join(roleNames(t, kc, "static-pc"), ","); got != "DynamicRole1,Operator,cat1owner,pcadmin" {
		t.Errorf("roles after upgrade = %s", got)
	}
}

func TestEnsureIdentityPagesThroughRoles(t *testing.T) {
	a, kc, _ := newIdentityFixture(t, identityAdminPassword)
	ctx := context.Background()
	g, tok := adminClient(t, kc)
	// A client an earlier run of odaflow created for this IdentityConfig.
	id, err := g.CreateClient(ctx, tok, "odari", gocloak.Client{ClientID: gocloak.StringP("big"), ServiceAccountsEnabled: gocloak.BoolP(true),
		Attributes: &map[string]string{identity.OwnerNamespaceAttribute: "components", identity.OwnerNameAttribute: "big"}})
	if err != nil {
		t.Fatal(err)
	}
	// 150 roles odaflow created earlier; the spec now declares one of
	// them. Without paging, those past the first page would never go.
	for i := 0; i < 150; i++ {
		if _, err := g.CreateClientRole(ctx, tok, "odari", id, gocloak.Role{Name: gocloak.StringP(fmt.Sprintf("r%03d", i)),
			Attributes: &map[string][]string{identity.ManagedAttribute: {identity.ManagedValue}}}); err != nil {
			t.Fatal(err)
		}
	}
	res, err := a.EnsureIdentity(ctx, EnsureIdentityInput{Ref: icRef("big"), Desired: desired(t, "big", map[string]any{"canvasSystemRole": "r149"})})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.RolesDeleted) != 149 || len(res.RolesCreated) != 0 {
		t.Fatalf("deleted %d, created %v", len(res.RolesDeleted), res.RolesCreated)
	}
}

func TestEnsureCredentialsWritesRotatesAndRepairs(t *testing.T) {
	a, kc, core := newIdentityFixture(t, identityAdminPassword)
	ctx := context.Background()
	if _, err := a.EnsureIdentity(ctx, EnsureIdentityInput{Ref: icRef("pc"), Desired: desired(t, "pc", map[string]any{"canvasSystemRole": "Admin"})}); err != nil {
		t.Fatal(err)
	}
	in := EnsureCredentialsInput{Ref: icRef("pc"), UID: "ic-uid", ClientID: "pc"}
	res, err := a.EnsureCredentials(ctx, in)
	if err != nil || !res.Written || res.Rotated || res.SecretName != "pc-secret" {
		t.Fatalf("first: %+v %v", res, err)
	}
	secret := func() *corev1.Secret {
		s, err := core.CoreV1().Secrets("components").Get(ctx, "pc-secret", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	s := secret()
	want, _ := kc.ClientSecret("odari", "pc")
	if string(s.Data["client_id"]) != "pc" || string(s.Data["client_secret"]) != want {
		t.Fatalf("secret data = %q", s.Data["client_id"])
	}
	if len(s.OwnerReferences) != 1 || s.OwnerReferences[0].UID != "ic-uid" || s.OwnerReferences[0].Kind != "IdentityConfig" {
		t.Errorf("owner = %+v", s.OwnerReferences)
	}
	if res, err := a.EnsureCredentials(ctx, in); err != nil || res.Written {
		t.Fatalf("unchanged run wrote: %+v %v", res, err)
	}

	in.Rotate = "2026-01-01"
	res, err = a.EnsureCredentials(ctx, in)
	if err != nil || !res.Rotated || !res.Written {
		t.Fatalf("rotation: %+v %v", res, err)
	}
	rotated, _ := kc.ClientSecret("odari", "pc")
	if rotated == want || string(secret().Data["client_secret"]) != rotated {
		t.Fatal("the Secret does not hold the regenerated secret")
	}
	if secret().UID != s.UID {
		t.Error("the Secret was replaced, not updated in place")
	}
	if res, err := a.EnsureCredentials(ctx, in); err != nil || res.Rotated || res.Written {
		t.Fatalf("the same annotation rotated twice: %+v %v", res, err)
	}

	// Someone regenerated the secret in Keycloak's console: repaired.
	g, tok := adminClient(t, kc)
	cs, _ := g.GetClients(ctx, tok, "odari", gocloak.GetClientsParams{ClientID: gocloak.StringP("pc")})
	if _, err := g.RegenerateClientSecret(ctx, tok, "odari", *cs[0].ID); err != nil {
		t.Fatal(err)
	}
	if res, err := a.EnsureCredentials(ctx, in); err != nil || !res.Written || res.Rotated {
		t.Fatalf("drift: %+v %v", res, err)
	}
	now, _ := kc.ClientSecret("odari", "pc")
	if string(secret().Data["client_secret"]) != now {
		t.Error("drifted secret not repaired")
	}
}

func TestDeleteIdentityToleratesMissing(t *testing.T) {
	a, kc, core := newIdentityFixture(t, identityAdminPassword)
	ctx := context.Background()
	if _, err := a.EnsureIdentity(ctx, EnsureIdentityInput{Ref: icRef("pc"), Desired: desired(t, "pc", map[string]any{"canvasSystemRole": "Admin"})}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.EnsureCredentials(ctx, EnsureCredentialsInput{Ref: icRef("pc"), UID: "u", ClientID: "pc"}); err != nil {
		t.Fatal(err)
	}
	res, err := a.DeleteIdentity(ctx, DeleteIdentityInput{Ref: icRef("pc"), UID: "u", ClientID: "pc"})
	if err != nil || !res.ClientDeleted || !res.SecretDeleted {
		t.Fatalf("delete: %+v %v", res, err)
	}
	if _, ok := kc.ClientSecret("odari", "pc"); ok {
		t.Error("client still in Keycloak")
	}
	if _, err := core.CoreV1().Secrets("components").Get(ctx, "pc-secret", metav1.GetOptions{}); err == nil {
		t.Error("Secret still there")
	}
	res, err = a.DeleteIdentity(ctx, DeleteIdentityInput{Ref: icRef("pc"), ClientID: "pc"})
	if err != nil || res.ClientDeleted || res.SecretDeleted {
		t.Fatalf("second delete: %+v %v", res, err)
	}
}

func TestIdentityErrorsAreClassifiedAndLeakNoSecret(t *testing.T) {
	ctx := context.Background()
	in := EnsureIdentityInput{Ref: icRef("pc"), Desired: identity.Desired{ClientID: "pc", CanvasSystemRole: "Admin", Roles: []identity.Role{{Name: "Admin"}}}}

	a, _, _ := newIdentityFixture(t, "wrong-password-value")
	_, err := a.EnsureIdentity(ctx, in)
	assertAppError(t, err, ErrTypeKeycloakUnauthorized, true)
	if strings.Contains(err.Error(), "wrong-password-value") {
		t.Errorf("error leaks the password: %v", err)
	}

	a, kc, _ := newIdentityFixture(t, identityAdminPassword)
	kc.SetUnavailable(http.StatusServiceUnavailable)
	_, err = a.EnsureIdentity(ctx, in)
	assertAppError(t, err, ErrTypeKeycloakUnavailable, false)
	kc.SetUnavailable(0)
	kc.Down()
	_, err = a.DeleteIdentity(ctx, DeleteIdentityInput{Ref: icRef("pc"), ClientID: "pc"})
	assertAppError(t, err, ErrTypeKeycloakUnavailable, false)
	if !strings.Contains(err.Error(), "unreachable") {
		t.Errorf("message does not say why: %v", err)
	}

	a.Config.AdminSecretName = "missing"
	_, err = a.EnsureIdentity(ctx, in)
	assertAppError(t, err, ErrTypeKeycloakMisconfigured, true)
}

func assertAppError(t *testing.T, err error, typ string, nonRetryable bool) {
	t.Helper()
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) {
		t.Fatalf("error %v is not an application error", err)
	}
	if appErr.Type() != typ || appErr.NonRetryable() != nonRetryable {
		t.Fatalf("error type %s non-retryable %v, want %s %v: %v", appErr.Type(), appErr.NonRetryable(), typ, nonRetryable, err)
	}
}

// A kube-apiserver restart while an IdentityConfig is reconciled: the admin
// Secret read waits for the apiserver instead of spending the identity
// activities' Keycloak-sized retry budget, and a missing Secret is final at
// once.
func TestAdminSecretIsReadThroughAnAPIServerRestart(t *testing.T) {
	ctx := context.Background()
	in := EnsureIdentityInput{Ref: icRef("pc"), Desired: identity.Desired{ClientID: "pc", CanvasSystemRole: "Admin", Roles: []identity.Role{{Name: "Admin"}}}}
	a, _, core := newIdentityFixture(t, identityAdminPassword)
	reads := 0
	core.PrependReactor("get", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
		reads++
		switch reads {
		case 1:
			return true, nil, errors.New(`Get "https://127.0.0.1:6443/api/v1/namespaces/canvas/secrets/keycloak-admin": dial tcp 127.0.0.1:6443: connect: connection refused`)
		case 2:
			return true, nil, apierrors.NewServiceUnavailable("the apiserver is starting")
		}
		return false, nil, nil
	})
	if _, err := a.EnsureIdentity(ctx, in); err != nil {
		t.Fatalf("EnsureIdentity through a restart: %v", err)
	}
	if reads != 3 {
		t.Errorf("%d reads of the admin Secret, want 3 (two during the restart)", reads)
	}

	a, _, core = newIdentityFixture(t, identityAdminPassword)
	a.Config.AdminSecretName = "missing"
	reads = 0
	core.PrependReactor("get", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
		reads++
		return false, nil, nil
	})
	_, err := a.EnsureIdentity(ctx, in)
	assertAppError(t, err, ErrTypeKeycloakMisconfigured, true)
	if reads != 1 {
		t.Errorf("%d reads of a missing admin Secret, want 1: a 404 is not an outage", reads)
	}
}

// On a first install (Fresh, no rotation asked for) the credentials Secret
// is created without being read (a create, unlike an apply, cannot land
// on a Secret that is someone else's); repeating it (a retried attempt
// whose write landed) reads the same Secret and writes nothing. With a
// rotation asked for, it is read first, since the rotated-for annotation
// decides the rotation.
func TestEnsureCredentialsOnAFreshInstallWritesWithoutReading(t *testing.T) {
	a, kc, core := newIdentityFixture(t, identityAdminPassword)
	ctx := context.Background()
	if _, err := a.EnsureIdentity(ctx, EnsureIdentityInput{Ref: icRef("pc"), Desired: desired(t, "pc", map[string]any{"canvasSystemRole": "Admin"})}); err != nil {
		t.Fatal(err)
	}
	secretRequests := func() []string {
		var verbs []string
		for _, act := range core.Actions() {
			if act.GetNamespace() == "components" && act.GetResource().Resource == "secrets" {
				verbs = append(verbs, act.GetVerb())
			}
		}
		core.ClearActions()
		return verbs
	}
	in := EnsureCredentialsInput{Ref: icRef("pc"), UID: "ic-uid", ClientID: "pc", Fresh: true}
	for _, attempt := range []struct{ name, requests string }{{"first", "create"}, {"repeated", "create get"}} {
		res, err := a.EnsureCredentials(ctx, in)
		if err != nil || res.Written != (attempt.name == "first") {
			t.Fatalf("%s: %+v %v", attempt.name, res, err)
		}
		if got := strings.Join(secretRequests(), " "); got != attempt.requests {
			t.Errorf("%s: Secret requests %v, want %s", attempt.name, got, attempt.requests)
		}
		s, err := core.CoreV1().Secrets("components").Get(ctx, "pc-secret", metav1.GetOptions{})
		want, _ := kc.ClientSecret("odari", "pc")
		if err != nil || string(s.Data["client_secret"]) != want || string(s.Data["client_id"]) != "pc" {
			t.Fatalf("%s: Secret %v, err %v", attempt.name, s.Data["client_id"], err)
		}
		core.ClearActions()
	}
	in.Rotate = "2026-01-01"
	if res, err := a.EnsureCredentials(ctx, in); err != nil || !res.Rotated {
		t.Fatalf("rotation: %+v %v", res, err)
	}
	if got := secretRequests(); len(got) != 2 || got[0] != "get" {
		t.Errorf("a rotation made Secret requests %v, want a read, then the apply", got)
	}
}
