package integration

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/odaflow/odaflow/oda"
	"github.com/odaflow/odaflow/tests/fixtures"
)

func TestEventNotificationsBecomeChildrenWithInitialStatus(t *testing.T) {
	ns := "it-events"
	createNamespace(t, ns)
	name := "events-productcatalogmanagement"
	comp := fixtures.WithOwnPaths(fixtures.WithoutDependentAPIs(fixtures.ProductCatalog(ns, name)))
	spec := fixtures.Spec(comp)
	spec["eventNotification"] = map[string]any{
		"publishedEvents": []any{map[string]any{
			"name": "productCreated", "description": "a product was created",
			"specification": []any{map[string]any{"url": "https://example.com/events.yaml", "version": "1.0.0", "apiType": "openapi", "implementation": "ctk-prodcatapi", "hub": "/hub", "port": int64(8080)}},
		}},
		"subscribedEvents": []any{map[string]any{
			"name": "partyUpdated", "description": "a party changed",
			"specification": []any{map[string]any{"url": "https://example.com/party.yaml", "version": "1.0.0", "apiType": "openapi", "implementation": "ctk-prodcatapi", "callback": "/listener", "port": int64(8080)}},
		}},
	}
	created := create(t, oda.KindComponent, comp)
	for _, c := range []struct {
		kind oda.Kind
		name string
	}{{oda.KindPublishedNotification, name + "-productcreated"}, {oda.KindSubscribedNotification, name + "-partyupdated"}} {
		eventually(t, 30*time.Second, c.kind.Name+" "+c.name+" initialising", func() (bool, string) {
			u, err := get(c.kind, ns, c.name)
			if err != nil {
				return false, err.Error()
			}
			st, _, _ := unstructured.NestedString(u.Object, "status", "status")
			owners := u.GetOwnerReferences()
			ok := st == "initializing" && len(owners) == 1 && owners[0].UID == created.GetUID() && u.GetLabels()[oda.LabelComponentName] == name
			return ok, fmt.Sprintf("status=%q owners=%v labels=%v", st, owners, u.GetLabels())
		})
	}
	u := waitPhase(t, ns, name, oda.StatusCompCon, 30*time.Second)
	if evs, _, _ := unstructured.NestedSlice(u.Object, "status", "publishedEvents"); len(evs) != 1 {
		t.Errorf("status.publishedEvents = %v", evs)
	}
}
