package integration

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/Nerzal/gocloak/v13"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/temporalproto"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/odaflow/odaflow/internal/localstack"
	"github.com/odaflow/odaflow/internal/testartifacts"
	"github.com/odaflow/odaflow/oda"
	"github.com/odaflow/odaflow/tests/fixtures"
)

// historyText is a workflow's whole history (every run) as JSON text.
func historyText(t *testing.T, workflowID string) string {
	t.Helper()
	var b strings.Builder
	it := stack.tc.GetWorkflowHistory(context.Background(), workflowID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatalf("history of %s: %v", workflowID, err)
		}
		data, err := temporalproto.CustomJSONMarshalOptions{}.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(data)
	}
	return b.String()
}

// assertSecretsAbsent fails when any secret value appears in the histories
// of the workflows, in plain text or base64 at any alignment (how
// payloads are encoded; testartifacts.Forms).
func assertSecretsAbsent(t *testing.T, secrets map[string]string, workflowIDs ...string) {
	t.Helper()
	for _, id := range workflowIDs {
		text := historyText(t, id)
		if len(text) < 100 {
			t.Fatalf("history of %s is suspiciously short (%d bytes): the scan would prove nothing", id, len(text))
		}
		for what, value := range secrets {
			if value == "" {
				t.Fatalf("secret %s is empty: the scan would prove nothing", what)
			}
			// The run's secrets scan looks for it in every history and log.
			if err := testartifacts.RegisterSecret(what, value); err != nil {
				t.Fatal(err)
			}
			for _, form := range testartifacts.Forms(value) {
				if strings.Contains(text, form) {
					t.Errorf("the %s appears in the history of %s", what, id)
				}
			}
		}
	}
}

// TestIdentityCredentialsRotateAndNeverEnterHistory, on the real Keycloak:
// a Component's client and credentials Secret, a rotation on request, no
// secret in any history, and the client deleted with the Component.
func TestIdentityCredentialsRotateAndNeverEnterHistory(t *testing.T) {
	needRealKeycloak(t)
	kc := realAdmin(t)
	ns := "it-ridentity"
	name := "idt-productcatalogmanagement"
	readyNamespace(t, ns)
	create(t, oda.KindComponent, fixtures.WithOwnPaths(fixtures.WithoutDependentAPIs(fixtures.ProductCatalog(ns, name))))
	waitRealIdentity(t, kc, ns, name)
	waitPhase(t, ns, name, oda.StatusComplete, 60*time.Second)

	secrets := stack.core.CoreV1().Secrets(ns)
	first, err := secrets.Get(context.Background(), name+"-secret", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	oldSecret := string(first.Data["client_secret"])
	if inKeycloak, _ := kc.ClientSecret(name); inKeycloak != oldSecret {
		t.Fatalf("the Secret's client_secret does not match Keycloak's")
	}
	// The IdentityConfig controls it, and is its only owner: the Component
	// reaches it through the IdentityConfig, so the Secret's label asks for
	// no adoption (which would cost two writes per Component).
	onlyOwner := func(s *corev1.Secret) {
		t.Helper()
		refs := s.GetOwnerReferences()
		if len(refs) != 1 || refs[0].Kind != oda.KindIdentityConfig.Name || refs[0].Name != name || refs[0].Controller == nil || !*refs[0].Controller {
			t.Fatalf("owner references = %+v, want the IdentityConfig as controller and only owner", refs)
		}
	}
	onlyOwner(first)

	// Rotation on request: Keycloak issues a new secret and the Secret is
	// updated in place (same object, so mounted readers see the new value).
	mergePatch(t, oda.KindIdentityConfig, ns, name, `{"metadata":{"annotations":{"`+oda.AnnotationRotateCredentials+`":"2026-12-02"}}}`)
	var newSecret string
	var rotated *corev1.Secret
	eventually(t, 60*time.Second, "rotated credentials", func() (bool, string) {
		s, err := secrets.Get(context.Background(), name+"-secret", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		rotated = s
		newSecret = string(s.Data["client_secret"])
		inKeycloak, _ := kc.ClientSecret(name)
		return newSecret != oldSecret && newSecret == inKeycloak && s.UID == first.UID, "not rotated yet"
	})

	// Seconds later, and after a rewrite, still nobody else's.
	onlyOwner(rotated)

	assertSecretsAbsent(t, map[string]string{
		"old client secret": oldSecret, "rotated client secret": newSecret, "Keycloak admin password": realKC.kc.AdminPassword(),
	}, oda.WorkflowID(oda.KindIdentityConfig.Name, ns, name), oda.WorkflowID(oda.KindComponent.Name, ns, name))

	// Uninstall deletes the client in Keycloak; the Secret goes with its owner.
	deleteComponent(t, ns, name)
	eventually(t, 60*time.Second, "Keycloak client deleted", func() (bool, string) {
		_, ok := kc.ClientSecret(name)
		return !ok, "client still in Keycloak"
	})
	idID := oda.WorkflowID(oda.KindIdentityConfig.Name, ns, name)
	eventually(t, 30*time.Second, "the IdentityConfig's lifecycle closed", func() (bool, string) {
		st, err := workflowStatus(idID)
		return err == nil && st == enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED, fmt.Sprint(st, err)
	})
	recordHistory(t, idID, "identityconfig-rotate-delete.json")
}

// TestIdentityRolesAndDriftOnRealKeycloak, as a Keycloak administrator
// would check an operator: an IdentityConfig's client with service
// accounts, its static roles, the canvasSystemRole on both the component
// client and canvassystem, and canvassystem's service account really
// granted it; what an administrator breaks by hand (a role deleted, the
// grant revoked) repaired by the drift check; a role dropped from the spec
// deleted; the client deleted with the IdentityConfig, the shared
// canvassystem role kept.
func TestIdentityRolesAndDriftOnRealKeycloak(t *testing.T) {
	needRealKeycloak(t)
	kc := realAdmin(t)
	ctx := context.Background()
	ns, name := "it-rroles", "roles-pc"
	createNamespace(t, ns)
	spec := map[string]any{"canvasSystemRole": "Admin", "componentRole": []any{
		map[string]any{"name": "cat1owner", "description": "owns catalogue 1"}, map[string]any{"name": "cat2owner"},
	}}
	create(t, oda.KindIdentityConfig, child(oda.KindIdentityConfig, ns, name, spec))
	want := []string{"Admin", "cat1owner", "cat2owner"}
	inPlace := func() (bool, string) {
		roles, ok := kc.ClientRoles(name)
		grants := kc.canvasGrants(name)
		return ok && slices.Equal(roles, want) && slices.Equal(grants, []string{"Admin"}),
			fmt.Sprintf("client present %v, roles %v, canvassystem holds %v", ok, roles, grants)
	}
	eventually(t, 60*time.Second, "client, roles and the canvassystem grant", inPlace)
	c := kc.client(name)
	if !gocloak.PBool(c.ServiceAccountsEnabled) || gocloak.PBool(c.PublicClient) {
		t.Errorf("client %s: serviceAccountsEnabled %v, publicClient %v; want a confidential client with a service account",
			name, gocloak.PBool(c.ServiceAccountsEnabled), gocloak.PBool(c.PublicClient))
	}
	canvasRoles, _ := kc.ClientRoles(localstack.CanvasSystemClient)
	if !slices.Contains(canvasRoles, "Admin") {
		t.Errorf("canvassystem roles %v lack Admin (the BDD test's check)", canvasRoles)
	}
	role, err := kc.kc.GetClientRole(ctx, kc.token(), kc.realm, *c.ID, "cat1owner")
	if err != nil || gocloak.PString(role.Description) != "owns catalogue 1" {
		t.Errorf("cat1owner: %v, description %q", err, gocloak.PString(role.Description))
	}

	// An administrator deletes a role and revokes the grant by hand.
	if err := kc.kc.DeleteClientRole(ctx, kc.token(), kc.realm, *c.ID, "cat2owner"); err != nil {
		t.Fatal(err)
	}
	canvas := kc.client(localstack.CanvasSystemClient)
	sa, err := kc.kc.GetClientServiceAccount(ctx, kc.token(), kc.realm, *canvas.ID)
	if err != nil {
		t.Fatal(err)
	}
	admin, err := kc.kc.GetClientRole(ctx, kc.token(), kc.realm, *c.ID, "Admin")
	if err != nil {
		t.Fatal(err)
	}
	if err := kc.kc.DeleteClientRolesFromUser(ctx, kc.token(), kc.realm, *c.ID, *sa.ID, []gocloak.Role{*admin}); err != nil {
		t.Fatal(err)
	}
	if ok, _ := inPlace(); ok {
		t.Fatal("the hand-made drift did not take")
	}
	eventually(t, 3*realDriftInterval+30*time.Second, "the drift check's repair", inPlace)

	// The spec drops a role: Keycloak follows.
	mergePatch(t, oda.KindIdentityConfig, ns, name, `{"spec":{"componentRole":[{"name":"cat1owner","description":"owns catalogue 1"}]}}`)
	want = []string{"Admin", "cat1owner"}
	eventually(t, 60*time.Second, "cat2owner deleted", inPlace)

	if err := stack.dyn.Resource(oda.KindIdentityConfig.GVR()).Namespace(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "the client deleted", func() (bool, string) {
		return kc.client(name) == nil, "client still in Keycloak"
	})
	if canvasRoles, _ := kc.ClientRoles(localstack.CanvasSystemClient); !slices.Contains(canvasRoles, "Admin") {
		t.Errorf("the shared canvassystem role Admin went with one component: %v", canvasRoles)
	}
}
