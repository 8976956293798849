package activities

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/odaflow/odaflow/identity"
	kcdouble "github.com/odaflow/odaflow/internal/doubles/keycloak"
	"github.com/odaflow/odaflow/oda"
)

func tenantRef(ns, name string) oda.Ref {
	return oda.Ref{Kind: oda.KindIdentityConfig.Name, Namespace: ns, Name: name}
}

func snapshot(t *testing.T, kc *kcdouble.Server, clientID string) string {
	t.Helper()
	s, ok := kc.ClientSnapshot("odari", clientID)
	if !ok {
		t.Fatalf("client %s is gone", clientID)
	}
	return s
}

func wantOwnedElsewhere(t *testing.T, err error, mentions ...string) {
	t.Helper()
	assertAppError(t, err, ErrTypeOwnedElsewhere, true)
	for _, m := range mentions {
		if !strings.Contains(err.Error(), m) {
			t.Errorf("refusal does not mention %q: %v", m, err)
		}
	}
}

// wantNotNamed checks a refusal, which the refused resource's tenant
// reads, does not name another tenant's namespace.
func wantNotNamed(t *testing.T, err error, other string) {
	t.Helper()
	if err != nil && strings.Contains(err.Error(), other) {
		t.Errorf("refusal names %q: %v", other, err)
	}
}

// Two teams install a component of the same name in their namespaces: the
// second is refused the first one's client, with the reason, whatever it
// tries (ensure, adopt, credentials, role events, delete), and the first
// one's client, secret and Secret stay exactly as they were.
func TestClientOfAnotherNamespaceIsNeverTakenOver(t *testing.T) {
	a, kc, core := newIdentityFixture(t, identityAdminPassword)
	ctx := context.Background()
	spec := map[string]any{"canvasSystemRole": "Admin", "componentRole": []any{map[string]any{"name": "pcadmin"}}}
	victim, attacker := tenantRef("team-a", "productcatalog"), tenantRef("team-b", "productcatalog")
	if _, err := a.EnsureIdentity(ctx, EnsureIdentityInput{Ref: victim, UID: "uid-a", Desired: desired(t, "productcatalog", spec)}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.EnsureCredentials(ctx, EnsureCredentialsInput{Ref: victim, UID: "uid-a", ClientID: "productcatalog", Fresh: true}); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, kc, "productcatalog")
	for _, want := range []string{identity.OwnerNamespaceAttribute, `"team-a"`, identity.OwnerUIDAttribute, `"uid-a"`} {
		if !strings.Contains(before, want) {
			t.Errorf("the client does not record its owner (%s): %s", want, before)
		}
	}
	victimSecret, err := core.CoreV1().Secrets("team-a").Get(ctx, "productcatalog-secret", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if victimSecret.Labels[LabelManagedBy] != ManagedByValue {
		t.Errorf("the credentials Secret is not marked as odaflow's: %v", victimSecret.Labels)
	}

	other := map[string]any{"canvasSystemRole": "Admin", "componentRole": []any{map[string]any{"name": "stolen"}}}
	for _, adopt := range []bool{false, true} {
		_, err := a.EnsureIdentity(ctx, EnsureIdentityInput{Ref: attacker, UID: "uid-b", Adopt: adopt, Desired: desired(t, "productcatalog", other), PreviousRoles: []string{"pcadmin"}})
		wantOwnedElsewhere(t, err, "a resource in another namespace", "team-b/productcatalog")
		wantNotNamed(t, err, "team-a")
		_, err = a.EnsureCredentials(ctx, EnsureCredentialsInput{Ref: attacker, UID: "uid-b", ClientID: "productcatalog", Fresh: true, Adopt: adopt})
		wantOwnedElsewhere(t, err, "a resource in another namespace")
		wantNotNamed(t, err, "team-a")
		_, err = a.EnsureCredentials(ctx, EnsureCredentialsInput{Ref: attacker, UID: "uid-b", ClientID: "productcatalog", Rotate: "now", Adopt: adopt})
		wantOwnedElsewhere(t, err, "a resource in another namespace")
		wantNotNamed(t, err, "team-a")
		_, err = a.ApplyRoleEvent(ctx, ApplyRoleEventInput{Ref: attacker, ClientID: "productcatalog", Event: identity.RoleEvent{Action: identity.RoleRemove, Role: identity.Role{Name: "pcadmin"}}})
		wantOwnedElsewhere(t, err, "a resource in another namespace")
		wantNotNamed(t, err, "team-a")
		res, err := a.DeleteIdentity(ctx, DeleteIdentityInput{Ref: attacker, UID: "uid-b", ClientID: "productcatalog", Adopt: adopt})
		if err != nil {
			t.Fatalf("deleting the attacker's IdentityConfig must go ahead: %v", err)
		}
		if res.ClientDeleted || res.SecretDeleted || len(res.Kept) == 0 {
			t.Errorf("delete of the attacker: %+v", res)
		}
	}
	if after := snapshot(t, kc, "productcatalog"); after != before {
		t.Errorf("the victim's client changed:\nbefore %s\nafter  %s", before, after)
	}
	if _, err := core.CoreV1().Secrets("team-b").Get(ctx, "productcatalog-secret", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the attacker got a credentials Secret: %v", err)
	}
	if s, err := core.CoreV1().Secrets("team-a").Get(ctx, "productcatalog-secret", metav1.GetOptions{}); err != nil || s.ResourceVersion != victimSecret.ResourceVersion {
		t.Errorf("the victim's Secret changed: %v", err)
	}

	// The owner itself: a re-created IdentityConfig (new uid, same name
	// and namespace) is the same tenant and keeps its client.
	if _, err := a.EnsureIdentity(ctx, EnsureIdentityInput{Ref: victim, UID: "uid-a2", Desired: desired(t, "productcatalog", spec)}); err != nil {
		t.Fatalf("the owner was refused its own client: %v", err)
	}
	if s := snapshot(t, kc, "productcatalog"); !strings.Contains(s, `"uid-a2"`) {
		t.Errorf("the new uid is not recorded: %s", s)
	}
}

// The Canvas's own client and Keycloak's built-in ones carry no owner
// record: even an IdentityConfig that gets past the name check cannot take
// them, and the canvassystem secret is never read into a Secret.
func TestReservedClientsAreRefused(t *testing.T) {
	for _, name := range identity.ReservedClients {
		if _, err := identity.FromSpec(name, map[string]any{"canvasSystemRole": "Admin"}); err == nil || !strings.Contains(err.Error(), "reserved") {
			t.Errorf("FromSpec(%q) = %v, want a refusal", name, err)
		}
	}
	a, kc, core := newIdentityFixture(t, identityAdminPassword)
	ctx := context.Background()
	before := snapshot(t, kc, identity.CanvasSystemClient)
	ref := tenantRef("team-b", identity.CanvasSystemClient)
	d := identity.Desired{ClientID: identity.CanvasSystemClient, CanvasSystemRole: "Admin", Roles: []identity.Role{{Name: "Admin"}}}
	_, err := a.EnsureIdentity(ctx, EnsureIdentityInput{Ref: ref, UID: "uid-b", Desired: d, Adopt: true})
	wantOwnedElsewhere(t, err, "records no owner")
	_, err = a.EnsureCredentials(ctx, EnsureCredentialsInput{Ref: ref, UID: "uid-b", ClientID: identity.CanvasSystemClient, Fresh: true, Adopt: true})
	wantOwnedElsewhere(t, err)
	if _, err := a.DeleteIdentity(ctx, DeleteIdentityInput{Ref: ref, UID: "uid-b", ClientID: identity.CanvasSystemClient}); err != nil {
		t.Fatal(err)
	}
	if after := snapshot(t, kc, identity.CanvasSystemClient); after != before {
		t.Errorf("canvassystem changed:\nbefore %s\nafter  %s", before, after)
	}
	if _, err := core.CoreV1().Secrets("team-b").Get(ctx, "canvassystem-secret", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("canvassystem's secret was written out: %v", err)
	}
}

// A client the Python Canvas created records no owner. odaflow takes it
// over only when the IdentityConfig asks for it and its namespace already
// holds the client's current secret; never by default.
func TestPythonCanvasClientIsAdoptedOnlyExplicitlyAndWithItsSecret(t *testing.T) {
	a, kc, core := newIdentityFixture(t, identityAdminPassword)
	ctx := context.Background()
	if _, err := kc.AddClient("odari", map[string]any{"clientId": "legacy-pc", "serviceAccountsEnabled": true}); err != nil {
		t.Fatal(err)
	}
	ref := tenantRef("components", "legacy-pc")
	in := EnsureIdentityInput{Ref: ref, UID: "uid-l", Desired: desired(t, "legacy-pc", map[string]any{"canvasSystemRole": "Admin"})}
	before := snapshot(t, kc, "legacy-pc")

	_, err := a.EnsureIdentity(ctx, in)
	wantOwnedElsewhere(t, err, "records no owner", oda.AnnotationAdopt)
	in.Adopt = true
	_, err = a.EnsureIdentity(ctx, in)
	wantOwnedElsewhere(t, err, "there is none")
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "legacy-pc-secret", Namespace: "components", OwnerReferences: []metav1.OwnerReference{{
			APIVersion: oda.APIVersion, Kind: oda.KindIdentityConfig.Name, Name: "legacy-pc", UID: types.UID("uid-l"),
		}}},
		Data: map[string][]byte{"client_id": []byte("legacy-pc"), "client_secret": []byte("a guess")},
	}
	if _, err := core.CoreV1().Secrets("components").Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err = a.EnsureIdentity(ctx, in)
	wantOwnedElsewhere(t, err, "does not hold the client's current secret")
	if after := snapshot(t, kc, "legacy-pc"); after != before {
		t.Errorf("a refused adoption changed the client:\nbefore %s\nafter  %s", before, after)
	}

	value, _ := kc.ClientSecret("odari", "legacy-pc")
	secret.Data["client_secret"] = []byte(value)
	if _, err := core.CoreV1().Secrets("components").Update(ctx, secret, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	res, err := a.EnsureIdentity(ctx, in)
	if err != nil || !res.Adopted || res.ClientCreated {
		t.Fatalf("adoption: %+v %v", res, err)
	}
	if s := snapshot(t, kc, "legacy-pc"); !strings.Contains(s, `"components"`) || !strings.Contains(s, `"uid-l"`) {
		t.Errorf("the adopted client records no owner: %s", s)
	}
	// Once: the next run finds it owned, with no adoption and no write.
	kc.ResetRequests()
	in.Adopt = false
	if res, err := a.EnsureIdentity(ctx, in); err != nil || res.Adopted || res.Changed() {
		t.Fatalf("second run: %+v %v", res, err)
	}
	if _, err := a.EnsureCredentials(ctx, EnsureCredentialsInput{Ref: ref, UID: "uid-l", ClientID: "legacy-pc"}); err != nil {
		t.Fatal(err)
	}
}

// The credentials Secret is written only over a Secret this IdentityConfig
// controls (or, with adoption, one that records no owner) and deleted only
// then.
func TestCredentialsSecretOfSomeoneElseIsLeftAlone(t *testing.T) {
	a, _, core := newIdentityFixture(t, identityAdminPassword)
	ctx := context.Background()
	ref := tenantRef("team-a", "pc")
	if _, err := a.EnsureIdentity(ctx, EnsureIdentityInput{Ref: ref, UID: "uid-pc", Desired: desired(t, "pc", map[string]any{"canvasSystemRole": "Admin"})}); err != nil {
		t.Fatal(err)
	}
	mine := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "pc-secret", Namespace: "team-a"},
		Data:       map[string][]byte{"tls.key": []byte("the team's own key")},
	}
	if _, err := core.CoreV1().Secrets("team-a").Create(ctx, mine, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, fresh := range []bool{true, false} {
		_, err := a.EnsureCredentials(ctx, EnsureCredentialsInput{Ref: ref, UID: "uid-pc", ClientID: "pc", Fresh: fresh})
		wantOwnedElsewhere(t, err, "Secret team-a/pc-secret", oda.AnnotationAdopt)
	}
	res, err := a.DeleteIdentity(ctx, DeleteIdentityInput{Ref: ref, UID: "uid-pc", ClientID: "pc"})
	if err != nil || !res.ClientDeleted || res.SecretDeleted {
		t.Fatalf("delete: %+v %v", res, err)
	}
	got, err := core.CoreV1().Secrets("team-a").Get(ctx, "pc-secret", metav1.GetOptions{})
	if err != nil || string(got.Data["tls.key"]) != "the team's own key" || len(got.Data) != 1 {
		t.Fatalf("the team's Secret was changed or deleted: %v %v", err, got)
	}

	// A Secret controlled by another object is refused even with adoption.
	got.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "x", UID: "cm-uid"}}
	if _, err := core.CoreV1().Secrets("team-a").Update(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.EnsureIdentity(ctx, EnsureIdentityInput{Ref: ref, UID: "uid-pc", Desired: desired(t, "pc", map[string]any{"canvasSystemRole": "Admin"})}); err != nil {
		t.Fatal(err)
	}
	_, err = a.EnsureCredentials(ctx, EnsureCredentialsInput{Ref: ref, UID: "uid-pc", ClientID: "pc", Adopt: true})
	wantOwnedElsewhere(t, err, "owned by another object")

	// With adoption, an unmarked Secret of that name is taken over.
	got.OwnerReferences = nil
	if _, err := core.CoreV1().Secrets("team-a").Update(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if res, err := a.EnsureCredentials(ctx, EnsureCredentialsInput{Ref: ref, UID: "uid-pc", ClientID: "pc", Adopt: true}); err != nil || !res.Written {
		t.Fatalf("adopting the Secret: %+v %v", res, err)
	}
	got, _ = core.CoreV1().Secrets("team-a").Get(ctx, "pc-secret", metav1.GetOptions{})
	if !ownedBy(got.OwnerReferences, "uid-pc") || string(got.Data["client_id"]) != "pc" {
		t.Errorf("adopted Secret: %+v", got)
	}
}
