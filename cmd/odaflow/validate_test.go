package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/odaflow/odaflow/tests/testkit"
)

// TestValidateTestKitCharts: every test-kit chart, rendered with its default
// values, passes `odaflow validate`, and the output lists each child;
// a chart the Component CRD refuses fails it, naming the field.
func TestValidateTestKitCharts(t *testing.T) {
	for _, c := range testkit.Charts(t) {
		t.Run(c.Name, func(t *testing.T) {
			r := testkit.MustRender(t, c, testkit.Release, testkit.Namespace)
			file := filepath.Join(t.TempDir(), c.Name+".yaml")
			if err := os.WriteFile(file, r.Manifest, 0o600); err != nil {
				t.Fatal(err)
			}
			var stdout, stderr bytes.Buffer
			code := validateMain([]string{"-n", testkit.Namespace, "-f", file}, nil, &stdout, &stderr)
			if reason, refused := testkit.CRDRefused[c.Name]; refused {
				field := strings.SplitN(reason, " ", 2)[0]
				if code != 1 || !strings.Contains(stdout.String(), field) {
					t.Errorf("exit %d, want 1 naming %s (%s):\n%s%s", code, field, reason, stdout.String(), stderr.String())
				}
				return
			}
			if code != 0 {
				t.Fatalf("exit %d, want 0:\n%s%s", code, stdout.String(), stderr.String())
			}
			if !strings.Contains(stdout.String(), ": OK\n") || !strings.Contains(stdout.String(), "IdentityConfig") {
				t.Errorf("the output does not list the Component as OK with its children:\n%s", stdout.String())
			}
		})
	}
}

func TestValidateProblems(t *testing.T) {
	const component = `apiVersion: oda.tmforum.org/v1
kind: Component
metadata: {name: r1-pc}
spec:
  coreFunction:
    exposedAPIs:
    - name: productcatalogmanagement
      specification: [{url: "https://example.com/TMF620-ProductCatalog-v4.0.0.swagger.json"}]
      implementation: r1-prodcatapi
      apiType: openapi
      path: /r1-pc/tmf-api/productCatalogManagement/v4
      port: 8080
      gatewayConfiguration:
        quota: {identifier: consumer, limit: QUOTA}
  securityFunction: {canvasSystemRole: ROLE}
`
	other := "---\napiVersion: v1\nkind: Service\nmetadata: {name: r1-prodcatapi}\nspec: {ports: [{port: 8080}]}\n"
	cases := []struct {
		name, quota, role string
		code              int
		want              []string
	}{
		{"empty quota is not set", `""`, "Admin", 0, []string{"OK", "ExposedAPI", "r1-pc-productcatalogmanagement-v4", "IdentityConfig"}},
		{"a word quota fails the ExposedAPI", "lots", "Admin", 1, []string{
			"FAILS", "fails a child: spec.coreFunction.exposedAPIs[0] (ExposedAPI r1-pc-productcatalogmanagement-v4): spec.quota.limit: must be a positive integer",
		}},
		{"no role fails the Component", `"5"`, `""`, 1, []string{"fails the Component: spec.securityFunction.canvasSystemRole: is required"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := strings.NewReplacer("QUOTA", tc.quota, "ROLE", tc.role).Replace(component) + other
			var stdout, stderr bytes.Buffer
			code := validateMain([]string{"-f", "-"}, strings.NewReader(in), &stdout, &stderr)
			if code != tc.code {
				t.Errorf("exit %d, want %d:\n%s%s", code, tc.code, stdout.String(), stderr.String())
			}
			for _, w := range tc.want {
				if !strings.Contains(stdout.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, stdout.String())
				}
			}
		})
	}
	var stdout, stderr bytes.Buffer
	if code := validateMain([]string{"-f", "-"}, strings.NewReader(other), &stdout, &stderr); code != 2 {
		t.Errorf("input without a Component: exit %d, want 2", code)
	}
	if code := validateMain([]string{"-f", "-"}, strings.NewReader("a: [b"), &stdout, &stderr); code != 2 {
		t.Errorf("unreadable input: exit %d, want 2", code)
	}
}
