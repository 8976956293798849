package main

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/odaflow/odaflow/oda"
)

func component(name, phase string, created time.Time) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": name, "namespace": "components"}}}
	u.SetCreationTimestamp(metav1.NewTime(created))
	if phase != "" {
		u.Object["status"] = map[string]any{"summary/status": map[string]any{"deployment_status": phase}}
	}
	return u
}

func child(component, name string, created time.Time, status map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": name, "namespace": "components"}}}
	u.SetLabels(map[string]string{oda.LabelComponentName: component})
	u.SetCreationTimestamp(metav1.NewTime(created))
	if status != nil {
		u.Object["status"] = status
	}
	return u
}

func ready(status, reason, message string) []any {
	return []any{map[string]any{"type": "Ready", "status": status, "reason": reason, "message": message}}
}

func TestLifecycleConsolePrintsOneLinePerStep(t *testing.T) {
	start := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	now := start
	l := newLifecycleConsole(&console{})
	l.started, l.now = start, func() time.Time { return now }

	type obs struct {
		at   time.Duration
		kind oda.Kind
		obj  *unstructured.Unstructured
		del  bool
		want string // "" = no line
	}
	comp := "ctk-productcatalogmanagement"
	api := func(st map[string]any) *unstructured.Unstructured {
		return child(comp, comp+"-productcatalogmanagement", start, st)
	}
	steps := []obs{
		{0, oda.KindComponent, component(comp, "", start), false, ""},
		{100 * time.Millisecond, oda.KindComponent, component(comp, oda.StatusCompCon, start), false,
			"   0.1s       ctk-productcatalogmanagement     Component                                  In-Progress-CompCon"},
		{200 * time.Millisecond, oda.KindComponent, component(comp, oda.StatusCompCon, start), false, ""}, // same step: no line
		{300 * time.Millisecond, oda.KindExposedAPI, api(nil), false, ""},                                 // no status yet
		{900 * time.Millisecond, oda.KindExposedAPI, api(map[string]any{"conditions": ready("False", "ImplementationNotReady", "the implementation Service has no ready endpoint")}), false,
			"   0.9s       ctk-productcatalogmanagement     ExposedAPI productcatalogmanagement        ImplementationNotReady  the implementation Service has no ready endpoint"},
		{1500 * time.Millisecond, oda.KindExposedAPI, api(map[string]any{
			"conditions": ready("True", "Exposed", "exposed"),
			"apiStatus":  map[string]any{"url": "http://127.0.0.1/ctk/v4"},
		}), false, "   1.5s       ctk-productcatalogmanagement     ExposedAPI productcatalogmanagement        Exposed  http://127.0.0.1/ctk/v4"},
		{2 * time.Second, oda.KindDependentAPI, child(comp, comp+"-downstreamproductcatalog", start, map[string]any{
			"conditions":   ready("True", "Resolved", "Resolved"),
			"depapiStatus": map[string]any{"url": "http://127.0.0.1/r-cat/v4"},
		}), false, "   2.0s       ctk-productcatalogmanagement     DependentAPI downstreamproductcatalog      Resolved  http://127.0.0.1/r-cat/v4"},
		{2500 * time.Millisecond, oda.KindIdentityConfig, child(comp, comp, start, map[string]any{"conditions": ready("True", "Ready", "Ready")}), false,
			"   2.5s       ctk-productcatalogmanagement     IdentityConfig                             Ready"},
		{3 * time.Second, oda.KindExposedAPI, child("", "unlabelled", start, map[string]any{"conditions": ready("True", "Exposed", "")}), false, ""},
		{3500 * time.Millisecond, oda.KindComponent, component(comp, oda.StatusComplete, start), false,
			"   3.5s       ctk-productcatalogmanagement     Component                                  Complete"},
		{5 * time.Second, oda.KindComponent, component(comp, oda.StatusComplete, start), true,
			"   5.0s       ctk-productcatalogmanagement     Component                                  deleted"},
		// A Component of an earlier run says so instead of a duration.
		{6 * time.Second, oda.KindComponent, component("old", oda.StatusComplete, start.Add(-time.Hour)), false,
			"(earlier run) old                              Component                                  Complete"},
	}
	for _, s := range steps {
		now = start.Add(s.at)
		got, ok := l.step(s.kind, s.obj, s.del)
		if !ok {
			got = ""
		}
		if got != s.want {
			t.Errorf("at %s, %s %s:\n got %q\nwant %q", s.at, s.kind.Name, s.obj.GetName(), got, s.want)
		}
	}
}

func TestLifecycleConsoleSaysWhyAComponentFailed(t *testing.T) {
	l := newLifecycleConsole(&console{})
	u := component("bad", oda.StatusFailed, time.Now())
	u.Object["status"].(map[string]any)["conditions"] = ready("False", "InvalidSpec", "spec.coreFunction is\n  not an object")
	got, ok := l.step(oda.KindComponent, u, false)
	if !ok || !strings.HasSuffix(got, "Failed  InvalidSpec: spec.coreFunction is not an object") {
		t.Fatalf("got %q", got)
	}
}

func TestImplementationsOfTheSamples(t *testing.T) {
	got, err := implementations(samples)
	if err != nil {
		t.Fatal(err)
	}
	want := "r-cat-prodcatapi r-cat-promgmtapi r-cat-productcatalogmanagement-sm r-cat-partyroleapi " +
		"ctk-prodcatapi ctk-promgmtapi ctk-productcatalogmanagement-sm ctk-partyroleapi"
	if strings.Join(got, " ") != want {
		t.Fatalf("got %v, want %s", got, want)
	}
}

func TestDevLogSendsErrorsToTheConsoleToo(t *testing.T) {
	var screen bytes.Buffer
	c := &console{out: &screen}
	l, err := openDevLog(t.TempDir(), "worker.log")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	log := slog.New(l.handler(slog.LevelInfo, "worker", c)).With("component", "activities")
	log.Debug("not written")
	log.Info("started", "queue", "odaflow")
	log.Warn("slow apiserver")
	log.ErrorContext(context.Background(), "activity failed\nwith a reason", "kind", "ExposedAPI")
	if want := "worker error: activity failed with a reason (details in " + l.Path + ")\n"; screen.String() != want {
		t.Errorf("console:\n got %q\nwant %q", screen.String(), want)
	}
	raw, err := os.ReadFile(l.Path)
	if err != nil {
		t.Fatal(err)
	}
	data := string(raw)
	for _, want := range []string{"msg=started", "queue=odaflow", "level=WARN msg=\"slow apiserver\" component=activities", "kind=ExposedAPI"} {
		if !strings.Contains(data, want) {
			t.Errorf("log file lacks %q:\n%s", want, data)
		}
	}
	if strings.Contains(data, "not written") {
		t.Errorf("a debug record was written at info:\n%s", data)
	}
}
