package localstack

import (
	"context"
	"encoding/json"
	"encoding/pem"
	mrand "math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// fakeAPIServer answers ConfigMap calls like kube-apiserver, over TLS with
// a bearer token, and logs what reached it.
type fakeAPIServer struct {
	mu   sync.Mutex
	seen []string // "METHOD path"
	auth []string
}

func (f *fakeAPIServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.seen = append(f.seen, r.Method+" "+r.URL.Path)
	f.auth = append(f.auth, r.Header.Get("Authorization"))
	f.mu.Unlock()
	cm := map[string]any{"kind": "ConfigMap", "apiVersion": "v1", "metadata": map[string]any{"name": "cm1", "namespace": "ns", "resourceVersion": "1"}}
	w.Header().Set("Content-Type", "application/json")
	switch {
	case r.Method == http.MethodGet && r.URL.Query().Get("watch") == "true":
		_ = json.NewEncoder(w).Encode(map[string]any{"type": "ADDED", "object": cm})
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	case r.Method == http.MethodPost:
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(cm)
	default:
		_ = json.NewEncoder(w).Encode(cm)
	}
}

func (f *fakeAPIServer) requests() ([]string, []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.seen...), append([]string(nil), f.auth...)
}

func startFaultProxyForTest(t *testing.T) (*FaultProxy, *fakeAPIServer, kubernetes.Interface) {
	t.Helper()
	fake := &fakeAPIServer{}
	up := httptest.NewTLSServer(fake)
	t.Cleanup(up.Close)
	upstream := &rest.Config{
		Host: up.URL, BearerToken: "secret-token",
		TLSClientConfig: rest.TLSClientConfig{CAData: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: up.Certificate().Raw})},
	}
	p, err := StartFaultProxy(upstream, t.TempDir(), 42)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	// JSON bodies, so that the injected AlreadyExists can name the object
	// (a protobuf body is not read).
	cfg := p.RESTConfig()
	cfg.ContentType = "application/json"
	return p, fake, kubernetes.NewForConfigOrDie(cfg)
}

func TestFaultProxyForwardsWithTheClientsCredentials(t *testing.T) {
	p, fake, cs := startFaultProxyForTest(t)
	ctx := context.Background()
	if _, err := cs.CoreV1().ConfigMaps("ns").Get(ctx, "cm1", metav1.GetOptions{}); err != nil {
		t.Fatalf("get through the proxy: %v", err)
	}
	// The kubeconfig it wrote reaches the apiserver too, over TLS.
	cfg, err := clientcmd.BuildConfigFromFlags("", p.KubeconfigPath)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kubernetes.NewForConfigOrDie(cfg).CoreV1().ConfigMaps("ns").Get(ctx, "cm1", metav1.GetOptions{}); err != nil {
		t.Fatalf("get with the proxy's kubeconfig: %v", err)
	}
	seen, auth := fake.requests()
	if len(seen) != 2 || seen[0] != "GET /api/v1/namespaces/ns/configmaps/cm1" {
		t.Errorf("upstream saw %v", seen)
	}
	for _, a := range auth {
		if a != "Bearer secret-token" {
			t.Errorf("upstream Authorization = %q, want the client's token", a)
		}
	}
	if p.Forwarded() != 2 || len(p.Injected()) != 0 {
		t.Errorf("forwarded %d, injected %v", p.Forwarded(), p.Injected())
	}
}

func TestFaultProxyInjectsWhatTheAPIServerAnswers(t *testing.T) {
	p, fake, cs := startFaultProxyForTest(t)
	ctx := context.Background()
	cms := cs.CoreV1().ConfigMaps("ns")
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm1"}}

	p.SetRules(FaultRule{Verbs: []string{"POST"}, Code: 409, Share: 1})
	_, err := cms.Create(ctx, cm, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) || !strings.Contains(err.Error(), `configmaps "cm1" already exists`) {
		t.Errorf("POST under 409: %v, want AlreadyExists naming the object", err)
	}
	p.SetRules(FaultRule{Verbs: []string{"PATCH"}, Code: 409, Share: 1})
	_, err = cms.Patch(ctx, "cm1", types.MergePatchType, []byte(`{}`), metav1.PatchOptions{})
	if !apierrors.IsConflict(err) || !strings.Contains(err.Error(), "the object has been modified") {
		t.Errorf("PATCH under 409: %v, want Conflict", err)
	}
	p.SetRules(FaultRule{Verbs: []string{"GET"}, Code: 500, Share: 1})
	if _, err = cms.Get(ctx, "cm1", metav1.GetOptions{}); !apierrors.IsInternalError(err) {
		t.Errorf("GET under 500: %v, want InternalError", err)
	}
	if seen, _ := fake.requests(); len(seen) != 0 {
		t.Errorf("injected requests reached the apiserver: %v", seen)
	}

	// 503 carries Retry-After (client-go waits and retries by itself, so
	// it is read here with a plain client).
	p.SetRules(FaultRule{Verbs: []string{"GET"}, Code: 503, Share: 1})
	hc, err := rest.HTTPClientFor(p.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	resp, err := hc.Get(p.URL + "/api/v1/namespaces/ns/configmaps/cm1")
	if err != nil {
		t.Fatal(err)
	}
	var st metav1.Status
	_ = json.NewDecoder(resp.Body).Decode(&st)
	resp.Body.Close()
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") != "1" || st.Reason != metav1.StatusReasonServiceUnavailable || st.Details.RetryAfterSeconds != 1 {
		t.Errorf("503: code %d, Retry-After %q, status %+v", resp.StatusCode, resp.Header.Get("Retry-After"), st)
	}

	// After forwarding: the write happens, the client is told it failed.
	p.SetRules(FaultRule{Verbs: []string{"POST"}, Code: 500, Share: 1, AfterForward: true})
	if _, err = cms.Create(ctx, cm, metav1.CreateOptions{}); !apierrors.IsInternalError(err) {
		t.Errorf("POST under 500 after forwarding: %v, want InternalError", err)
	}
	if seen, _ := fake.requests(); len(seen) != 1 || seen[0] != "POST /api/v1/namespaces/ns/configmaps" {
		t.Errorf("upstream saw %v, want the POST", seen)
	}

	want := map[string]int{"409 POST": 1, "409 PATCH": 1, "500 GET": 1, "503 GET": 1, "500 POST after": 1}
	got := p.Injected()
	if len(got) != len(want) {
		t.Errorf("injected %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("injected[%q] = %d, want %d (all: %v)", k, got[k], v, got)
		}
	}
	if p.InjectedCode(500) != 2 {
		t.Errorf("InjectedCode(500) = %d, want 2", p.InjectedCode(500))
	}
}

func TestFaultProxyLeavesWatchesAloneUnlessAsked(t *testing.T) {
	p, _, cs := startFaultProxyForTest(t)
	p.SetRules(FaultRule{Code: 500, Share: 1})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	w, err := cs.CoreV1().ConfigMaps("ns").Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("watch through the proxy: %v", err)
	}
	defer w.Stop()
	select {
	case ev := <-w.ResultChan():
		if ev.Type != "ADDED" {
			t.Errorf("event %v", ev)
		}
	case <-ctx.Done():
		t.Fatal("the watch event was not streamed through")
	}
	p.SetRules(FaultRule{Verbs: []string{"WATCH"}, Code: 500, Share: 1})
	if _, err := cs.CoreV1().ConfigMaps("ns").Watch(ctx, metav1.ListOptions{}); !apierrors.IsInternalError(err) {
		t.Errorf("watch under a WATCH rule: %v, want InternalError", err)
	}
}

func TestFaultProxyShareIsHonoured(t *testing.T) {
	p := &FaultProxy{injected: map[string]int{}}
	p.rnd = mrand.New(mrand.NewPCG(1, 2))
	p.SetRules(FaultRule{Verbs: []string{"PATCH"}, Code: 409, Share: 0.25})
	hits := 0
	for range 4000 {
		if _, hit := p.pick("PATCH"); hit {
			hits++
		}
		if _, hit := p.pick("GET"); hit {
			t.Fatal("a GET matched a PATCH rule")
		}
	}
	if hits < 900 || hits > 1100 || p.Injected()["409 PATCH"] != hits || p.Forwarded() != 8000-hits {
		t.Errorf("hits %d of 4000 at share 0.25; injected %v, forwarded %d", hits, p.Injected(), p.Forwarded())
	}
}

func TestSplitKubePath(t *testing.T) {
	for path, want := range map[string][3]string{
		"/api/v1/namespaces/ns/events":                                  {"", "events", ""},
		"/api/v1/namespaces/ns/secrets/s1":                              {"", "secrets", "s1"},
		"/apis/oda.tmforum.org/v1/namespaces/ns/components/c1/status":   {"oda.tmforum.org", "components", "c1"},
		"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/x.y.z": {"apiextensions.k8s.io", "customresourcedefinitions", "x.y.z"},
		"/api/v1/namespaces/ns":                                         {"", "namespaces", "ns"},
		"/readyz":                                                       {"", "", ""},
	} {
		g, r, n := splitKubePath(path)
		if [3]string{g, r, n} != want {
			t.Errorf("splitKubePath(%q) = %q %q %q, want %v", path, g, r, n, want)
		}
	}
}

// TestFaultProxyFirstAlways: a rule marked FirstAlways fires on its first
// matching request even at a share that would almost never fire, then
// keeps its share.
func TestFaultProxyFirstAlways(t *testing.T) {
	p := &FaultProxy{injected: map[string]int{}}
	p.rnd = mrand.New(mrand.NewPCG(1, 2))
	p.SetRules(
		FaultRule{Verbs: []string{"PATCH"}, Code: 409, Share: 0.0001, FirstAlways: true},
		FaultRule{Code: 503, Share: 0.0001, FirstAlways: true},
		FaultRule{Verbs: []string{"PATCH"}, Code: 500, Share: 0.0001},
	)
	if r, hit := p.pick("GET"); !hit || r.Code != 503 {
		t.Errorf("first GET: %v %v, want the 503 rule", r, hit)
	}
	if r, hit := p.pick("PATCH"); !hit || r.Code != 409 {
		t.Errorf("first PATCH: %v %v, want the 409 rule", r, hit)
	}
	hits := 0
	for range 1000 {
		if _, hit := p.pick("PATCH"); hit {
			hits++
		}
	}
	if hits > 5 {
		t.Errorf("%d of 1000 PATCHes hit after the first: FirstAlways fired more than once", hits)
	}
}
