package sidecar

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/odaflow/odaflow/secrets"
)

// examplePod is the Canvas's captured pod (the object of its
// AdmissionReview), without the `creationTimestamp: {}` a typed Pod refuses.
func examplePod(t testing.TB, edit func(m map[string]any)) []byte {
	t.Helper()
	raw, err := os.ReadFile("testdata/pod.json")
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	delete(m["metadata"].(map[string]any), "creationTimestamp")
	if edit != nil {
		edit(m)
	}
	out, _ := json.Marshal(m)
	return out
}

func review(pod []byte) *admissionv1.AdmissionRequest {
	return &admissionv1.AdmissionRequest{
		UID:       "705ab4f5-6393-11e8-b7cc-42010a800002",
		Kind:      metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
		Resource:  metav1.GroupVersionResource{Version: "v1", Resource: "pods"},
		Namespace: "components", Operation: admissionv1.Create,
		Object: runtime.RawExtension{Raw: pod},
	}
}

func labels(m map[string]any) map[string]any {
	return m["metadata"].(map[string]any)["labels"].(map[string]any)
}

var smA = Entry{Namespace: "components", Name: "demo-a-productcatalogmanagement",
	Spec: secrets.Spec{Type: secrets.TypeSideCar, PodSelector: secrets.Selector{Namespace: "components", Name: "demo-a-*", ServiceAccount: "default"}, SidecarPort: 5000}}

func TestReview(t *testing.T) {
	smB := Entry{Namespace: "components", Name: "demo-b", Spec: secrets.Spec{Type: secrets.TypeSideCar, PodSelector: secrets.Selector{Name: "demo-b-*"}, SidecarPort: 5000}}
	bad := Entry{Namespace: "components", Name: "broken", Err: errors.New("spec.type must be sideCar")}
	cfg := secrets.SidecarConfig{VaultAddr: "https://vault:8200", AuthPath: "kubernetes-sman"}
	for _, tc := range []struct {
		name      string
		lister    StaticLister
		edit      func(m map[string]any)
		req       func(r *admissionv1.AdmissionRequest)
		allowed   bool
		patched   bool
		wantInMsg string
	}{
		{name: "example pod, found by selector", lister: StaticLister{smA, smB}, allowed: true, patched: true},
		{name: "found by component label", lister: StaticLister{smA, smB},
			edit: func(m map[string]any) { labels(m)[secrets.LabelComponentName] = "demo-a-productcatalogmanagement" }, allowed: true, patched: true},
		{name: "component label names a missing SecretsManagement", lister: StaticLister{smB},
			edit:      func(m map[string]any) { labels(m)[secrets.LabelComponentName] = "demo-a-productcatalogmanagement" },
			wantInMsg: "SecretsManagement components/demo-a-productcatalogmanagement (from label oda.tmforum.org/componentName) does not exist"},
		{name: "component label, selector does not match", lister: StaticLister{smB},
			edit:      func(m map[string]any) { labels(m)[secrets.LabelComponentName] = "demo-b" },
			wantInMsg: `does not select this pod: pod name "demo-a-prodcatapi-57868f9d7c-" does not match "demo-b-*"`},
		{name: "component label, invalid spec", lister: StaticLister{bad},
			edit: func(m map[string]any) { labels(m)[secrets.LabelComponentName] = "broken" }, wantInMsg: "is invalid: spec.type must be sideCar"},
		{name: "no SecretsManagement selects it", lister: StaticLister{smB}, wantInMsg: "no SecretsManagement in namespace components selects it"},
		{name: "two select it", lister: StaticLister{smA, {Namespace: "components", Name: "other", Spec: smA.Spec}}, wantInMsg: "demo-a-productcatalogmanagement, other all select this pod"},
		{name: "not labelled: untouched", lister: StaticLister{},
			edit: func(m map[string]any) { delete(labels(m), secrets.LabelSecretsManagement) }, allowed: true},
		{name: "already has the sidecar: untouched", lister: StaticLister{smA},
			edit: func(m map[string]any) {
				spec := m["spec"].(map[string]any)
				spec["containers"] = append(spec["containers"].([]any), map[string]any{"name": secrets.SidecarName, "image": "x"})
			}, allowed: true},
		{name: "update: untouched", lister: StaticLister{}, req: func(r *admissionv1.AdmissionRequest) { r.Operation = admissionv1.Update }, allowed: true},
		{name: "other kind: untouched", lister: StaticLister{}, req: func(r *admissionv1.AdmissionRequest) { r.Kind.Kind = "Service" }, allowed: true},
		{name: "undecodable pod", lister: StaticLister{}, req: func(r *admissionv1.AdmissionRequest) { r.Object.Raw = []byte(`{"spec":1}`) }, wantInMsg: "cannot decode the pod"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := examplePod(t, tc.edit)
			req := review(pod)
			if tc.req != nil {
				tc.req(req)
			}
			resp := NewHandler(tc.lister, cfg, nil).Review(req)
			if resp.UID != req.UID {
				t.Errorf("uid %q", resp.UID)
			}
			if resp.Allowed != tc.allowed {
				t.Fatalf("allowed = %v, want %v (%+v)", resp.Allowed, tc.allowed, resp.Result)
			}
			if !tc.allowed {
				if resp.Result == nil || resp.Result.Code != 400 || !strings.Contains(resp.Result.Message, tc.wantInMsg) {
					t.Fatalf("result %+v, want 400 with %q", resp.Result, tc.wantInMsg)
				}
				return
			}
			if (resp.Patch != nil) != tc.patched {
				t.Fatalf("patched = %v, want %v", resp.Patch != nil, tc.patched)
			}
			if !tc.patched {
				return
			}
			if *resp.PatchType != admissionv1.PatchTypeJSONPatch {
				t.Errorf("patch type %s", *resp.PatchType)
			}
			p, err := jsonpatch.DecodePatch(resp.Patch)
			if err != nil {
				t.Fatal(err)
			}
			out, err := p.Apply(pod)
			if err != nil {
				t.Fatal(err)
			}
			var got corev1.Pod
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatal(err)
			}
			last := got.Spec.Containers[len(got.Spec.Containers)-1]
			if last.Name != secrets.SidecarName || last.Env[0].Value != "components.demo-a-productcatalogmanagement" {
				t.Errorf("sidecar %s env %v", last.Name, last.Env)
			}
		})
	}
}

// TestServeHTTP goes through HTTP as the apiserver does, with the Canvas's
// example pod in an AdmissionReview.
func TestServeHTTP(t *testing.T) {
	h := NewHandler(StaticLister{smA}, secrets.SidecarConfig{}, nil)
	body, _ := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request:  review(examplePod(t, nil)),
	})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, Path, bytes.NewReader(body)))
	if rec.Code != 200 {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	var out admissionv1.AdmissionReview
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
		t.Fatal(err)
	}
	if out.APIVersion != "admission.k8s.io/v1" || out.Kind != "AdmissionReview" || out.Response == nil || !out.Response.Allowed || out.Response.Patch == nil {
		t.Fatalf("response %+v", out)
	}
	if out.Response.UID != "705ab4f5-6393-11e8-b7cc-42010a800002" {
		t.Errorf("uid %s", out.Response.UID)
	}

	for _, tc := range []struct {
		name   string
		h      *Handler
		method string
		body   string
		code   int
	}{
		{"GET", h, http.MethodGet, "", 405},
		{"garbage", h, http.MethodPost, "{", 400},
		{"no request", h, http.MethodPost, `{"kind":"AdmissionReview"}`, 400},
		{"cache not synced: 503 so that the Fail policy retries", NewHandler(unsynced{}, secrets.SidecarConfig{}, nil), http.MethodPost, string(body), 503},
	} {
		rec := httptest.NewRecorder()
		tc.h.ServeHTTP(rec, httptest.NewRequest(tc.method, Path, strings.NewReader(tc.body)))
		if rec.Code != tc.code {
			t.Errorf("%s: status %d, want %d", tc.name, rec.Code, tc.code)
		}
	}
}

type unsynced struct{ StaticLister }

func (unsynced) HasSynced() bool { return false }

// BenchmarkAdmission measures one admission of the Canvas's example pod
// (decode, lookup among 50 SecretsManagements, patch, encode) through HTTP
// handling, without TLS.
func BenchmarkAdmission(b *testing.B) {
	l := StaticLister{}
	for i := range 49 {
		e := smA
		e.Name = "other-" + string(rune('a'+i%26)) + string(rune('a'+i/26))
		e.Spec.PodSelector.Name = e.Name + "-*"
		l = append(l, e)
	}
	l = append(l, smA)
	h := NewHandler(l, secrets.SidecarConfig{VaultAddr: "https://vault:8200"}, nil)
	body, _ := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request:  review(examplePod(b, nil)),
	})
	b.ReportAllocs()
	var took []time.Duration
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, Path, bytes.NewReader(body)))
		took = append(took, time.Since(start))
		if rec.Code != 200 || !bytes.Contains(rec.Body.Bytes(), []byte(`"patch"`)) {
			b.Fatalf("status %d: %s", rec.Code, rec.Body)
		}
	}
	// The mean hides the tail an admission timeout cares about.
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)*50/100].Microseconds()), "p50-µs")
	b.ReportMetric(float64(took[min(len(took)-1, len(took)*99/100)].Microseconds()), "p99-µs")
}

// StaticLister is a fixed Lister (tests, benchmarks).
type StaticLister []Entry

// Get implements Lister.
func (s StaticLister) Get(namespace, name string) (Entry, bool) {
	for _, e := range s {
		if e.Namespace == namespace && e.Name == name {
			return e, true
		}
	}
	return Entry{}, false
}

// List implements Lister.
func (s StaticLister) List(namespace string) []Entry {
	var out []Entry
	for _, e := range s {
		if e.Namespace == namespace {
			out = append(out, e)
		}
	}
	return out
}

// HasSynced implements Lister.
func (StaticLister) HasSynced() bool { return true }
