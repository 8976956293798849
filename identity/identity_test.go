package identity

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestFromSpec(t *testing.T) {
	tests := []struct {
		name    string
		ic      string
		spec    map[string]any
		want    Desired
		wantErr []string
	}{
		{
			name: "canvas system role only",
			ic:   "ctk-productcatalogmanagement",
			spec: map[string]any{"canvasSystemRole": "Admin"},
			want: Desired{ClientID: "ctk-productcatalogmanagement", CanvasSystemRole: "Admin", Roles: []Role{{Name: "Admin"}}},
		},
		{
			name: "static roles sorted, canvas role included",
			ic:   "static-productcatalogmanagement",
			spec: map[string]any{"canvasSystemRole": "Admin", "componentRole": []any{
				map[string]any{"name": "pcadmin", "description": "Product Catalogue Administrator"},
				map[string]any{"name": "cat2owner", "description": "Catalogue Owner for catalogue 2"},
				map[string]any{"name": "cat1owner"},
			}},
			want: Desired{ClientID: "static-productcatalogmanagement", CanvasSystemRole: "Admin", Roles: []Role{
				{Name: "Admin"}, {Name: "cat1owner"},
				{Name: "cat2owner", Description: "Catalogue Owner for catalogue 2"},
				{Name: "pcadmin", Description: "Product Catalogue Administrator"},
			}},
		},
		{
			name: "a component role named like the canvas role is one role with its description",
			ic:   "c",
			spec: map[string]any{"canvasSystemRole": "Admin", "componentRole": []any{map[string]any{"name": "Admin", "description": "admins"}}},
			want: Desired{ClientID: "c", CanvasSystemRole: "Admin", Roles: []Role{{Name: "Admin", Description: "admins"}}},
		},
		{
			name: "listener APIs, port from JSON numbers",
			ic:   "c",
			spec: map[string]any{
				"canvasSystemRole":              "CanvasRole",
				"partyRoleAPI":                  map[string]any{"implementation": "pr", "path": "/c/partyRoleManagement/v4", "port": float64(8080)},
				"permissionSpecificationSetAPI": map[string]any{"implementation": "ps", "path": "/c/rolesAndPermissionsManagement/v5", "port": json.Number("8081")},
			},
			want: Desired{
				ClientID: "c", CanvasSystemRole: "CanvasRole", Roles: []Role{{Name: "CanvasRole"}},
				PartyRoleAPI:                  &APIRef{Implementation: "pr", Path: "/c/partyRoleManagement/v4", Port: 8080},
				PermissionSpecificationSetAPI: &APIRef{Implementation: "ps", Path: "/c/rolesAndPermissionsManagement/v5", Port: 8081},
			},
		},
		{
			name:    "missing canvas role",
			ic:      "c",
			spec:    map[string]any{},
			wantErr: []string{"spec.canvasSystemRole is required"},
		},
		{
			name: "every problem reported at once",
			ic:   "c",
			spec: map[string]any{
				"canvasSystemRole": 3,
				"componentRole": []any{"x", map[string]any{"description": "no name"},
					map[string]any{"name": "r", "description": "a"}, map[string]any{"name": "r", "description": "b"}},
				"partyRoleAPI": map[string]any{"port": 0},
			},
			wantErr: []string{
				"spec.canvasSystemRole must be a string",
				"spec.componentRole[0] must be an object",
				"spec.componentRole[1].name is required",
				"spec.componentRole[3] declares role \"r\" twice",
				"spec.partyRoleAPI.implementation is required",
				"spec.partyRoleAPI.path is required",
				"spec.partyRoleAPI.port must be a port number",
			},
		},
		{
			name:    "componentRole not a list",
			ic:      "c",
			spec:    map[string]any{"canvasSystemRole": "Admin", "componentRole": "pcadmin"},
			wantErr: []string{"spec.componentRole must be a list"},
		},
		{
			name:    "blank role",
			ic:      "c",
			spec:    map[string]any{"canvasSystemRole": "  "},
			wantErr: []string{"spec.canvasSystemRole must not be empty"},
		},
		{
			name:    "canvas role that is a Keycloak path",
			ic:      "c",
			spec:    map[string]any{"canvasSystemRole": "../../../users"},
			wantErr: []string{"spec.canvasSystemRole: \"../../../users\" contains '/'"},
		},
		{
			name: "component roles that are not one path segment",
			ic:   "c",
			spec: map[string]any{"canvasSystemRole": "Admin", "componentRole": []any{
				map[string]any{"name": "a/b"}, map[string]any{"name": `a\b`}, map[string]any{"name": "victim?x"},
				map[string]any{"name": "x#y"}, map[string]any{"name": "a%2Fb"}, map[string]any{"name": ".."}, map[string]any{"name": "."},
				map[string]any{"name": "tab\there"}, map[string]any{"name": strings.Repeat("r", 256)},
				map[string]any{"name": "cat1.owner_ok-role~2 with space"},
			}},
			wantErr: []string{
				`spec.componentRole[0].name: "a/b" contains '/'`,
				`spec.componentRole[1].name: "a\\b" contains '\\'`,
				`spec.componentRole[2].name: "victim?x" contains '?'`,
				`spec.componentRole[3].name: "x#y" contains '#'`,
				`spec.componentRole[4].name: "a%2Fb" contains '%'`,
				`spec.componentRole[5].name: ".." is not a role name`,
				`spec.componentRole[6].name: "." is not a role name`,
				`spec.componentRole[7].name: "tab\there" contains '\t'`,
				"spec.componentRole[8].name: longer than 255 bytes",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := FromSpec(tt.ic, tt.spec)
			if len(tt.wantErr) > 0 {
				if err == nil {
					t.Fatalf("no error, want %q", tt.wantErr)
				}
				se, ok := err.(*SpecError)
				if !ok {
					t.Fatalf("error %T, want *SpecError", err)
				}
				if len(se.Problems) != len(tt.wantErr) {
					t.Fatalf("problems = %q, want %d of them", se.Problems, len(tt.wantErr))
				}
				for i, w := range tt.wantErr {
					if !strings.Contains(se.Problems[i], w) {
						t.Errorf("problem %d = %q, want it to contain %q", i, se.Problems[i], w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("desired (-want +got):\n%s", d)
			}
		})
	}
}

func TestDiffRoles(t *testing.T) {
	tests := []struct {
		name     string
		desired  []Role
		existing []ExistingRole
		previous []string
		want     RoleDiff
	}{
		{
			name:    "new client: create everything",
			desired: []Role{{Name: "pcadmin"}, {Name: "Admin"}},
			want:    RoleDiff{Create: []Role{{Name: "Admin"}, {Name: "pcadmin"}}},
		},
		{
			name:     "in sync",
			desired:  []Role{{Name: "Admin"}},
			existing: []ExistingRole{{Name: "Admin", Managed: true}},
			want:     RoleDiff{},
		},
		{
			name:     "upgrade removes a static role and changes the canvas role",
			desired:  []Role{{Name: "Operator"}, {Name: "cat1owner"}},
			existing: []ExistingRole{{Name: "Admin", Managed: true}, {Name: "cat1owner", Managed: true}, {Name: "cat2owner", Managed: true}},
			want:     RoleDiff{Create: []Role{{Name: "Operator"}}, Delete: []string{"Admin", "cat2owner"}},
		},
		{
			name:     "dynamic roles from the listener stay",
			desired:  []Role{{Name: "Admin"}},
			existing: []ExistingRole{{Name: "Admin", Managed: true}, {Name: "DynamicRole1"}},
			want:     RoleDiff{},
		},
		{
			name:     "roles an earlier spec declared go even without the marker (Python-created)",
			desired:  []Role{{Name: "Admin"}},
			existing: []ExistingRole{{Name: "Admin"}, {Name: "cat2owner"}, {Name: "DynamicRole1"}},
			previous: []string{"Admin", "cat2owner"},
			want:     RoleDiff{Delete: []string{"cat2owner"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := DiffRoles(tt.desired, tt.existing, tt.previous)
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("diff (-want +got):\n%s", d)
			}
			if got.Empty() != (len(tt.want.Create) == 0 && len(tt.want.Delete) == 0) {
				t.Errorf("Empty() = %v", got.Empty())
			}
		})
	}
}

func TestNamesAndRotation(t *testing.T) {
	if got := SecretName("ctk-productcatalogmanagement"); got != "ctk-productcatalogmanagement-secret" {
		t.Errorf("SecretName = %q", got)
	}
	for _, tt := range []struct {
		requested, handled string
		want               bool
	}{{"", "", false}, {"1", "", true}, {"1", "1", false}, {"2", "1", true}, {"", "1", false}} {
		if got := RotationNeeded(tt.requested, tt.handled); got != tt.want {
			t.Errorf("RotationNeeded(%q, %q) = %v, want %v", tt.requested, tt.handled, got, tt.want)
		}
	}
}

// The hub URL is built from implementation and path: they must name a
// Service in the IdentityConfig's namespace and a path on it, so that the
// worker calls nothing else (a metadata endpoint, another host, another
// namespace).
func TestFromSpecRefusesHubsOutsideTheNamespace(t *testing.T) {
	for _, tc := range []struct{ impl, path string }{
		{"169.254.169.254/latest/meta-data?", "/x"},
		{"evil.example.com#", "/x"},
		{"user@169.254.169.254", "/x"},
		{"svc.other-namespace", "/x"},
		{"svc:9999", "/x"},
		{"Svc", "/x"},
		{"svc", "/x?y=1"},
		{"svc", "/x#frag"},
		{"svc", "/../../admin"},
		{"svc", "/a//b"},
		{"svc", "/a/@169.254.169.254"},
		{"svc", "/a b"},
		{"svc", "/%2e%2e/admin"},
	} {
		spec := map[string]any{"canvasSystemRole": "Admin", "partyRoleAPI": map[string]any{"implementation": tc.impl, "path": tc.path, "port": 8080}}
		if _, err := FromSpec("pc", spec); err == nil {
			t.Errorf("implementation %q path %q accepted", tc.impl, tc.path)
		}
	}
	for _, p := range []string{"/ctk-productcatalogmanagement/tmf-api/partyRoleManagement/v4", "api/v4", "/", "/v5/"} {
		spec := map[string]any{"canvasSystemRole": "Admin", "partyRoleAPI": map[string]any{"implementation": "ctk-partyroleapi", "path": p, "port": 8080}}
		if _, err := FromSpec("pc", spec); err != nil {
			t.Errorf("path %q refused: %v", p, err)
		}
	}
}

// Empty is true when nothing needs to change.
func (d RoleDiff) Empty() bool { return len(d.Create) == 0 && len(d.Delete) == 0 }
