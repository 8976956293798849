package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/temporalproto"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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

func TestIdentityCredentialsRotateAndNeverEnterHistory(t *testing.T) {
	ns := "it-identity"
	name := "idt-productcatalogmanagement"
	readyNamespace(t, ns)
	create(t, oda.KindComponent, fixtures.WithOwnPaths(fixtures.WithoutDependentAPIs(fixtures.ProductCatalog(ns, name))))
	waitIdentity(t, ns, name)
	waitPhase(t, ns, name, oda.StatusComplete, 60*time.Second)

	secrets := stack.core.CoreV1().Secrets(ns)
	first, err := secrets.Get(context.Background(), name+"-secret", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	oldSecret := string(first.Data["client_secret"])
	if inKeycloak, _ := stack.keycloak.ClientSecret(keycloakRealm, name); inKeycloak != oldSecret {
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
		inKeycloak, _ := stack.keycloak.ClientSecret(keycloakRealm, name)
		return newSecret != oldSecret && newSecret == inKeycloak && s.UID == first.UID, "not rotated yet"
	})

	// Seconds later, and after a rewrite, still nobody else's.
	onlyOwner(rotated)

	assertSecretsAbsent(t, map[string]string{
		"old client secret": oldSecret, "rotated client secret": newSecret, "Keycloak admin password": stack.keycloakPassword,
	}, oda.WorkflowID(oda.KindIdentityConfig.Name, ns, name), oda.WorkflowID(oda.KindComponent.Name, ns, name))

	// Uninstall deletes the client in Keycloak; the Secret goes with its owner.
	deleteComponent(t, ns, name)
	eventually(t, 60*time.Second, "Keycloak client deleted", func() (bool, string) {
		_, ok := stack.keycloak.ClientSecret(keycloakRealm, name)
		return !ok, "client still in Keycloak"
	})
	idID := oda.WorkflowID(oda.KindIdentityConfig.Name, ns, name)
	eventually(t, 30*time.Second, "the IdentityConfig's lifecycle closed", func() (bool, string) {
		st, err := workflowStatus(idID)
		return err == nil && st == enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED, fmt.Sprint(st, err)
	})
	recordHistory(t, idID, "identityconfig-rotate-delete.json")
}
