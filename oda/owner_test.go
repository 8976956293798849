package oda

import (
	"strings"
	"testing"
)

// TestRefusalNamesNoOtherTenant: a refusal is shown to the refused
// resource's tenant, so it never names another namespace or its objects.
func TestRefusalNamesNoOtherTenant(t *testing.T) {
	me := OwnerRecord{Namespace: "team-b", Name: "productcatalog", UID: "uid-b"}
	for _, tc := range []struct {
		name     string
		claim    Claim
		recorded *OwnerRecord
		want     []string
		never    []string
	}{
		{"another namespace", ClaimForeign, &OwnerRecord{Namespace: "team-a", Name: "victim-pc", UID: "uid-a"},
			[]string{"belongs to a resource in another namespace", "not to team-b/productcatalog"}, []string{"team-a", "victim-pc", "uid-a"}},
		{"the same namespace, another resource", ClaimForeign, &OwnerRecord{Namespace: "team-b", Name: "other", UID: "uid-o"},
			[]string{"belongs to team-b/other", "not to team-b/productcatalog"}, []string{"uid-o"}},
		{"no owner recorded", ClaimUnmarked, nil, []string{"records no owner", AnnotationAdopt}, nil},
		{"owned", ClaimOwned, &me, nil, []string{"belongs"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			msg := Refusal("Keycloak client productcatalog", tc.claim, tc.recorded, me)
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("refusal %q does not say %q", msg, w)
				}
			}
			for _, n := range tc.never {
				if strings.Contains(msg, n) {
					t.Errorf("refusal %q names %q", msg, n)
				}
			}
		})
	}
}
