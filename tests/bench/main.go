// Command bench measures odaflow on the local stack (`make bench`): a real
// kube-apiserver and Temporal dev server, odaflow's worker and watcher as
// separate processes, and N productcatalog-shaped Components (3 exposed
// APIs) applied at once, with the ingress address and ready EndpointSlices
// simulated as in the tests. It reports latency percentiles, wall time, CPU
// seconds and peak RSS per process, history events and apiserver requests
// per Component, as a table and as JSON under results/.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	odaflowchart "github.com/odaflow/odaflow/charts/odaflow"
	"github.com/odaflow/odaflow/internal/localstack"
	"github.com/odaflow/odaflow/workflows"
)

// Result is one run's figures.
type Result struct {
	N                      int                `json:"n"`
	Temporal               string             `json:"temporal"`
	ChildrenCreated        Percentiles        `json:"applyToChildrenCreatedSeconds"`
	AllExposed             Percentiles        `json:"applyToAllAPIsExposedSeconds"`
	WallSeconds            float64            `json:"wallSeconds"`
	CPUSeconds             map[string]float64 `json:"cpuSeconds"`
	CPUSecondsPerComponent float64            `json:"cpuSecondsPerComponent"`
	PeakRSSMiB             map[string]float64 `json:"peakRSSMiB"`
	HistoryEventsPerComp   float64            `json:"historyEventsPerComponent"`
	KubeRequestsPerComp    float64            `json:"apiserverRequestsPerComponent"`
	Conflicts409           int                `json:"conflicts409"`
	WorkerRequestsByMethod map[string]float64 `json:"workerRequestsPerComponentByMethod"`
	// WorkerRequestsByResource splits them by method and resource.
	WorkerRequestsByResource map[string]float64 `json:"workerRequestsPerComponentByResource"`
	// WorkflowTaskTroubles counts, per Component, workflow tasks that
	// timed out or failed, by timeout type or cause (historyStats).
	WorkflowTaskTroubles map[string]float64 `json:"workflowTaskTroublesPerComponent,omitempty"`
	// WorkerRetries counts, over the whole size, what the worker did again
	// or was refused (retriesOf): where repeated writes and 409s come from.
	WorkerRetries map[string]float64 `json:"workerRetries,omitempty"`
	// HubSubscriptionsPerComp counts the subscriptions the component hubs
	// (componentHubs) received, per Component: 1, the partyRole hub of its
	// IdentityConfig. HubRefused counts requests that were not hub calls.
	HubSubscriptionsPerComp float64 `json:"hubSubscriptionsPerComponent"`
	HubRefused              int     `json:"hubRefusedRequests"`
	// MachineBusyCores is how many of the machine's CPUs were busy, on
	// average, from the apply to the last API exposed (numCPU of them: the
	// run is CPU-bound near that). OtherCPUSeconds is what the processes
	// outside the per-Component figure spent: etcd and the bench itself.
	MachineBusyCores float64            `json:"machineBusyCores"`
	OtherCPUSeconds  map[string]float64 `json:"otherCpuSeconds"`
	// WindowCPUSeconds is every process's CPU from the apply to the last
	// API exposed (the wall time), without the settling after it that the
	// per-Component figure includes.
	WindowCPUSeconds map[string]float64 `json:"windowCpuSeconds"`
	Completed        int                `json:"completed"`
	// Warmup says one Component was applied and exposed first, uncounted.
	Warmup bool `json:"warmup"`
}

// Percentiles of a latency distribution, in seconds.
type Percentiles struct {
	P50, P95, P99, Max float64
}

func main() {
	sizes := flag.String("n", "1,100,1000", "comma-separated numbers of Components to apply at once")
	out := flag.String("out", "results", "folder for the JSON results")
	concurrency := flag.Int("concurrency", 32, "parallel create calls")
	timeout := flag.Duration("timeout", 30*time.Minute, "give up on one size after this long")
	warmup := flag.Bool("warmup", true, "before each size, apply one Component and wait for it (not counted)")
	storm := flag.Int("storm", 0, "instead of -n: the restart storm with this many existing Components (make bench-storm: 10000)")
	window := flag.Int("storm-window", 200, "storm: at most this many Components created and not yet Complete")
	stormBudget := flag.Duration("storm-budget", 0, "storm: stop creating Components after this long and restart with those (0: create all -storm)")
	stormTimeout := flag.Duration("storm-timeout", 4*time.Hour, "storm: give up if the Components are not all Complete after this long")
	temporalKind := flag.String("temporal", "dev", "the Temporal server: dev (temporal server start-dev, sqlite file) or production (temporal-server on PostgreSQL, as tests/production runs it)")
	flag.Parse()
	if *temporalKind != "dev" && *temporalKind != "production" {
		fmt.Fprintf(os.Stderr, "bench: -temporal must be dev or production, not %q\n", *temporalKind)
		os.Exit(2)
	}
	ctx := context.Background()
	env, stop, err := setup(ctx, *temporalKind == "production")
	if err == nil {
		if *storm > 0 {
			err = runStorm(ctx, env, *storm, *window, *stormBudget, *stormTimeout, *out)
		} else {
			err = run(ctx, env, *sizes, *out, *concurrency, *warmup, *timeout)
		}
		stop()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// setup builds odaflow and starts the local stack, the Keycloak double and
// the ingress Service; stop tears them down.
func setup(ctx context.Context, production bool) (env *benchEnv, stop func(), err error) {
	var cleanups []func()
	stop = func() {
		for i := len(cleanups) - 1; i >= 0; i-- {
			cleanups[i]()
		}
	}
	defer func() {
		if err != nil {
			stop()
		}
	}()
	tools, err := localstack.FindTools()
	if err != nil {
		return nil, stop, err
	}
	root, err := localstack.RepoRoot()
	if err != nil {
		return nil, stop, err
	}
	work, err := os.MkdirTemp("", "odaflow-bench-")
	if err != nil {
		return nil, stop, err
	}
	cleanups = append(cleanups, func() { _ = os.RemoveAll(work) })
	crdDir := filepath.Join(work, "crds")
	if err := odaflowchart.WriteCRDs(crdDir); err != nil {
		return nil, stop, err
	}
	if err := localstack.GatewayCRDs(crdDir); err != nil {
		return nil, stop, err
	}
	fmt.Println("building bin/odaflow and starting the local stack...")
	bin := filepath.Join(work, "odaflow")
	build := exec.Command("go", "build", "-o", bin, "./cmd/odaflow")
	build.Dir, build.Stdout, build.Stderr = root, os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		return nil, stop, fmt.Errorf("build odaflow: %w", err)
	}
	kube, err := localstack.StartKube(ctx, localstack.Options{ToolsDir: tools, DataDir: filepath.Join(work, "kube"), CRDDir: crdDir})
	if err != nil {
		return nil, stop, err
	}
	cleanups = append(cleanups, func() { _ = kube.Stop() })
	var temporal *localstack.Temporal
	var postgres *localstack.Postgres
	kind := "dev server, sqlite file (WAL, synchronous=normal)"
	if production {
		if postgres, temporal, err = startProductionTemporal(ctx, work, &cleanups); err != nil {
			return nil, stop, err
		}
		kind = "temporal-server on PostgreSQL (tests/production's settings)"
	} else {
		// A file database (WAL, synchronous=normal) rather than memory:
		// under a 1,000-Component burst on a loaded machine the in-memory
		// dev server wedged for good, answering every call with sqlite's
		// "interrupted (9)".
		temporal, err = localstack.StartTemporal(ctx, localstack.Options{ToolsDir: tools, DataDir: filepath.Join(work, "temporal"), Persist: true})
		if err != nil {
			return nil, stop, err
		}
		cleanups = append(cleanups, func() { _ = temporal.Stop() })
	}
	tc, err := temporal.Dial(ctx)
	if err != nil {
		return nil, stop, err
	}
	cleanups = append(cleanups, tc.Close)
	env = &benchEnv{
		kube: kube, temporal: temporal, postgres: postgres, temporalKind: kind, tc: tc, bin: bin, work: work, root: root,
		dyn:  dynamic.NewForConfigOrDie(kube.RESTConfig),
		core: kubernetes.NewForConfigOrDie(kube.RESTConfig),
	}
	if err := env.identity(ctx); err != nil {
		return nil, stop, fmt.Errorf("keycloak double: %w", err)
	}
	cleanups = append(cleanups, env.keycloak.Close, env.hubs.close)
	if err := env.ingress(ctx); err != nil {
		return nil, stop, err
	}
	return env, stop, nil
}

func run(ctx context.Context, env *benchEnv, sizes, out string, concurrency int, warmup bool, timeout time.Duration) error {
	var results []Result
	for round, s := range strings.Split(sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			return fmt.Errorf("bad size %q", s)
		}
		fmt.Printf("\n== %d Component(s) at once ==\n", n)
		r, err := env.runSize(ctx, round, n, concurrency, warmup, timeout)
		if err != nil {
			return fmt.Errorf("%d Components: %w", n, err)
		}
		results = append(results, r)
		printTable(results)
		fmt.Printf("worker requests per Component by method: %v\n", r.WorkerRequestsByMethod)
		fmt.Printf("worker requests per Component by resource: %v\n", r.WorkerRequestsByResource)
		fmt.Printf("workflow tasks timed out or failed per Component (50 sampled): %v\n", r.WorkflowTaskTroubles)
		fmt.Printf("worker retries and refusals (whole size): %v\n", r.WorkerRetries)
		fmt.Printf("machine during the window: %.2f of %d CPUs busy; outside the per-Component CPU: etcd %.1f s, the bench %.1f s\n", r.MachineBusyCores, numCPU(), r.OtherCPUSeconds["etcd"], r.OtherCPUSeconds["bench"])
		fmt.Println(windowLine(r))
		fmt.Printf("hub subscriptions per Component: %.2f (requests refused: %d)\n", r.HubSubscriptionsPerComp, r.HubRefused)
		// Written after each size, so a later size's timeout keeps these.
		if err := writeResults(env.root, out, "bench-latest.json", results); err != nil {
			return err
		}
	}
	return nil
}

// writeResults writes results with the date and machine under root/out.
func writeResults(root, out, file string, results any) error {
	if !filepath.IsAbs(out) {
		out = filepath.Join(root, out)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	b, _ := json.MarshalIndent(map[string]any{
		"date": time.Now().UTC().Format(time.RFC3339), "machine": machine(), "results": results,
	}, "", "  ")
	path := filepath.Join(out, file)
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	fmt.Println("\nwrote", path)
	return nil
}

// startProductionTemporal starts PostgreSQL and temporal-server as
// tests/production does, with odaflow's search attributes.
func startProductionTemporal(ctx context.Context, work string, cleanups *[]func()) (*localstack.Postgres, *localstack.Temporal, error) {
	pgBin, err := localstack.FindPostgres()
	if err != nil {
		return nil, nil, err
	}
	serverDir, err := localstack.FindTemporalServer()
	if err != nil {
		return nil, nil, err
	}
	logs, err := os.Create(filepath.Join(work, "temporal-and-postgres.log"))
	if err != nil {
		return nil, nil, err
	}
	*cleanups = append(*cleanups, func() { _ = logs.Close() })
	attrs := workflows.SearchAttributeTypes()
	pg, temporal, err := localstack.StartTemporalOnPostgres(ctx, serverDir, pgBin, logs, attrs)
	if err != nil {
		return nil, nil, err
	}
	*cleanups = append(*cleanups, func() { _ = pg.Stop() }, func() { _ = temporal.Stop() })
	return pg, temporal, nil
}

func printTable(results []Result) {
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "N\tchildren p50/p95/p99/max (s)\texposed p50/p95/p99/max (s)\twall (s)\tCPU s/Component\tCPU s (worker/watcher/temporal incl. its database/apiserver)\tpeak RSS MiB (worker/watcher)\thistory events/Comp\tapiserver req/Comp\t409s")
	for _, r := range results {
		fmt.Fprintf(w, "%d\t%s\t%s\t%.2f\t%.3f\t%.1f/%.1f/%.1f/%.1f\t%.0f/%.0f\t%.0f\t%.1f\t%d\n",
			r.N, r.ChildrenCreated, r.AllExposed, r.WallSeconds, r.CPUSecondsPerComponent,
			r.CPUSeconds["worker"], r.CPUSeconds["watcher"], r.CPUSeconds["temporal"]+r.CPUSeconds["postgres"], r.CPUSeconds["apiserver"],
			r.PeakRSSMiB["worker"], r.PeakRSSMiB["watcher"], r.HistoryEventsPerComp, r.KubeRequestsPerComp, r.Conflicts409)
	}
	_ = w.Flush()
}

// windowLine says what the processes spent from the apply to the last API
// exposed, and how long the servers' share alone keeps every CPU busy: a
// floor under the wall time that odaflow's own processes cannot lower.
func windowLine(r Result) string {
	w := r.WindowCPUSeconds
	servers := w["temporal"] + w["postgres"] + w["apiserver"] + w["etcd"]
	return fmt.Sprintf("CPU-s from the apply to the last API exposed: worker %.1f, watcher %.1f, Temporal %.1f, apiserver %.1f, etcd %.1f, bench %.1f; the servers alone fill all %d CPUs for %.1f s",
		w["worker"], w["watcher"], w["temporal"]+w["postgres"], w["apiserver"], w["etcd"], w["bench"], numCPU(), servers/float64(numCPU()))
}

func (p Percentiles) String() string {
	return fmt.Sprintf("%.3f/%.3f/%.3f/%.3f", p.P50, p.P95, p.P99, p.Max)
}

func machine() string {
	b, _ := os.ReadFile("/proc/cpuinfo")
	model := ""
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "model name") {
			model = strings.TrimSpace(strings.SplitN(l, ":", 2)[1])
			break
		}
	}
	return fmt.Sprintf("%s, %d CPUs", model, numCPU())
}
