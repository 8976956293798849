package uninstallguard

import (
	"strings"
	"testing"
)

func TestDecide(t *testing.T) {
	for _, tc := range []struct {
		name string
		objs []Object
		want string // "" allows the uninstall; else the whole message
	}{
		{"nothing", nil, ""},
		{"only objects already going away without odaflow", []Object{
			{Kind: "Component", Namespace: "components", Name: "a", Deleting: true},
			{Kind: "ExposedAPI", Namespace: "components", Name: "a-api", Deleting: true},
		}, ""},
		{"one Component", []Object{{Kind: "Component", Namespace: "components", Name: "a"}},
			"refusing to uninstall odaflow: 1 ODA resource remains (1 Component in components); " +
				"without odaflow their deletion hangs on the finalizer oda.tmforum.org/odaflow. " +
				"Delete them first (kubectl delete components --all -A --wait, then the same for any other kind listed) " +
				"or skip this check with --set uninstallGuard.enabled=false"},
		{"a deletion waiting for odaflow's cleanup blocks", []Object{
			{Kind: "IdentityConfig", Namespace: "odacompns-a", Name: "a", Deleting: true, OdaflowFinalizer: true},
		}, "refusing to uninstall odaflow: 1 ODA resource remains (1 IdentityConfig in odacompns-a);"},
		{"counts per kind in the order of oda.Kinds, namespaces sorted", []Object{
			{Kind: "ExposedAPI", Namespace: "odacompns-b", Name: "b-api"},
			{Kind: "Component", Namespace: "odacompns-b", Name: "b"},
			{Kind: "Component", Namespace: "components", Name: "a"},
			{Kind: "ExposedAPI", Namespace: "components", Name: "a-api"},
			{Kind: "ExposedAPI", Namespace: "components", Name: "a-api2"},
			{Kind: "Component", Namespace: "components", Name: "gone", Deleting: true},
		}, "5 ODA resources remain (2 Components in components, odacompns-b; 3 ExposedAPIs in components, odacompns-b);"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Decide(tc.objs)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && err == nil:
				t.Fatalf("allowed, want refusal %q", tc.want)
			case tc.want != "" && !strings.Contains(err.Error(), tc.want):
				t.Fatalf("message\n%s\nwant it to contain\n%s", err, tc.want)
			}
		})
	}
}
