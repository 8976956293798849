package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/odaflow/odaflow/internal/localstack"
	"github.com/odaflow/odaflow/oda"
)

// dependencyLatencyResult is what TestDependencyLatency writes to
// results/dependency-latency.json.
type dependencyLatencyResult struct {
	Date    string `json:"date"`
	Machine string `json:"machine"`
	Pairs   int    `json:"pairs"`
	// ProviderReadyToDependantReadySeconds runs from the watch event in
	// which a provider ExposedAPI's status says ready (with a url) to the
	// watch event in which its DependentAPI's status does.
	ProviderReadyToDependantReadySeconds watcherPercentiles `json:"providerReadyToDependantReadySeconds"`
	// WaitingHistoryEvents is how many history events a DependentAPI's
	// workflow added while it waited WaitedSeconds for a provider.
	WaitingHistoryEvents int     `json:"waitingHistoryEvents"`
	WaitedSeconds        float64 `json:"waitedSeconds"`
}

// TestDependencyLatency measures how fast DependentAPIs follow their
// providers on the real apiserver and Temporal server, and what a waiting
// DependentAPI costs. A measurement, not a pass/fail test:
//
//	ODAFLOW_BENCH=1 go test ./tests/integration/ -run TestDependencyLatency -v
func TestDependencyLatency(t *testing.T) {
	if os.Getenv("ODAFLOW_BENCH") != "1" {
		t.Skip("a measurement: ODAFLOW_BENCH=1 go test ./tests/integration/ -run TestDependencyLatency -v")
	}
	pairs := 100
	if s := os.Getenv("ODAFLOW_BENCH_N"); s != "" {
		if _, err := fmt.Sscanf(s, "%d", &pairs); err != nil || pairs < 1 {
			t.Fatalf("ODAFLOW_BENCH_N=%q: want a positive number", s)
		}
	}
	ns := "it-dep-bench"
	createNamespace(t, ns)
	ensureIngress(t)
	setIngressAddress(t, "34.159.217.74")
	setEndpoints(t, ns, "bench-impl", true)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	var mu sync.Mutex
	providerReady := map[int]time.Time{}
	dependantReady := map[int]time.Time{}
	follow := func(kind oda.Kind, into map[int]time.Time, ready func(*unstructured.Unstructured) bool) {
		ri := stack.dyn.Resource(kind.GVR()).Namespace(ns)
		list, err := ri.List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		w, err := watchtools.NewRetryWatcherWithContext(ctx, list.GetResourceVersion(), resourceWatcher{ri})
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			defer w.Stop()
			for ev := range w.ResultChan() {
				u, ok := ev.Object.(*unstructured.Unstructured)
				if !ok || ev.Type == watch.Deleted || !ready(u) {
					continue
				}
				var i int
				if _, err := fmt.Sscanf(u.GetLabels()["bench-pair"], "%d", &i); err != nil {
					continue
				}
				mu.Lock()
				if _, seen := into[i]; !seen {
					into[i] = time.Now()
				}
				mu.Unlock()
			}
		}()
	}
	follow(oda.KindExposedAPI, providerReady, func(u *unstructured.Unstructured) bool { url, ready := apiStatus(u); return ready && url != "" })
	follow(oda.KindDependentAPI, dependantReady, func(u *unstructured.Unstructured) bool { url, ready := dependencyStatus(u); return ready && url != "" })

	specURL := func(i int) string { return fmt.Sprintf("https://example.com/bench/api-%03d.json", i) }
	for i := range pairs {
		create(t, oda.KindDependentAPI, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": oda.APIVersion, "kind": oda.KindDependentAPI.Name,
			"metadata": map[string]any{"name": fmt.Sprintf("dep-%03d", i), "namespace": ns,
				"labels": map[string]any{"bench-pair": fmt.Sprint(i), oda.LabelComponentName: fmt.Sprintf("consumer-%03d", i)}},
			"spec": map[string]any{"name": "dep", "apiType": "openapi", "specification": map[string]any{"url": specURL(i)}},
		}})
	}
	// Every DependentAPI is now waiting: measure what waiting costs.
	probe := oda.WorkflowID(oda.KindDependentAPI.Name, ns, "dep-000")
	eventually(t, 60*time.Second, "the probe DependentAPI waits", func() (bool, string) {
		u, err := get(oda.KindDependentAPI, ns, "dep-000")
		if err != nil {
			return false, err.Error()
		}
		reason, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		return len(reason) > 0, "no condition yet"
	})
	before := historyLength(t, probe)
	const wait = 30 * time.Second
	time.Sleep(wait)
	waiting := historyLength(t, probe) - before

	for i := range pairs {
		create(t, oda.KindExposedAPI, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": oda.APIVersion, "kind": oda.KindExposedAPI.Name,
			"metadata": map[string]any{"name": fmt.Sprintf("provider-%03d", i), "namespace": ns,
				"labels": map[string]any{"bench-pair": fmt.Sprint(i), oda.LabelComponentName: fmt.Sprintf("provider-%03d", i)}},
			"spec": map[string]any{"name": "api", "apiType": "openapi", "specification": map[string]any{"url": specURL(i)},
				"implementation": "bench-impl", "path": fmt.Sprintf("/bench/provider-%03d/v4", i), "port": int64(8080)},
		}})
	}
	eventually(t, 5*time.Minute, "every dependant ready", func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		if len(dependantReady) == pairs {
			return true, ""
		}
		dep, _ := get(oda.KindDependentAPI, ns, "dep-000")
		prov, _ := get(oda.KindExposedAPI, ns, "provider-000")
		return false, fmt.Sprintf("%d of %d providers and %d dependants ready; dep-000 status %v; provider-000 status %v",
			len(providerReady), pairs, len(dependantReady), dep.Object["status"], prov.Object["status"])
	})
	var lat []time.Duration
	mu.Lock()
	for i := range pairs {
		lat = append(lat, dependantReady[i].Sub(providerReady[i]))
	}
	mu.Unlock()
	res := dependencyLatencyResult{
		Date: time.Now().UTC().Format(time.RFC3339), Machine: fmt.Sprintf("%s/%s, %d CPUs", runtime.GOOS, runtime.GOARCH, runtime.NumCPU()),
		Pairs: pairs, ProviderReadyToDependantReadySeconds: watcherPercentilesOf(lat),
		WaitingHistoryEvents: waiting, WaitedSeconds: wait.Seconds(),
	}
	p := res.ProviderReadyToDependantReadySeconds
	t.Logf("provider ready → dependant ready over %d pairs: p50 %.0f ms, p90 %.0f ms, p99 %.0f ms, max %.0f ms; a waiting DependentAPI added %d history events in %s",
		pairs, p.P50*1000, p.P90*1000, p.P99*1000, p.Max*1000, waiting, wait)
	writeResult(t, "dependency-latency.json", res)
}

// writeResult writes a measurement to results/<file> at the repository's
// root, where the README's figures come from.
func writeResult(t *testing.T, file string, res any) {
	t.Helper()
	root, err := localstack.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	data, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(root, "results", file)
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(out, append(data, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s", out)
}

// historyLength is the number of events in a workflow's current run.
func historyLength(t *testing.T, workflowID string) int {
	t.Helper()
	n := 0
	for _, c := range historyCounts(t, workflowID) {
		n += c
	}
	return n
}
