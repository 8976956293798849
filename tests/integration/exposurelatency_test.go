package integration

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"text/tabwriter"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/odaflow/odaflow/oda"
)

// exposureLatencyResult is results/exposure-latency.json.
type exposureLatencyResult struct {
	Date    string `json:"date"`
	Machine string `json:"machine"`
	// N ExposedAPIs per gateway, created directly (no Component), each
	// with its own implementation Service whose EndpointSlice is ready and
	// with the gateway's ingress address already present.
	N           int              `json:"n"`
	Concurrency int              `json:"concurrency"`
	Method      string           `json:"method"`
	Gateways    []gatewayLatency `json:"gateways"`
}

type gatewayLatency struct {
	Gateway       string  `json:"gateway"`
	CreateSeconds float64 `json:"createWallSeconds"`
	// Create call returned → first watch event with status.apiStatus.url,
	// and → first with status.implementation.ready true.
	URL   watcherPercentiles `json:"createToURLSeconds"`
	Ready watcherPercentiles `json:"createToReadySeconds"`
	// AllReadySeconds is first create → last API ready.
	AllReadySeconds float64 `json:"allReadySeconds"`
	// Apiserver requests odaflow made per API (worker and watcher, by
	// method), from create to quiet, the test's own requests taken out.
	KubeRequestsPerAPI         float64            `json:"kubeRequestsPerAPI"`
	KubeRequestsPerAPIByMethod map[string]float64 `json:"kubeRequestsPerAPIByMethod"`
	// Kong Admin API requests per API (kong-admin only), by method.
	KongAdminRequestsPerAPI         float64            `json:"kongAdminRequestsPerAPI,omitempty"`
	KongAdminRequestsPerAPIByMethod map[string]float64 `json:"kongAdminRequestsPerAPIByMethod,omitempty"`
	// DeleteSeconds is delete of all → every ExposedAPI gone (its gateway
	// objects removed and the finalizer released).
	DeleteSeconds float64 `json:"deleteAllSeconds"`
}

// TestGatewayExposureLatency measures, per gateway, how long an ExposedAPI
// takes from create to url and to ready on the local stack, and how many
// apiserver (and Kong Admin) requests odaflow makes per API. It is a
// measurement, not a pass/fail test, and writes results/exposure-latency.json:
//
//	ODAFLOW_BENCH=1 go test ./tests/integration/ -run TestGatewayExposureLatency -v
//
// ODAFLOW_BENCH_N changes the number of APIs (100), ODAFLOW_BENCH_GATEWAYS
// the gateways (istio,kong,kong-admin,apisix).
func TestGatewayExposureLatency(t *testing.T) {
	if os.Getenv("ODAFLOW_BENCH") != "1" {
		t.Skip("a measurement: ODAFLOW_BENCH=1 go test ./tests/integration/ -run TestGatewayExposureLatency -v")
	}
	n := 100
	if s := os.Getenv("ODAFLOW_BENCH_N"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 {
			t.Fatalf("ODAFLOW_BENCH_N=%q: want a positive number", s)
		}
		n = v
	}
	gateways := []string{"istio", "kong", "kong-admin", "apisix"}
	if s := os.Getenv("ODAFLOW_BENCH_GATEWAYS"); s != "" {
		gateways = strings.Split(s, ",")
	}
	res := exposureLatencyResult{
		Date:        time.Now().UTC().Format(time.RFC3339),
		Machine:     fmt.Sprintf("%s/%s, %d CPUs", runtime.GOOS, runtime.GOARCH, runtime.NumCPU()),
		N:           n,
		Concurrency: latencyConcurrency,
		Method: "one worker and one watcher per gateway in the test process, real kube-apiserver and Temporal dev server; " +
			"times from the create call's return to the first watch event showing the field; apiserver requests from " +
			"odaflow_kube_requests_total (process-wide) minus the test's own, counted by its transport, from the first create " +
			"until the counter is quiet for 2 s, divided by N",
	}
	for _, gw := range gateways {
		var r gatewayLatency
		ok := t.Run(gw, func(t *testing.T) { r = measureExposure(t, gw, n) })
		if !ok {
			t.Fatalf("%s: the measurement failed", gw)
		}
		res.Gateways = append(res.Gateways, r)
	}

	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "gateway\tAPIs\turl p50\turl p99\tready p50\tready p99\tall ready\tkube req/API\tkong req/API\tdelete all\t\n")
	ms := func(s float64) string { return fmt.Sprintf("%.0f ms", s*1000) }
	for _, g := range res.Gateways {
		kong := "-"
		if g.KongAdminRequestsPerAPI > 0 {
			kong = fmt.Sprintf("%.2f", g.KongAdminRequestsPerAPI)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%.1f s\t%.2f\t%s\t%.1f s\t\n", g.Gateway, n, ms(g.URL.P50), ms(g.URL.P99),
			ms(g.Ready.P50), ms(g.Ready.P99), g.AllReadySeconds, g.KubeRequestsPerAPI, kong, g.DeleteSeconds)
	}
	_ = tw.Flush()
	t.Logf("ExposedAPI create → url / → ready:\n%s", b.String())
	for _, g := range res.Gateways {
		t.Logf("%s: apiserver requests per API by method %v; Kong Admin %v", g.Gateway, g.KubeRequestsPerAPIByMethod, g.KongAdminRequestsPerAPIByMethod)
	}

	writeResult(t, "exposure-latency.json", res)
}

const latencyConcurrency = 8

// countingTransport counts the test's own apiserver requests by method,
// so that they can be taken out of the process-wide counter.
type countingTransport struct {
	base http.RoundTripper
	c    *methodCounts
}

type methodCounts struct {
	mu sync.Mutex
	n  map[string]float64
}

func (m *methodCounts) snapshot() map[string]float64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return maps.Clone(m.n)
}

func (c countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.c.mu.Lock()
	c.c.n[r.Method]++
	c.c.mu.Unlock()
	return c.base.RoundTrip(r)
}

// resourceWatcher lets a RetryWatcher re-open the test's watch, which the
// apiserver may close at any time.
type resourceWatcher struct{ ri dynamic.ResourceInterface }

func (w resourceWatcher) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	return w.ri.Watch(ctx, opts)
}

func measureExposure(t *testing.T, gw string, n int) gatewayLatency {
	ctx := context.Background()
	gs := startGatewayStack(t, gw, "34.159.217.90")
	ns := gs.nsPrefix + "bench"
	createNamespace(t, ns)
	names := make([]string, n)
	index := map[string]int{}
	for i := range names {
		names[i] = fmt.Sprintf("bench-%03d", i)
		index[names[i]] = i
		setEndpoints(t, ns, fmt.Sprintf("bench-impl-%03d", i), true)
	}

	own := &methodCounts{n: map[string]float64{}}
	cfg := rest.CopyConfig(stack.kube.RESTConfig)
	cfg.QPS, cfg.Burst = 500, 1000 // the test's creates must not be the bottleneck
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return countingTransport{base: rt, c: own} })
	dyn := dynamic.NewForConfigOrDie(cfg)
	api := dyn.Resource(oda.KindExposedAPI.GVR()).Namespace(ns)

	list, err := api.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list ExposedAPIs: %v", err)
	}
	w, err := watchtools.NewRetryWatcherWithContext(ctx, list.GetResourceVersion(), resourceWatcher{api})
	if err != nil {
		t.Fatalf("watch ExposedAPIs: %v", err)
	}
	defer w.Stop()
	urlAt := make([]time.Time, n)
	readyAt := make([]time.Time, n)
	var mu sync.Mutex
	done := make(chan struct{})
	watchErr := make(chan error, 1)
	go func() {
		left := 2 * n
		for ev := range w.ResultChan() {
			now := time.Now()
			if ev.Type == watch.Error {
				watchErr <- fmt.Errorf("watch error: %v", ev.Object)
				return
			}
			u, ok := ev.Object.(*unstructured.Unstructured)
			if !ok {
				continue
			}
			i, ok := index[u.GetName()]
			if !ok {
				continue
			}
			url, ready := apiStatus(u)
			mu.Lock()
			if url != "" && urlAt[i].IsZero() {
				urlAt[i] = now
				left--
			}
			if ready && readyAt[i].IsZero() {
				readyAt[i] = now
				left--
			}
			mu.Unlock()
			if left == 0 {
				close(done)
				return
			}
		}
		watchErr <- errors.New("the watch closed")
	}()

	time.Sleep(time.Second) // let the watch's own request settle before counting
	kubeBefore := kubeRequestsTotal(t, gs.metricsURL)
	ownBefore := own.snapshot()
	kongBefore := 0
	if gs.kong != nil {
		kongBefore = len(gs.kong.Requests())
	}

	created := make([]time.Time, n)
	errs := make([]error, n)
	next := make(chan int)
	var wg sync.WaitGroup
	start := time.Now()
	for range latencyConcurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				u := &unstructured.Unstructured{Object: map[string]any{
					"apiVersion": oda.APIVersion, "kind": oda.KindExposedAPI.Name,
					"metadata": map[string]any{"name": names[i], "namespace": ns},
					"spec": map[string]any{
						"name": names[i], "apiType": "openapi", "port": int64(8080),
						"implementation": fmt.Sprintf("bench-impl-%03d", i),
						"path":           fmt.Sprintf("/%s/bench-%03d/tmf-api/productCatalogManagement/v4", ns, i),
					},
				}}
				_, errs[i] = api.Create(ctx, u, metav1.CreateOptions{})
				created[i] = time.Now()
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	createWall := time.Since(start)
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("create: %v", err)
	}
	select {
	case <-done:
	case err := <-watchErr:
		t.Fatal(err)
	case <-time.After(10 * time.Minute):
		mu.Lock()
		missing := 0
		for i := range n {
			if readyAt[i].IsZero() {
				missing++
			}
		}
		mu.Unlock()
		t.Fatalf("%d of %d ExposedAPIs not ready after 10 minutes", missing, n)
	}
	allReady := time.Since(start)

	// Wait for the requests that follow the last status write (the
	// workflows settle) before reading the counters.
	kubeAfter := kubeRequestsTotal(t, gs.metricsURL)
	for quiet, deadline := time.Now(), time.Now().Add(60*time.Second); time.Since(quiet) < 2*time.Second && time.Now().Before(deadline); {
		time.Sleep(500 * time.Millisecond)
		if cur := kubeRequestsTotal(t, gs.metricsURL); !maps.Equal(cur, kubeAfter) {
			kubeAfter, quiet = cur, time.Now()
		}
	}
	ownAfter := own.snapshot()

	mu.Lock()
	urlLat := make([]time.Duration, n)
	readyLat := make([]time.Duration, n)
	for i := range n {
		urlLat[i] = urlAt[i].Sub(created[i])
		readyLat[i] = readyAt[i].Sub(created[i])
	}
	mu.Unlock()
	r := gatewayLatency{
		Gateway: gw, CreateSeconds: createWall.Seconds(), AllReadySeconds: allReady.Seconds(),
		URL: watcherPercentilesOf(urlLat), Ready: watcherPercentilesOf(readyLat),
		KubeRequestsPerAPIByMethod: map[string]float64{},
	}
	// odaflow's = the process's minus the test's own (its creates, and any
	// re-opened watch), method by method.
	var total float64
	for m, v := range kubeAfter {
		d := v - kubeBefore[m] - (ownAfter[m] - ownBefore[m])
		if d != 0 {
			r.KubeRequestsPerAPIByMethod[m] = d / float64(n)
			total += d
		}
	}
	r.KubeRequestsPerAPI = total / float64(n)
	ownDelta := 0.0
	for m, v := range ownAfter {
		ownDelta += v - ownBefore[m]
	}
	if gs.kong != nil {
		reqs := gs.kong.Requests()[kongBefore:]
		r.KongAdminRequestsPerAPI = float64(len(reqs)) / float64(n)
		r.KongAdminRequestsPerAPIByMethod = map[string]float64{}
		for _, q := range reqs {
			r.KongAdminRequestsPerAPIByMethod[q.Method] += 1 / float64(n)
		}
		if got := gs.kong.Count("routes"); got != n {
			t.Errorf("Kong holds %d routes for %d APIs", got, n)
		}
	}
	if int(ownDelta) != n {
		t.Logf("note: the test made %d requests in the window for %d creates", int(ownDelta), n)
	}

	// Delete them all: every one must go (gateway objects removed and the
	// finalizer released) before this gateway's worker stops.
	delStart := time.Now()
	if err := stack.dyn.Resource(oda.KindExposedAPI.GVR()).Namespace(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		t.Fatalf("delete the ExposedAPIs: %v", err)
	}
	eventually(t, 5*time.Minute, "every ExposedAPI deleted", func() (bool, string) {
		l, err := stack.dyn.Resource(oda.KindExposedAPI.GVR()).Namespace(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		return len(l.Items) == 0, fmt.Sprintf("%d left", len(l.Items))
	})
	r.DeleteSeconds = time.Since(delStart).Seconds()
	if gs.kong != nil {
		for _, table := range []string{"services", "routes", "plugins"} {
			if c := gs.kong.Count(table); c != 0 {
				t.Errorf("Kong still holds %d %s after the deletion", c, table)
			}
		}
	}
	keys := slices.Sorted(maps.Keys(r.KubeRequestsPerAPIByMethod))
	t.Logf("%s: %d APIs, url p50 %.0f ms p99 %.0f ms, ready p50 %.0f ms p99 %.0f ms, %.2f apiserver requests/API (%v), delete all %.1f s",
		gw, n, r.URL.P50*1000, r.URL.P99*1000, r.Ready.P50*1000, r.Ready.P99*1000, r.KubeRequestsPerAPI, keys, r.DeleteSeconds)
	return r
}
