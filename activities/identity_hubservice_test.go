package activities

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/odaflow/odaflow/identity"
	"github.com/odaflow/odaflow/listener/hubtest"
)

// TestExternalNameHubIsRefused: a hub whose Service is an ExternalName
// alias (the cluster DNS would send the worker, listener token and all,
// to any host) is neither registered with nor unregistered from; a
// ClusterIP Service, or none yet, is called as before.
func TestExternalNameHubIsRefused(t *testing.T) {
	hub := hubtest.New()
	defer hub.Close()
	keys := [][]byte{hubKey}
	ctx := context.Background()
	svc := func(name string, typ corev1.ServiceType) *corev1.Service {
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "components"},
			Spec: corev1.ServiceSpec{Type: typ, ExternalName: map[bool]string{true: "metadata.attacker.example"}[typ == corev1.ServiceTypeExternalName]}}
	}
	core := fake.NewClientset(svc("alias", corev1.ServiceTypeExternalName), svc("plain", corev1.ServiceTypeClusterIP))
	a := hubIdentity(hub.Client(), &keys)
	a.Kube = &Kube{Core: core}
	url := func(service string) string {
		return identity.HubURL("components", identity.APIRef{Implementation: service, Path: "/c/partyRoleManagement/v4", Port: 8080})
	}

	_, err := a.RegisterHub(ctx, RegisterHubInput{Ref: icRef("pc"), Hub: identity.Hub{API: identity.APIPartyRole, URL: url("alias")}})
	assertAppError(t, err, ErrTypeHubRefused, true)
	if n := len(hub.Subscriptions()); n != 0 {
		t.Fatalf("the worker called an ExternalName hub: %d subscriptions", n)
	}
	_, err = a.UnregisterHub(ctx, UnregisterHubInput{Ref: icRef("pc"), Subscription: HubSubscription{API: identity.APIPartyRole, HubURL: url("alias"), ID: "sub-1"}})
	assertAppError(t, err, ErrTypeHubRefused, true)

	for _, service := range []string{"plain", "not-yet"} {
		if _, err := a.RegisterHub(ctx, RegisterHubInput{Ref: icRef("pc-" + service), Hub: identity.Hub{API: identity.APIPartyRole, URL: url(service)}}); err != nil {
			t.Errorf("hub Service %s: %v", service, err)
		}
	}
	if n := len(hub.Subscriptions()); n != 2 {
		t.Errorf("subscriptions = %d, want 2 (ClusterIP and not-yet-created Services)", n)
	}
}
