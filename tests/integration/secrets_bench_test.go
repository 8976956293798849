package integration

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/odaflow/odaflow/oda"
	"github.com/odaflow/odaflow/secrets"
)

// secretsLatencyResult is what TestSecretsLatency writes to
// results/secrets-latency.json.
type secretsLatencyResult struct {
	Date       string `json:"date"`
	Machine    string `json:"machine"`
	Components int    `json:"components"`
	// CreateToReadySeconds runs from the SecretsManagement's create call
	// returning to the watch event with status.implementation.ready true:
	// Vault configured (mount, policy, role; the first also enables and
	// configures the auth method) and the selected pod checked.
	CreateToReadySeconds watcherPercentiles `json:"createToReadySeconds"`
	// VaultRequestsPerComponent counts every request odaflow's worker sent
	// to Vault (through the counting proxy), divided by the components;
	// VaultRequests breaks the total down by method and route.
	VaultRequestsPerComponent float64        `json:"vaultRequestsPerComponent"`
	VaultRequests             map[string]int `json:"vaultRequests"`
	// DeleteVaultRequestsPerComponent is the same for their deletion.
	DeleteVaultRequestsPerComponent float64 `json:"deleteVaultRequestsPerComponent"`
}

// TestSecretsLatency measures SecretsManagement on the real apiserver,
// Temporal server and Vault dev server: N SecretsManagements created
// directly, each selecting one pod that already runs the sidecar, so
// "ready" needs Vault configured and one pod check. A measurement:
//
//	ODAFLOW_BENCH=1 go test ./tests/integration/ -run TestSecretsLatency -v
func TestSecretsLatency(t *testing.T) {
	if os.Getenv("ODAFLOW_BENCH") != "1" {
		t.Skip("a measurement: ODAFLOW_BENCH=1 go test ./tests/integration/ -run TestSecretsLatency -v")
	}
	requireVault(t)
	n := 50
	if s := os.Getenv("ODAFLOW_BENCH_N"); s != "" {
		if _, err := fmt.Sscanf(s, "%d", &n); err != nil || n < 1 {
			t.Fatalf("ODAFLOW_BENCH_N=%q: want a positive number", s)
		}
	}
	ns := "it-secrets-bench"
	createNamespace(t, ns)
	ensureServiceAccount(t, ns, "default")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	// Every SecretsManagement's pod runs (with the sidecar) before it is
	// created: what is measured is odaflow's work, not a rollout.
	for i := range n {
		wl := newSidecarWorkload(t, ns, fmt.Sprintf("smb-%03d", i))
		wl.runPod(t, "aaaaa", true)
	}

	var mu sync.Mutex
	created := map[string]time.Time{}
	readyAt := map[string]time.Time{}
	sms := stack.dyn.Resource(oda.KindSecretsManagement.GVR()).Namespace(ns)
	existing, err := sms.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := watchtools.NewRetryWatcherWithContext(ctx, existing.GetResourceVersion(), &cache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) { return sms.Watch(ctx, o) },
	})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		defer w.Stop()
		for ev := range w.ResultChan() {
			u, ok := ev.Object.(*unstructured.Unstructured)
			if !ok || ev.Type == watch.Deleted || !secretsState(u).ready {
				continue
			}
			mu.Lock()
			if _, seen := readyAt[u.GetName()]; !seen {
				readyAt[u.GetName()] = time.Now()
			}
			mu.Unlock()
		}
	}()

	beforeCounts, before := stack.vaultProxy.snapshot()
	for i := range n {
		name := fmt.Sprintf("smb-%03d", i)
		create(t, oda.KindSecretsManagement, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": oda.APIVersion, "kind": oda.KindSecretsManagement.Name,
			"metadata": map[string]any{"name": name, "namespace": ns, "labels": map[string]any{oda.LabelComponentName: name}},
			"spec": map[string]any{"type": secrets.TypeSideCar, "podSelector": map[string]any{
				"namespace": ns, "name": name + "-*", "serviceaccount": "default"}},
		}})
		mu.Lock()
		created[name] = time.Now()
		mu.Unlock()
	}
	eventually(t, 5*time.Minute, "every SecretsManagement ready", func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		return len(readyAt) == n, fmt.Sprintf("%d of %d", len(readyAt), n)
	})
	// Ready is written after the last Vault call; nothing more is expected,
	// but a late request would be counted against the next phase.
	afterCounts, after := stack.vaultProxy.snapshot()
	byRoute := map[string]int{}
	for k, v := range afterCounts {
		if d := v - beforeCounts[k]; d > 0 {
			byRoute[k] = d
		}
	}
	var toReady []time.Duration
	mu.Lock()
	for name, at := range created {
		toReady = append(toReady, readyAt[name].Sub(at))
	}
	mu.Unlock()

	// Their deletion: every store removed from Vault.
	for i := range n {
		if err := sms.Delete(ctx, fmt.Sprintf("smb-%03d", i), metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, 5*time.Minute, "every SecretsManagement deleted", func() (bool, string) {
		l, err := sms.List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		return len(l.Items) == 0, fmt.Sprintf("%d left", len(l.Items))
	})
	_, afterDelete := stack.vaultProxy.snapshot()
	mounts, err := stack.vaultRoot.Sys().ListMountsWithContext(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if _, ok := mounts[secrets.NamesFor(ns, fmt.Sprintf("smb-%03d", i)).Mount+"/"]; ok {
			t.Errorf("mount of smb-%03d left in Vault after deletion", i)
		}
	}

	res := secretsLatencyResult{
		Date: time.Now().UTC().Format(time.RFC3339), Machine: fmt.Sprintf("%s/%s, %d CPUs", runtime.GOOS, runtime.GOARCH, runtime.NumCPU()),
		Components: n, CreateToReadySeconds: watcherPercentilesOf(toReady),
		VaultRequestsPerComponent: float64(after-before) / float64(n), VaultRequests: byRoute,
		DeleteVaultRequestsPerComponent: float64(afterDelete-after) / float64(n),
	}
	r := res.CreateToReadySeconds
	t.Logf("%d SecretsManagements: create → ready p50 %.0f ms p99 %.0f ms max %.0f ms; %.2f Vault requests each to configure (%v), %.2f to delete",
		n, r.P50*1000, r.P99*1000, r.Max*1000, res.VaultRequestsPerComponent, byRoute, res.DeleteVaultRequestsPerComponent)
	writeResult(t, "secrets-latency.json", res)
}
