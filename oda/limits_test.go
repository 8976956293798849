package oda

import (
	"strings"
	"testing"
)

func TestExposedPathProblem(t *testing.T) {
	for path, want := range map[string]string{
		"/ctk-productcatalogmanagement/tmf-api/productCatalogManagement/v4": "",
		"/r1-x/metrics/":        "",
		"/a/%7Euser/b;v=1":      "",
		"":                      "is required",
		"tmf-api/x":             "must start with /",
		"/":                     "every path on the gateway",
		"///":                   "every path on the gateway",
		"/a/../other-component": "dot segment",
		"/a/%2E%2e/b":           "dot segment",
		"/a/./b":                "dot segment",
		"/a//b":                 "empty segment",
		"/prodüct":              "RFC 3986",
		"/a b":                  "RFC 3986",
		"/a?x=1":                "RFC 3986",
		"/a#frag":               "RFC 3986",
		"/a\n/b":                "RFC 3986",
		"/a%zz":                 "percent-encoded",
		"/a%2":                  "percent-encoded",
	} {
		got := ExposedPathProblem(path)
		if (want == "") != (got == "") || !strings.Contains(got, want) {
			t.Errorf("ExposedPathProblem(%q) = %q, want %q", path, got, want)
		}
	}
}

func TestGatewayProblems(t *testing.T) {
	d := Desired{Children: []Child{
		{Kind: KindExposedAPI.Name, Name: strings.Repeat("a", MaxExposedAPINameLength), Spec: map[string]any{"path": "/ok", "implementation": "svc"}},
		{Kind: KindExposedAPI.Name, Name: strings.Repeat("b", MaxExposedAPINameLength+1), Spec: map[string]any{"path": "/", "implementation": "svc"}},
		{Kind: KindExposedAPI.Name, Name: "c", Spec: map[string]any{"path": "/ok", "implementation": "../svc"}},
		{Kind: KindDependentAPI.Name, Name: strings.Repeat("c", 250), Spec: map[string]any{}},
	}}
	errs := GatewayProblems(d)
	if len(errs) != 4 || !strings.Contains(errs.Error(), "at most 225") || !strings.Contains(errs.Error(), "every path") ||
		!strings.Contains(errs.Error(), "also the path of") || !strings.Contains(errs.Error(), "not a Service name") {
		t.Fatalf("GatewayProblems = %v", errs)
	}
}
