package testkit

import (
	"testing"

	"github.com/odaflow/odaflow/api"
	"github.com/odaflow/odaflow/oda"
	"github.com/odaflow/odaflow/validate"
	"github.com/odaflow/odaflow/webhook/conversion"
)

// TestEveryChartDecodes renders every test-kit chart and decodes its
// Component (converted to v1) with the typed API, then each child odaflow
// would create with its kind's type: none may report a problem. The one
// chart the CRD refuses must report one.
func TestEveryChartDecodes(t *testing.T) {
	for _, c := range Charts(t) {
		t.Run(c.Name, func(t *testing.T) {
			comps := MustRender(t, c, Release, Namespace).Components()
			if len(comps) != 1 {
				t.Fatalf("the chart renders %d Components, want 1", len(comps))
			}
			obj := comps[0].Object
			if comps[0].GetAPIVersion() != conversion.V1 {
				var err error
				if obj, err = conversion.Convert(obj, conversion.V1); err != nil {
					t.Fatal(err)
				}
			}
			spec, _ := obj["spec"].(map[string]any)
			_, errs := api.Decode[api.ComponentSpec](spec, "spec")
			if _, refused := CRDRefused[c.Name]; refused {
				if len(errs) == 0 {
					t.Fatal("listed as refused by the CRD, but its spec decodes")
				}
				return
			}
			if len(errs) > 0 {
				t.Fatalf("the Component decodes with problems: %v", errs)
			}
			for _, ch := range validate.Component(obj, Namespace).Children {
				if errs := decodeChild(ch); len(errs) > 0 {
					t.Errorf("child %s %s decodes with problems: %v", ch.Kind, ch.Name, errs)
				}
			}
		})
	}
}

func decodeChild(c oda.Child) api.FieldErrors {
	var errs api.FieldErrors
	switch c.Kind {
	case oda.KindExposedAPI.Name:
		_, errs = api.Decode[api.ExposedAPISpec](c.Spec, "spec")
	case oda.KindDependentAPI.Name:
		_, errs = api.Decode[api.DependentAPISpec](c.Spec, "spec")
	case oda.KindIdentityConfig.Name:
		_, errs = api.Decode[api.IdentityConfigSpec](c.Spec, "spec")
	case oda.KindSecretsManagement.Name:
		_, errs = api.Decode[api.SecretsManagementSpec](c.Spec, "spec")
	case oda.KindPublishedNotification.Name:
		_, errs = api.Decode[api.PublishedNotificationSpec](c.Spec, "spec")
	case oda.KindSubscribedNotification.Name:
		_, errs = api.Decode[api.SubscribedNotificationSpec](c.Spec, "spec")
	default:
		errs.Add("kind", "unknown kind %q", c.Kind)
	}
	return errs
}
