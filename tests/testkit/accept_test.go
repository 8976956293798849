package testkit

import (
	"strings"
	"testing"

	"github.com/odaflow/odaflow/oda"
	"github.com/odaflow/odaflow/validate"
	"github.com/odaflow/odaflow/webhook/conversion"
)

// TestEveryChartIsAccepted renders every test-kit chart with its default
// values through Helm and runs its Component through the decisions odaflow
// takes on it: conversion to v1 (v1beta3, v1beta4 charts), the desired
// children and the gateway limits, then each child's own spec decision.
// None may fail, and every declared API must produce its child.
func TestEveryChartIsAccepted(t *testing.T) {
	for _, c := range Charts(t) {
		t.Run(c.Name, func(t *testing.T) {
			r := MustRender(t, c, Release, Namespace)
			comps := r.Components()
			if len(comps) != 1 {
				t.Fatalf("the chart renders %d Components, want 1", len(comps))
			}
			obj := comps[0].Object
			rep := validate.Component(obj, Namespace)
			if reason, refused := CRDRefused[c.Name]; refused {
				if !rep.Failed() || len(rep.Problems) == 0 || !strings.HasPrefix(rep.Problems[0].Message, "the apiserver refuses it") {
					t.Fatalf("listed as refused by the CRD (%s), but validate does not say the apiserver refuses it: %+v", reason, rep.Problems)
				}
				return
			}
			for _, p := range rep.Problems {
				if p.Fails() {
					t.Errorf("%s: %s: %s", p.Severity, p.Path, p.Message)
				}
			}
			if t.Failed() {
				return
			}
			// Each declared API is one child, named as the Canvas names it.
			v1 := obj
			if av := comps[0].GetAPIVersion(); av != conversion.V1 {
				var err error
				if v1, err = conversion.Convert(obj, conversion.V1); err != nil {
					t.Fatal(err)
				}
			}
			want := map[string]int{}
			spec := v1["spec"].(map[string]any)
			for _, seg := range oda.Segments {
				f, _ := spec[string(seg)].(map[string]any)
				for key, kind := range map[string]string{"exposedAPIs": oda.KindExposedAPI.Name, "dependentAPIs": oda.KindDependentAPI.Name} {
					list, _ := f[key].([]any)
					want[kind] += len(list)
				}
			}
			got := map[string]int{}
			for _, ch := range rep.Children {
				got[ch.Kind]++
				if !strings.HasPrefix(ch.Name, rep.Name+"-") && ch.Kind != oda.KindIdentityConfig.Name && ch.Kind != oda.KindSecretsManagement.Name {
					t.Errorf("child %s %s is not named after the Component %s", ch.Kind, ch.Name, rep.Name)
				}
			}
			for _, kind := range []string{oda.KindExposedAPI.Name, oda.KindDependentAPI.Name} {
				if got[kind] != want[kind] {
					t.Errorf("%d %s children, want %d (one per declared API)", got[kind], kind, want[kind])
				}
			}
			if got[oda.KindIdentityConfig.Name] != 1 {
				t.Errorf("%d IdentityConfig children, want 1", got[oda.KindIdentityConfig.Name])
			}
		})
	}
}
