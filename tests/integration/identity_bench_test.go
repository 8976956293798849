package integration

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/odaflow/odaflow/oda"
)

// identityLatencyResult is what TestIdentityLatency writes to
// results/identity-latency.json.
type identityLatencyResult struct {
	Date       string `json:"date"`
	Machine    string `json:"machine"`
	Components int    `json:"components"`
	// CreateToRolesSeconds runs from the IdentityConfig's create call
	// returning to its Keycloak client holding every declared role (read
	// from the Keycloak double's state); CreateToSecretSeconds to the
	// credentials Secret's watch event.
	CreateToRolesSeconds  watcherPercentiles `json:"createToRolesSeconds"`
	CreateToSecretSeconds watcherPercentiles `json:"createToSecretSeconds"`
	// KeycloakRequestsPerComponent counts every request the double served
	// (tokens included), divided by the number of components.
	KeycloakRequestsPerComponent float64 `json:"keycloakRequestsPerComponent"`
}

// TestIdentityLatency measures the identity step against the Keycloak
// double on the real apiserver and Temporal server. A measurement:
//
//	ODAFLOW_BENCH=1 go test ./tests/integration/ -run TestIdentityLatency -v
func TestIdentityLatency(t *testing.T) {
	if os.Getenv("ODAFLOW_BENCH") != "1" {
		t.Skip("a measurement: ODAFLOW_BENCH=1 go test ./tests/integration/ -run TestIdentityLatency -v")
	}
	n := 100
	if s := os.Getenv("ODAFLOW_BENCH_N"); s != "" {
		if _, err := fmt.Sscanf(s, "%d", &n); err != nil || n < 1 {
			t.Fatalf("ODAFLOW_BENCH_N=%q: want a positive number", s)
		}
	}
	ns := "it-identity-bench"
	createNamespace(t, ns)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	roles := []string{"Admin", "cat1owner", "cat2owner"}

	var mu sync.Mutex
	created := map[string]time.Time{}
	secretAt := map[string]time.Time{}
	rolesAt := map[string]time.Time{}
	existing, err := stack.core.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := watchtools.NewRetryWatcherWithContext(ctx, existing.ResourceVersion, &cache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return stack.core.CoreV1().Secrets(ns).Watch(ctx, o)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		defer w.Stop()
		for ev := range w.ResultChan() {
			s, ok := ev.Object.(*corev1.Secret)
			if !ok || ev.Type == watch.Deleted {
				continue
			}
			mu.Lock()
			if _, seen := secretAt[s.Name]; !seen {
				secretAt[s.Name] = time.Now()
			}
			mu.Unlock()
		}
	}()
	// The roles are read from the double's memory every 10 ms: no request.
	go func() {
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			mu.Lock()
			names := make([]string, 0, len(created))
			for name := range created {
				if _, done := rolesAt[name]; !done {
					names = append(names, name)
				}
			}
			mu.Unlock()
			for _, name := range names {
				have, ok := stack.keycloak.ClientRoles(keycloakRealm, name)
				if ok && len(have) >= len(roles) && containsAll(have, roles) {
					mu.Lock()
					rolesAt[name] = time.Now()
					mu.Unlock()
				}
			}
		}
	}()

	stack.keycloak.ResetRequests()
	for i := range n {
		name := fmt.Sprintf("idb-%03d", i)
		create(t, oda.KindIdentityConfig, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": oda.APIVersion, "kind": oda.KindIdentityConfig.Name,
			"metadata": map[string]any{"name": name, "namespace": ns, "labels": map[string]any{oda.LabelComponentName: name}},
			"spec": map[string]any{"canvasSystemRole": "Admin", "componentRole": []any{
				map[string]any{"name": "cat1owner", "description": "owner of catalog 1"},
				map[string]any{"name": "cat2owner", "description": "owner of catalog 2"},
			}},
		}})
		mu.Lock()
		created[name] = time.Now()
		mu.Unlock()
	}
	eventually(t, 5*time.Minute, "every identity set up", func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		done := 0
		for name := range created {
			if _, ok := secretAt[name+"-secret"]; ok {
				if _, ok := rolesAt[name]; ok {
					done++
				}
			}
		}
		return done == n, fmt.Sprintf("%d of %d", done, n)
	})
	// Let the last status writes land before counting requests.
	time.Sleep(2 * time.Second)
	requests := len(stack.keycloak.Requests())
	var toRoles, toSecret []time.Duration
	mu.Lock()
	for name, at := range created {
		toRoles = append(toRoles, rolesAt[name].Sub(at))
		toSecret = append(toSecret, secretAt[name+"-secret"].Sub(at))
	}
	mu.Unlock()
	res := identityLatencyResult{
		Date: time.Now().UTC().Format(time.RFC3339), Machine: fmt.Sprintf("%s/%s, %d CPUs", runtime.GOOS, runtime.GOARCH, runtime.NumCPU()),
		Components: n, CreateToRolesSeconds: watcherPercentilesOf(toRoles), CreateToSecretSeconds: watcherPercentilesOf(toSecret),
		KeycloakRequestsPerComponent: float64(requests) / float64(n),
	}
	r, s := res.CreateToRolesSeconds, res.CreateToSecretSeconds
	t.Logf("%d IdentityConfigs: create → client and roles p50 %.0f ms p99 %.0f ms; → Secret p50 %.0f ms p99 %.0f ms; %.1f Keycloak requests each",
		n, r.P50*1000, r.P99*1000, s.P50*1000, s.P99*1000, res.KeycloakRequestsPerComponent)
	writeResult(t, "identity-latency.json", res)
}

func containsAll(have, want []string) bool {
	for _, w := range want {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}
