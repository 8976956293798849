package main

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"

	"github.com/odaflow/odaflow/oda"
)

// StormResult is the restart storm's figures (`make bench-storm`).
type StormResult struct {
	// N Components were created of the Requested, fewer when the creation
	// budget ran out first.
	N         int `json:"n"`
	Requested int `json:"requested"`
	// CreateSeconds runs from the first create to the last Component
	// Complete, with at most Window Components created and not Complete.
	CreateSeconds       float64 `json:"createSeconds"`
	ComponentsPerSecond float64 `json:"componentsPerSecond"`
	Window              int     `json:"window"`
	// Workflows is what Temporal's visibility counts at steady state.
	Workflows int64 `json:"workflowsAtSteadyState"`
	// DriftCheckInterval is the IdentityConfig and SecretsManagement
	// check period: long, so that no timer fires during a restart.
	DriftCheckInterval string          `json:"driftCheckInterval"`
	Temporal           string          `json:"temporal"`
	Restarts           []RestartResult `json:"restarts"`
}

// RestartResult is one process's restart with N Components at steady state.
type RestartResult struct {
	Process string `json:"process"`
	// ReadySeconds and SteadySeconds run from starting the new process to
	// its /readyz (for the watcher: its informers have listed the cluster)
	// and to the last change of any counter of the worker or the watcher
	// (watch events, signals, dedups, queue depth, workflow tasks,
	// activities, apiserver requests), later ones being QuietSeconds away.
	ReadySeconds float64 `json:"readySeconds"`
	// WatcherCacheSyncSeconds is the restarted watcher's own measure of
	// its informers' initial list.
	WatcherCacheSyncSeconds float64            `json:"watcherCacheSyncSeconds,omitempty"`
	SteadySeconds           float64            `json:"steadySeconds"`
	QuietSeconds            float64            `json:"quietSeconds"`
	NewRuns                 int64              `json:"newWorkflowRuns"`
	NewRunIDs               []string           `json:"newWorkflowRunIDs,omitempty"`
	Activities              float64            `json:"activities"`
	ActivityTypes           map[string]float64 `json:"activitiesByType,omitempty"`
	WorkflowTasks           float64            `json:"workflowTasks"`
	WorkerMutating          float64            `json:"workerMutatingApiserverRequests"`
	WorkerReads             float64            `json:"workerReadApiserverRequests"`
	// WatcherMutating counts the watcher's own writes (adoption patches).
	WatcherMutating  float64            `json:"watcherMutatingApiserverRequests"`
	WatcherEvents    float64            `json:"watcherEvents"`
	WatcherSignals   map[string]float64 `json:"watcherSignalsBySignalAndResult"`
	WatcherDedup     map[string]float64 `json:"watcherDedupByReason"`
	KeycloakMutating int                `json:"keycloakMutatingRequests"`
	KeycloakTokens   int                `json:"keycloakTokenRequests"`
	// HubMutating counts subscriptions made or removed at the component
	// hubs (componentHubs).
	HubMutating int `json:"hubMutatingRequests"`
	// The probe is a Component applied while the process was down, in a
	// second restart of the same process.
	ProbeChildrenSeconds float64 `json:"probeApplyToChildrenSeconds"`
	ProbeCompleteSeconds float64 `json:"probeApplyToCompleteSeconds"`
}

const stormCheckInterval = "24h"

func runStorm(ctx context.Context, e *benchEnv, n, window int, budget, timeout time.Duration, out string) error {
	ns, queue := "storm", "storm"
	e.env = append(e.env,
		"ODAFLOW_IDENTITY_CHECK_INTERVAL="+stormCheckInterval,
		"ODAFLOW_SECRETS_CHECK_INTERVAL="+stormCheckInterval)
	if err := e.namespace(ctx, ns); err != nil {
		return err
	}
	procs := map[string]*proc{}
	defer func() {
		for _, p := range procs {
			p.stop()
		}
	}()
	for _, name := range []string{"worker", "watcher"} {
		p, err := e.start(ctx, name, queue, ns)
		if err != nil {
			return err
		}
		procs[name] = p
	}
	fmt.Printf("\n== restart storm: %d Components, at most %d in flight ==\n", n, window)
	res := StormResult{Requested: n, Window: window, DriftCheckInterval: stormCheckInterval, Temporal: "dev server, sqlite file with WAL and synchronous=normal, fast-poll settings"}
	took, n, err := e.createSteady(ctx, ns, n, window, budget, timeout)
	if err != nil {
		return err
	}
	res.N = n
	res.CreateSeconds, res.ComponentsPerSecond = took.Seconds(), float64(n)/took.Seconds()
	fmt.Printf("%d Components Complete in %.0f s (%.2f/s)\n", n, res.CreateSeconds, res.ComponentsPerSecond)
	if _, err := e.settle(ctx, procs, stormQuiet); err != nil {
		return err
	}
	if res.Workflows, err = e.countWorkflows(ctx, ""); err != nil {
		return err
	}
	for _, which := range []string{"watcher", "worker"} {
		r, err := e.restart(ctx, procs, which, ns, queue)
		if err != nil {
			return fmt.Errorf("restart the %s: %w", which, err)
		}
		res.Restarts = append(res.Restarts, r)
		printStorm(res)
	}
	return writeResults(e.root, out, "storm-latest.json", res)
}

// stormQuiet is how long every counter must stay still to call it steady.
const stormQuiet = 10 * time.Second

// createSteady creates n Components, keeping at most window of them not
// yet Complete so the stack works at the rate it sustains, and returns the
// time from the first create to the last Complete and how many it created:
// n, or fewer when budget (0: none) ran out first.
func (e *benchEnv) createSteady(ctx context.Context, ns string, n, window int, budget, timeout time.Duration) (time.Duration, int, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	slots := make(chan struct{}, window)
	var mu sync.Mutex
	complete := map[string]bool{}
	allDone := make(chan struct{})
	target := n
	finish := func() {
		if len(complete) == target {
			close(allDone)
		}
	}
	onComponent := func(obj any) {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok || componentStatus(u) != oda.StatusComplete {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if complete[u.GetName()] {
			return
		}
		complete[u.GetName()] = true
		<-slots
		finish()
	}
	stop := make(chan struct{})
	defer close(stop)
	factory := dynamicinformer.NewFilteredDynamicSharedInformerFactory(e.dyn, 0, ns, nil)
	inf := factory.ForResource(oda.KindComponent.GVR()).Informer()
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: onComponent, UpdateFunc: func(_, obj any) { onComponent(obj) }})
	factory.Start(stop)
	factory.WaitForCacheSync(stop)

	start := time.Now()
	progress := time.NewTicker(15 * time.Second)
	defer progress.Stop()
	lastDone, lastAt, created := 0, start, 0
	report := func() {
		mu.Lock()
		done := len(complete)
		mu.Unlock()
		now := time.Now()
		fmt.Printf("  %s: %d created, %d Complete (%.2f/s lately)\n", now.Sub(start).Round(time.Second), created, done, float64(done-lastDone)/now.Sub(lastAt).Seconds())
		lastDone, lastAt = done, now
	}
	for created < n {
		select {
		case slots <- struct{}{}:
		case <-progress.C:
			report()
			continue
		case <-ctx.Done():
			return 0, 0, fmt.Errorf("created %d of %d Components before the timeout", created, n)
		}
		name := fmt.Sprintf("storm-%05d", created)
		if _, err := e.dyn.Resource(oda.KindComponent.GVR()).Namespace(ns).Create(ctx, component(ns, name), metav1.CreateOptions{}); err != nil {
			return 0, 0, fmt.Errorf("create %s: %w", name, err)
		}
		created++
		if budget > 0 && time.Since(start) > budget && created < n {
			fmt.Printf("  creation budget %s spent: stopping at %d of %d Components\n", budget, created, n)
			mu.Lock()
			target = created
			finish()
			mu.Unlock()
			break
		}
	}
	for {
		select {
		case <-allDone:
			return time.Since(start), created, nil
		case <-progress.C:
			report()
		case <-ctx.Done():
			mu.Lock()
			defer mu.Unlock()
			return 0, 0, fmt.Errorf("only %d of %d Components Complete before the timeout", len(complete), created)
		}
	}
}

func componentStatus(u *unstructured.Unstructured) string {
	s, _, _ := unstructured.NestedString(u.Object, "status", "summary/status", "deployment_status")
	return s
}

// activity is a point in the worker's and watcher's counters.
type activity struct {
	worker, watcher metrics
	keycloak        int
	// hubs is the component hubs' subscriptions made plus removed.
	hubs int
}

func (e *benchEnv) snapshot(procs map[string]*proc) (activity, error) {
	w, err := scrape(procs["worker"].addr)
	if err != nil {
		return activity{}, err
	}
	v, err := scrape(procs["watcher"].addr)
	if err != nil {
		return activity{}, err
	}
	subscribed, unsubscribed, _ := e.hubs.counts()
	return activity{worker: w, watcher: v, keycloak: len(e.keycloak.Requests()), hubs: subscribed + unsubscribed}, nil
}

// moving are the counters whose change means the worker or the watcher is
// still working.
var moving = []string{
	"odaflow_watcher_events_total", "odaflow_watcher_signals_total", "odaflow_watcher_dedup_total", "odaflow_watcher_queue_depth", kubeRequestsTotal,
	"temporal_workflow_task_execution_latency_seconds_count", "temporal_activity_execution_latency_seconds_count",
	"temporal_local_activity_total",
}

func (a activity) fingerprint() float64 {
	total := float64(a.keycloak)
	for _, name := range moving {
		total += a.worker.sum(name) + a.watcher.sum(name)
	}
	return total
}

// settle waits until no counter has moved for quiet and returns when the
// last one moved.
func (e *benchEnv) settle(ctx context.Context, procs map[string]*proc, quiet time.Duration) (time.Time, error) {
	last, lastAt := -1.0, time.Now()
	deadline := time.Now().Add(30 * time.Minute)
	for time.Since(lastAt) < quiet {
		a, err := e.snapshot(procs)
		if err != nil {
			return time.Time{}, err
		}
		if f := a.fingerprint(); f != last {
			last, lastAt = f, time.Now()
		}
		if time.Now().After(deadline) {
			return time.Time{}, fmt.Errorf("still busy after 30 minutes")
		}
		select {
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
	return lastAt, nil
}

// countWorkflows counts workflow executions in visibility matching query.
func (e *benchEnv) countWorkflows(ctx context.Context, query string) (int64, error) {
	resp, err := e.tc.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{Namespace: e.temporal.Namespace, Query: query})
	if err != nil {
		return 0, fmt.Errorf("count workflows %q: %w", query, err)
	}
	return resp.GetCount(), nil
}

// startedSince counts and names (up to 20) the runs started after t.
func (e *benchEnv) startedSince(ctx context.Context, t time.Time) (int64, []string, error) {
	query := fmt.Sprintf("StartTime > '%s'", t.UTC().Format(time.RFC3339Nano))
	n, err := e.countWorkflows(ctx, query)
	if err != nil || n == 0 {
		return n, nil, err
	}
	resp, err := e.tc.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Namespace: e.temporal.Namespace, Query: query, PageSize: 20})
	if err != nil {
		return n, nil, fmt.Errorf("list workflows %q: %w", query, err)
	}
	var ids []string
	for _, ex := range resp.GetExecutions() {
		ids = append(ids, ex.GetExecution().GetWorkflowId())
	}
	return n, ids, nil
}

var mutatingMethods = []string{"POST", "PUT", "PATCH", "DELETE"}

func mutating(m metrics) (writes, reads float64) {
	for method, v := range m.by(kubeRequestsTotal, "method") {
		if contains(mutatingMethods, method) {
			writes += v
		} else {
			reads += v
		}
	}
	return writes, reads
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// restart restarts one process twice: first with nothing else happening,
// counting what the restart itself does; then with a Component applied
// while the process is down, timing it to its children.
func (e *benchEnv) restart(ctx context.Context, procs map[string]*proc, which, ns, queue string) (RestartResult, error) {
	r := RestartResult{Process: which, QuietSeconds: stormQuiet.Seconds()}
	fmt.Printf("\nrestarting the %s (nothing applied)...\n", which)
	before, err := e.snapshot(procs)
	if err != nil {
		return r, err
	}
	procs[which].stop()
	begin := time.Now()
	p, err := e.start(ctx, which, queue, ns)
	if err != nil {
		return r, err
	}
	procs[which] = p
	r.ReadySeconds = time.Since(begin).Seconds()
	lastMove, err := e.settle(ctx, procs, stormQuiet)
	if err != nil {
		return r, err
	}
	r.SteadySeconds = max(lastMove.Sub(begin).Seconds(), r.ReadySeconds)
	after, err := e.snapshot(procs)
	if err != nil {
		return r, err
	}
	// The restarted process counts from zero; the other one from before.
	if which == "worker" {
		before.worker = metrics{}
	} else {
		before.watcher = metrics{}
	}
	w, v := after.worker.minus(before.worker), after.watcher.minus(before.watcher)
	r.Activities = w.sum("temporal_activity_execution_latency_seconds_count") + w.sum("temporal_local_activity_total")
	r.ActivityTypes = w.by("temporal_activity_execution_latency_seconds_count", "activity_type")
	for t, c := range w.by("temporal_local_activity_total", "activity_type") {
		r.ActivityTypes[t] += c
	}
	for t, c := range r.ActivityTypes {
		if c == 0 {
			delete(r.ActivityTypes, t)
		}
	}
	r.WorkflowTasks = w.sum("temporal_workflow_task_execution_latency_seconds_count")
	r.WorkerMutating, r.WorkerReads = mutating(w)
	r.WatcherMutating, _ = mutating(v)
	r.WatcherEvents = v.sum("odaflow_watcher_events_total")
	if which == "watcher" {
		r.WatcherCacheSyncSeconds = v.sum("odaflow_watcher_cache_sync_seconds")
	}
	r.WatcherSignals = map[string]float64{}
	for s, c := range v {
		if seriesName(s) == "odaflow_watcher_signals_total" && c != 0 {
			r.WatcherSignals[labelValue(s, "signal")+"/"+labelValue(s, "result")] += c
		}
	}
	r.WatcherDedup = v.by("odaflow_watcher_dedup_total", "reason")
	for _, req := range e.keycloak.Requests()[before.keycloak:] {
		switch {
		case strings.HasSuffix(req.Path, "/token"):
			r.KeycloakTokens++
		case req.Method != "GET":
			r.KeycloakMutating++
		}
	}
	subscribed, unsubscribed, _ := e.hubs.counts()
	r.HubMutating = subscribed + unsubscribed - before.hubs
	// Visibility is written asynchronously: give it a moment to list the
	// runs a restart might have started.
	time.Sleep(2 * time.Second)
	if r.NewRuns, r.NewRunIDs, err = e.startedSince(ctx, begin.Add(-time.Second)); err != nil {
		return r, err
	}

	fmt.Printf("restarting the %s with a Component applied while it is down...\n", which)
	pr, err := e.newProbe(ctx, ns, "probe-"+which)
	if err != nil {
		return r, err
	}
	defer pr.close()
	procs[which].stop()
	if err := pr.apply(ctx); err != nil {
		return r, err
	}
	if procs[which], err = e.start(ctx, which, queue, ns); err != nil {
		return r, err
	}
	children, complete, err := pr.wait(ctx, 10*time.Minute)
	if err != nil {
		return r, err
	}
	r.ProbeChildrenSeconds, r.ProbeCompleteSeconds = children.Seconds(), complete.Seconds()
	_, err = e.settle(ctx, procs, stormQuiet)
	return r, err
}

// probe follows one Component and its ExposedAPIs through informers
// restricted to its label, so that following it does not load the
// apiserver with the storm's thousands of objects.
type probe struct {
	e                  *benchEnv
	ns, name           string
	stop               chan struct{}
	mu                 sync.Mutex
	applied            time.Time
	children, complete time.Time
	seen               map[string]bool
	done               chan struct{}
}

func (e *benchEnv) newProbe(ctx context.Context, ns, name string) (*probe, error) {
	p := &probe{e: e, ns: ns, name: name, stop: make(chan struct{}), seen: map[string]bool{}, done: make(chan struct{})}
	factory := dynamicinformer.NewFilteredDynamicSharedInformerFactory(e.dyn, 0, ns, func(o *metav1.ListOptions) {
		o.LabelSelector = oda.LabelComponentName + "=" + name
	})
	onAPI := func(obj any) {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		p.seen[u.GetName()] = true
		if len(p.seen) == len(implementations) && p.children.IsZero() {
			p.children = time.Now()
		}
	}
	onComponent := func(obj any) {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok || u.GetName() != name || componentStatus(u) != oda.StatusComplete {
			return
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.complete.IsZero() {
			p.complete = time.Now()
			close(p.done)
		}
	}
	_, _ = factory.ForResource(oda.KindExposedAPI.GVR()).Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: onAPI, UpdateFunc: func(_, o any) { onAPI(o) }})
	_, _ = factory.ForResource(oda.KindComponent.GVR()).Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: onComponent, UpdateFunc: func(_, o any) { onComponent(o) }})
	factory.Start(p.stop)
	for gvr, ok := range factory.WaitForCacheSync(p.stop) {
		if !ok {
			return nil, fmt.Errorf("probe cache of %s did not sync", gvr.Resource)
		}
	}
	return p, ctx.Err()
}

func (p *probe) apply(ctx context.Context) error {
	p.mu.Lock()
	p.applied = time.Now()
	p.mu.Unlock()
	if _, err := p.e.dyn.Resource(oda.KindComponent.GVR()).Namespace(p.ns).Create(ctx, component(p.ns, p.name), metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create probe %s: %w", p.name, err)
	}
	return nil
}

// wait returns the times from apply to the children and to Complete.
func (p *probe) wait(ctx context.Context, timeout time.Duration) (children, complete time.Duration, err error) {
	select {
	case <-p.done:
	case <-time.After(timeout):
		return 0, 0, fmt.Errorf("probe %s not Complete after %s", p.name, timeout)
	case <-ctx.Done():
		return 0, 0, ctx.Err()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.children.Sub(p.applied), p.complete.Sub(p.applied), nil
}

func (p *probe) close() { close(p.stop) }

func printStorm(res StormResult) {
	fmt.Printf("\n%d of %d Components (window %d) Complete in %.0f s, %.2f/s; %d workflows in Temporal at steady state; drift checks every %s (no timer fires during the storm); Temporal: %s\n",
		res.N, res.Requested, res.Window, res.CreateSeconds, res.ComponentsPerSecond, res.Workflows, res.DriftCheckInterval, res.Temporal)
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "restart\tready (s)\twatcher list (s)\tsteady (s)\tnew runs\tactivities\tworkflow tasks\tworker writes/reads\twatcher writes\tkeycloak writes/tokens\thub writes\twatcher events\twatcher signals\twatcher dedup\tprobe apply→children (s)\tprobe apply→Complete (s)")
	for _, r := range res.Restarts {
		fmt.Fprintf(w, "%s\t%.1f\t%.1f\t%.1f\t%d\t%.0f\t%.0f\t%.0f/%.0f\t%.0f\t%d/%d\t%d\t%.0f\t%s\t%s\t%.2f\t%.2f\n",
			r.Process, r.ReadySeconds, r.WatcherCacheSyncSeconds, r.SteadySeconds, r.NewRuns, r.Activities, r.WorkflowTasks,
			r.WorkerMutating, r.WorkerReads, r.WatcherMutating, r.KeycloakMutating, r.KeycloakTokens, r.HubMutating,
			r.WatcherEvents, counts(r.WatcherSignals), counts(r.WatcherDedup), r.ProbeChildrenSeconds, r.ProbeCompleteSeconds)
	}
	_ = w.Flush()
	for _, r := range res.Restarts {
		if len(r.NewRunIDs) > 0 || len(r.ActivityTypes) > 0 {
			fmt.Printf("%s restart: new runs %v, activities by type %v\n", r.Process, r.NewRunIDs, r.ActivityTypes)
		}
	}
}

func counts(m map[string]float64) string {
	var parts []string
	for k, v := range m {
		if v != 0 {
			parts = append(parts, fmt.Sprintf("%s=%.0f", k, v))
		}
	}
	if len(parts) == 0 {
		return "0"
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}
