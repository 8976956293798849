package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/odaflow/odaflow/internal/config"
)

// fakeAPIServer answers each request with the next status of answers (the
// last repeats) and records the methods and bodies it received.
type fakeAPIServer struct {
	mu      sync.Mutex
	answers []int
	methods []string
	bodies  []string
}

func (f *fakeAPIServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	code := f.answers[min(len(f.methods), len(f.answers)-1)]
	f.methods = append(f.methods, r.Method)
	f.bodies = append(f.bodies, string(body))
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if code != http.StatusOK {
		st := metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure, Code: int32(code), Reason: metav1.StatusReason(http.StatusText(code))}
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(st)
		return
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"kind": "ConfigMap", "apiVersion": "v1", "metadata": map[string]any{"name": "cm", "namespace": "ns"}})
}

// clientFor builds a clientset through RESTConfig, so the test covers the
// wrapping every odaflow process gets.
func clientFor(t *testing.T, url string) kubernetes.Interface {
	t.Helper()
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "`+url+`"}}]
users: [{name: u, user: {}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`), 0o600)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := RESTConfig(config.Common{Kubeconfig: kubeconfig})
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

func TestRetryTransientRepeatsIdempotentRequests(t *testing.T) {
	patch := func(ctx context.Context, cs kubernetes.Interface) error {
		_, err := cs.CoreV1().ConfigMaps("ns").Patch(ctx, "cm", types.MergePatchType, []byte(`{"data":{"k":"v"}}`), metav1.PatchOptions{})
		return err
	}
	get := func(ctx context.Context, cs kubernetes.Interface) error {
		_, err := cs.CoreV1().ConfigMaps("ns").Get(ctx, "cm", metav1.GetOptions{})
		return err
	}
	create := func(ctx context.Context, cs kubernetes.Interface) error {
		_, err := cs.CoreV1().Events("ns").Create(ctx, nil, metav1.CreateOptions{})
		return err
	}
	del := func(ctx context.Context, cs kubernetes.Interface) error {
		return cs.CoreV1().ConfigMaps("ns").Delete(ctx, "cm", metav1.DeleteOptions{})
	}
	guardedPatch := func(ctx context.Context, cs kubernetes.Interface) error {
		return patch(GuardedWrite(ctx), cs)
	}
	tests := []struct {
		name      string
		call      func(context.Context, kubernetes.Interface) error
		answers   []int
		wantCalls int
		wantCode  int // 0: success
	}{
		{"success at once", patch, []int{200}, 1, 0},
		{"a conflict, then success", patch, []int{409, 200}, 2, 0},
		{"500, 503 and 502, then success", patch, []int{500, 503, 502, 200}, 4, 0},
		{"a timeout and throttling, then success", get, []int{504, 429, 200}, 3, 0},
		{"a delete is repeated", del, []int{503, 200}, 2, 0},
		{"always transient: the last answer after three repeats", patch, []int{500}, 4, 500},
		{"invalid is final", patch, []int{422, 200}, 1, 422},
		{"not found is final", get, []int{404, 200}, 1, 404},
		{"a create is never repeated", create, []int{503, 201}, 1, 503},
		{"a guarded write's conflict is final", guardedPatch, []int{409, 200}, 1, 409},
		{"a guarded write repeats other transient answers", guardedPatch, []int{503, 200}, 2, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			api := &fakeAPIServer{answers: tt.answers}
			srv := httptest.NewServer(api)
			defer srv.Close()
			repeatsBefore := repeatsCounted(t)
			err := tt.call(context.Background(), clientFor(t, srv.URL))
			if len(api.methods) != tt.wantCalls {
				t.Errorf("%d requests (%v), want %d", len(api.methods), api.methods, tt.wantCalls)
			}
			if got := repeatsCounted(t) - repeatsBefore; got != float64(tt.wantCalls-1) {
				t.Errorf("odaflow_kube_request_repeats_total grew by %v, want %d", got, tt.wantCalls-1)
			}
			var status apierrors.APIStatus
			switch {
			case tt.wantCode == 0 && err != nil:
				t.Errorf("error %v, want success", err)
			case tt.wantCode != 0 && (!errors.As(err, &status) || int(status.Status().Code) != tt.wantCode):
				t.Errorf("error %v, want an answer with code %d", err, tt.wantCode)
			}
			for i, b := range api.bodies {
				if b != api.bodies[0] {
					t.Errorf("request %d sent body %q, the first sent %q", i, b, api.bodies[0])
				}
			}
		})
	}
}

// repeatsCounted sums odaflow_kube_request_repeats_total over its series.
func repeatsCounted(t *testing.T) float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(kubeRequestRepeats)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	total := 0.0
	for _, f := range families {
		for _, m := range f.GetMetric() {
			total += m.GetCounter().GetValue()
		}
	}
	return total
}
