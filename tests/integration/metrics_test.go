package integration

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	odaflowchart "github.com/odaflow/odaflow/charts/odaflow"
	"github.com/odaflow/odaflow/internal/config"
	"github.com/odaflow/odaflow/internal/dashboard"
	"github.com/odaflow/odaflow/oda"
	"github.com/odaflow/odaflow/tests/fixtures"
	"github.com/odaflow/odaflow/watcher"
)

// seriesNames scrapes a /metrics page and returns the name of every series
// on it (a histogram shows as its _bucket, _sum and _count series, as
// PromQL queries it).
func seriesNames(t *testing.T, url string) map[string]bool {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("scrape %s: %v", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("scrape %s: %s", url, resp.Status)
	}
	names := map[string]bool{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if i := strings.IndexAny(line, "{ "); i > 0 {
			names[line[:i]] = true
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("read %s: %v", url, err)
	}
	return names
}

// runOneLifecycle takes a provider and a dependant Component from creation
// to Complete and through their deletion, with Keycloak and the Service
// Inventory unavailable at the start: every series a lifecycle creates on
// first use exists afterwards, the error series included (failed local
// activities against Keycloak, failed activities against the inventory).
func runOneLifecycle(t *testing.T, ns string) {
	t.Helper()
	readyNamespace(t, ns)
	workerMetrics := "http://" + stack.workerHTTP + "/metrics"
	stack.keycloak.SetUnavailable(http.StatusServiceUnavailable)
	stack.inventory.SetDown(true)
	restore := func() {
		stack.keycloak.SetUnavailable(0)
		stack.inventory.SetDown(false)
	}
	t.Cleanup(restore)
	provider, dependant := "mx-provider", "mx-dependant"
	// And one whose spec odaflow refuses: the Failed series exist too.
	bad := fixtures.WithOwnPaths(fixtures.WithoutDependentAPIs(fixtures.ProductCatalog(ns, "mx-malformed")))
	fixtures.Spec(bad)["securityFunction"].(map[string]any)["canvasSystemRole"] = ""
	create(t, oda.KindComponent, bad)
	create(t, oda.KindComponent, fixtures.WithOwnPaths(fixtures.WithoutDependentAPIs(fixtures.ProductCatalog(ns, provider))))
	create(t, oda.KindComponent, fixtures.WithOwnPaths(fixtures.ProductCatalog(ns, dependant)))
	eventually(t, 90*time.Second, "activities fail while Keycloak and the inventory are down", func() (bool, string) {
		names := seriesNames(t, workerMetrics)
		return names["temporal_local_activity_execution_failed_total"] && names["temporal_activity_execution_failed_total"],
			fmt.Sprintf("local failed %t, remote failed %t", names["temporal_local_activity_execution_failed_total"], names["temporal_activity_execution_failed_total"])
	})
	restore()
	for _, name := range []string{provider, dependant} {
		waitPhase(t, ns, name, oda.StatusComplete, 90*time.Second)
	}
	waitPhase(t, ns, "mx-malformed", oda.StatusFailed, 30*time.Second)
	for _, name := range []string{dependant, provider, "mx-malformed"} {
		if err := stack.dyn.Resource(oda.KindComponent.GVR()).Namespace(ns).Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
			t.Fatalf("delete %s: %v", name, err)
		}
		wfID := oda.WorkflowID(oda.KindComponent.Name, ns, name)
		eventually(t, 60*time.Second, name+"'s workflow completes after deletion", func() (bool, string) {
			st, err := workflowStatus(wfID)
			return err == nil && st == enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED, fmt.Sprint(st, err)
		})
	}
}

// startLeaderElectedWatcher starts a watcher with leader election on, on
// its own task queue and serving no namespace, and returns its HTTP address.
func startLeaderElectedWatcher(t *testing.T, ns string) string {
	t.Helper()
	createNamespace(t, ns)
	common := stack.common
	common.TaskQueue = ns
	common.Namespaces = []string{ns + "-serves-nothing"}
	var addr string
	common.HTTPAddress, addr = listenAddress()
	app := watcher.NewApp(config.Watcher{Common: common, LeaderElect: true,
		LeaderElectionNamespace: ns, LeaderElectionID: "odaflow-watcher", Identity: "metrics-watcher"})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := app.Start(ctx); err != nil {
		t.Fatalf("start the leader-elected watcher: %v", err)
	}
	t.Cleanup(func() { stopApp(app) })
	return addr
}

// The Temporal SDK's metrics, through its OpenTelemetry handler, under the
// names Temporal documents: after a real lifecycle the worker's /metrics has
// the worker-side series and the watcher's the client-side ones.
var temporalSDKSeries = map[string][]string{
	"worker": {
		"temporal_request_total",
		"temporal_long_request_total",
		"temporal_request_latency_seconds_bucket",
		"temporal_workflow_task_schedule_to_start_latency_seconds_bucket",
		"temporal_workflow_task_execution_latency_seconds_bucket",
		"temporal_workflow_task_replay_latency_seconds_bucket",
		"temporal_workflow_endtoend_latency_seconds_bucket",
		"temporal_workflow_completed_total",
		"temporal_activity_schedule_to_start_latency_seconds_bucket",
		"temporal_activity_execution_latency_seconds_bucket",
		"temporal_activity_succeed_endtoend_latency_seconds_bucket",
		"temporal_activity_execution_failed_total",
		"temporal_local_activity_total",
		"temporal_local_activity_execution_failed_total",
		"temporal_local_activity_execution_latency_seconds_bucket",
		"temporal_worker_start_total",
		"temporal_worker_task_slots_available",
		"temporal_num_pollers",
		"temporal_sticky_cache_size",
	},
	"watcher": {
		"temporal_request_total",
		"temporal_request_latency_seconds_bucket",
	},
}

// TestMetricsOnRunningProcesses runs one lifecycle on the real servers, then
// reads the worker's and the watcher's /metrics: the Temporal SDK's series
// are there under their standard names, and every metric the chart's
// Grafana dashboard queries exists on one of the two.
func TestMetricsOnRunningProcesses(t *testing.T) {
	runOneLifecycle(t, "it-metrics")
	served := map[string]map[string]bool{}
	for what, addr := range map[string]string{"worker": stack.workerHTTP, "watcher": stack.watcherHTTP} {
		served[what] = seriesNames(t, "http://"+addr+"/metrics")
	}
	// The suite's watcher runs without leader election; the chart's runs
	// with it. A second watcher as the chart runs it (serving no namespace,
	// on its own task queue) adds the leader-election series once it leads.
	leaderMetrics := "http://" + startLeaderElectedWatcher(t, "it-metrics-lease") + "/metrics"
	eventually(t, 30*time.Second, "the leader-elected watcher leads", func() (bool, string) {
		v := metricSum(t, leaderMetrics, "leader_election_master_status")
		return v == 1, fmt.Sprint("leader_election_master_status ", v)
	})
	for n := range seriesNames(t, leaderMetrics) {
		served["watcher"][n] = true
	}

	t.Run("temporal SDK", func(t *testing.T) {
		for what, names := range served {
			var missing, sdk []string
			for _, want := range temporalSDKSeries[what] {
				if !names[want] {
					missing = append(missing, want)
				}
			}
			for n := range names {
				if strings.HasPrefix(n, "temporal_") {
					sdk = append(sdk, n)
				}
			}
			sort.Strings(sdk)
			if len(missing) > 0 {
				t.Errorf("%s /metrics lacks %v; its temporal_* series: %v", what, missing, sdk)
			}
			t.Logf("%s: %d temporal_* series names", what, len(sdk))
		}
	})

	t.Run("dashboard", func(t *testing.T) {
		board, err := odaflowchart.Dashboards.ReadFile("dashboards/odaflow.json")
		if err != nil {
			t.Fatal(err)
		}
		queries, err := dashboard.Queries(board)
		if err != nil {
			t.Fatal(err)
		}
		where := map[string][]string{} // metric → the panels querying it
		for _, q := range queries {
			names, err := dashboard.MetricNames(q.Expr)
			if err != nil {
				t.Errorf("%s: %v", q.Where, err)
			}
			for _, n := range names {
				where[n] = append(where[n], q.Where)
			}
		}
		found := 0
		for metric, panels := range where {
			var on []string
			for _, what := range []string{"worker", "watcher"} {
				if served[what][metric] {
					on = append(on, what)
				}
			}
			if len(on) == 0 {
				t.Errorf("%s (queried by %v) is on neither the worker's nor the watcher's /metrics", metric, panels)
				continue
			}
			found++
		}
		t.Logf("the dashboard's %d queries select %d metrics; %d of them are served", len(queries), len(where), found)
		if len(where) == 0 {
			t.Fatal("no metric read from the dashboard")
		}
	})
}
