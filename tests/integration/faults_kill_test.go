package integration

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/odaflow/odaflow/oda"
	"github.com/odaflow/odaflow/tests/kit"
	"github.com/odaflow/odaflow/workflows"
)

// TestWorkerKilledAtEveryActivityBoundary kills the worker at every
// activity boundary of a Component's lifecycle, children's workflows
// included, once before and once after the activity's side effect.
//
// A clean lifecycle (productcatalog, implementations ready, gateway
// addressed) first lists the activities a lifecycle runs. Then one
// Component per boundary and variant is installed on a worker whose
// interceptor holds that Component's boundary activity (and everything of
// that Component after it), so no result reaches Temporal. When every
// Component is at its boundary, the worker's connection to Temporal is cut
// (as if the process died) and a new worker starts. Every Component must
// reach Complete in the same workflow runs, with the crashed activity run
// again, every object created once and Keycloak written as often as in
// the clean lifecycle.
func TestWorkerKilledAtEveryActivityBoundary(t *testing.T) {
	started := time.Now()
	ensureIngress(t)
	setIngressAddress(t, "34.159.217.74")
	created := watchCreations(t, "it-kill-")
	fs := startFaultStack(t, "it-kill-*", "odaflow-it-kill", stack.common.TemporalAddress)

	// The clean lifecycle, measured on two Components side by side after a
	// first one, which also creates what every Component shares (Keycloak's
	// canvassystem role). How often a status write or an adoption repeats
	// depends on timing; the boundaries are the executions both had.
	clean := newFaultInterceptor(nil)
	w := fs.startWorker(t, stack.common.TemporalAddress, clean)
	warm := installReady(t, "it-kill-warmup")
	waitPhase(t, "it-kill-warmup", warm, oda.StatusComplete, 60*time.Second)
	waitQuiet(t, clean, "it-kill-warmup")
	kcFrom := len(stack.keycloak.Requests())
	cleanNS := []string{"it-kill-clean1", "it-kill-clean2"}
	var cleanNames []string
	for _, ns := range cleanNS {
		cleanNames = append(cleanNames, installReady(t, ns))
	}
	for i, ns := range cleanNS {
		waitPhase(t, ns, cleanNames[i], oda.StatusComplete, 60*time.Second)
	}
	waitQuiet(t, clean, "")
	for i, ns := range cleanNS {
		if err := adoptedOnce(ns, cleanNames[i]); err != nil {
			t.Fatalf("clean lifecycle in %s: %v", ns, err)
		}
	}
	cleanKinds, twice := created.objects(cleanNS[0])
	if kinds2, twice2 := created.objects(cleanNS[1]); len(twice)+len(twice2) > 0 || fmt.Sprint(kinds2) != fmt.Sprint(cleanKinds) {
		t.Fatalf("clean lifecycles: objects %v and %v, created twice %v %v", cleanKinds, kinds2, twice, twice2)
	}
	cleanKC := map[string]int{}
	for k, n := range keycloakWrites(kcFrom, cleanNames...) {
		if n%2 != 0 {
			t.Fatalf("Keycloak %s: %d requests for the 2 clean lifecycles", k, n)
		}
		cleanKC[k] = n / 2
	}
	stopApp(w)
	var apis []string
	for _, api := range listChildren(t, oda.KindExposedAPI, cleanNS[0], cleanNames[0]) {
		apis = append(apis, strings.Replace(api, cleanNames[0], "C", 1))
	}
	boundaries := commonBoundaries(clean.completed(cleanNS[0]), clean.completed(cleanNS[1]))
	for i, b := range boundaries {
		t.Logf("boundary %2d: %s #%d", i+1, b.Key, b.N)
	}
	t.Logf("clean lifecycle: %d activities, objects %v, Keycloak writes %v (%s)", len(boundaries), cleanKinds, cleanKC, time.Since(started).Round(time.Millisecond))

	// One Component per boundary and variant, all crashing on one worker.
	plan := map[string]boundary{}
	var namespaces []string
	for i, b := range boundaries {
		for _, before := range []bool{true, false} {
			v := "a"
			if before {
				v = "b"
			}
			ns := fmt.Sprintf("it-kill-%02d%s", i+1, v)
			b.Before = before
			plan[ns] = b
			namespaces = append(namespaces, ns)
		}
	}
	proxy := startTCPProxy(t, stack.common.TemporalAddress)
	doomed := newFaultInterceptor(plan)
	fs.startWorker(t, proxy.Addr(), doomed)
	kcFrom = len(stack.keycloak.Requests())
	names := map[string]string{}
	for _, ns := range namespaces {
		names[ns] = installReady(t, ns)
	}
	installed := time.Now()
	// A repeated execution (an adoption signalled twice, a third status
	// write) depends on timing: both clean lifecycles had it, a crash run
	// may not. A Component whose boundary is a repeat (#2 or later) and
	// that reached Complete without it, 20 s after the installs, is left
	// out of the crash checks and named; first executions never are.
	var missedRepeat []string
	eventually(t, 90*time.Second, "every Component at its crash point", func() (bool, string) {
		at := doomed.crashedAt()
		var missing []string
		missedRepeat = nil
		for _, ns := range namespaces {
			if _, ok := at[ns]; ok {
				continue
			}
			if plan[ns].N > 1 && time.Since(installed) > 20*time.Second {
				if u, err := get(oda.KindComponent, ns, names[ns]); err == nil && deploymentStatus(u) == oda.StatusComplete {
					missedRepeat = append(missedRepeat, ns)
					continue
				}
			}
			missing = append(missing, ns+": "+plan[ns].String())
		}
		return len(missing) == 0, strings.Join(missing, "; ")
	})
	for _, ns := range missedRepeat {
		t.Logf("%s: Complete without reaching %s, a repeat this run did not make; no crash there", ns, plan[ns])
	}
	if len(missedRepeat) > len(namespaces)/4 {
		t.Fatalf("%d of %d Components missed their crash point: the boundaries are not a lifecycle's", len(missedRepeat), len(namespaces))
	}
	var first, last activityRun
	for _, c := range doomed.crashedAt() {
		if c.At.After(last.At) {
			last = c
		}
		if first.At.IsZero() || c.At.Before(first.At) {
			first = c
		}
	}
	// A held local activity times out on the doomed worker after 30 s and
	// is retried there, held again; after its 2 min schedule-to-close the
	// worker would record it as failed, which a dead worker cannot do. A
	// machine so slow that the Components took that long is reported as
	// such, not as a finding.
	if held := time.Since(first.At); held > 100*time.Second {
		t.Fatalf("the first crash point (%s %s) was held %s before every Component reached its own: too slow a machine for this test", first.Namespace, first.Key, held.Round(time.Second))
	}
	t.Logf("the last Component reached its crash point (%s, %s #%d) %s after the installs", last.Namespace, last.Key, plan[last.Namespace].N, last.At.Sub(installed).Round(time.Millisecond))
	runsBefore := map[string]map[string][]string{}
	for _, ns := range namespaces {
		runsBefore[ns] = lifecycleRunsIn(t, stack.tc, ns, names[ns], apis)
	}
	proxy.Cut()
	doomed.kill()
	killed := time.Now()
	t.Logf("%d Components at their crash points, worker killed (%s)", len(namespaces), time.Since(started).Round(time.Millisecond))

	survivor := newFaultInterceptor(nil)
	fs.startWorker(t, stack.common.TemporalAddress, survivor)
	defer func() {
		if t.Failed() {
			logTimelines(t, namespaces, names, created, killed, map[string]*faultInterceptor{"doomed": doomed, "survivor": survivor})
		}
	}()
	eventually(t, 3*time.Minute, "every Component Complete after the crash", func() (bool, string) {
		var pending []string
		for _, ns := range namespaces {
			u, err := get(oda.KindComponent, ns, names[ns])
			if err != nil || deploymentStatus(u) != oda.StatusComplete {
				pending = append(pending, ns+" "+plan[ns].String()+": "+whereIs(stack.tc, oda.WorkflowID(oda.KindComponent.Name, ns, names[ns])))
			}
		}
		return len(pending) == 0, fmt.Sprintf("%d not Complete: %v", len(pending), pending)
	})
	t.Logf("all Complete %s after the kill", time.Since(killed).Round(time.Millisecond))
	crashed := doomed.crashedAt()
	// Every crashed activity runs again on the new worker (a remote one
	// once its start-to-close timeout has passed).
	eventually(t, 2*time.Minute, "every crashed activity run again", func() (bool, string) {
		var missing []string
		for _, ns := range namespaces {
			c, ok := crashed[ns]
			if !ok {
				continue // a missed repeat (above): nothing crashed there
			}
			if !ranAgain(survivor.completed(ns), c) {
				var seen []string
				for _, r := range survivor.completed(ns) {
					if r.WorkflowID == c.WorkflowID {
						seen = append(seen, fmt.Sprintf("%s/%s#%d", r.Key, r.ActivityID, r.Attempt))
					}
				}
				missing = append(missing, fmt.Sprintf("%s: %s (run %s activity %s, attempt %d), new worker ran %v", ns, c.Key, c.RunID, c.ActivityID, c.Attempt, seen))
			}
		}
		return len(missing) == 0, strings.Join(missing, "; ")
	})
	waitQuiet(t, survivor, "")
	for _, ns := range namespaces {
		b := plan[ns]
		if bad := sameLifecycles(runsBefore[ns], lifecycleRunsIn(t, stack.tc, ns, names[ns], apis)); len(bad) > 0 {
			t.Errorf("%s (%s): the same lifecycles must continue: %v", ns, b, bad)
		}
		kinds, twice := created.objects(ns)
		if fmt.Sprint(kinds) != fmt.Sprint(cleanKinds) {
			t.Errorf("%s (%s): objects %v, the clean lifecycle has %v", ns, b, kinds, cleanKinds)
		}
		if len(twice) > 0 {
			t.Errorf("%s (%s): created twice: %v", ns, b, twice)
		}
		if apis := listChildren(t, oda.KindExposedAPI, ns, names[ns]); len(apis) != 4 {
			t.Errorf("%s (%s): ExposedAPIs %v, want 4", ns, b, apis)
		}
		if ids := listChildren(t, oda.KindIdentityConfig, ns, names[ns]); len(ids) != 1 {
			t.Errorf("%s (%s): IdentityConfigs %v, want 1", ns, b, ids)
		}
		if err := adoptedOnce(ns, names[ns]); err != nil {
			t.Errorf("%s (%s): %v", ns, b, err)
		}
	}
	// Keycloak: exactly the clean lifecycle's writes, once per Component.
	var crashNames []string
	for _, ns := range namespaces {
		crashNames = append(crashNames, names[ns])
	}
	gotKC := keycloakWrites(kcFrom, crashNames...)
	for k, n := range cleanKC {
		if gotKC[k] != n*len(namespaces) {
			t.Errorf("Keycloak %s: %d requests for %d Components, the clean lifecycle makes %d", k, gotKC[k], len(namespaces), n)
		}
	}
	for k, n := range gotKC {
		if cleanKC[k] == 0 {
			t.Errorf("Keycloak %s: %d requests the clean lifecycle does not make", k, n)
		}
	}
	t.Logf("K = %d boundaries, %d crashes (before and after each side effect), %s in all", len(boundaries), len(namespaces), time.Since(started).Round(time.Millisecond))
}

// logTimelines writes, for each Component that is not Complete, what
// happened to it in time order: its deployment_status changes as watched
// and every activity each worker ran for it, with start and end.
func logTimelines(t *testing.T, namespaces []string, names map[string]string, created *creationLog, killed time.Time, workers map[string]*faultInterceptor) {
	t.Helper()
	for _, ns := range namespaces {
		if u, err := get(oda.KindComponent, ns, names[ns]); err == nil && deploymentStatus(u) == oda.StatusComplete {
			continue
		}
		type line struct {
			at   time.Time
			text string
		}
		lines := []line{{killed, "worker killed"}}
		for _, p := range created.phaseChanges(ns) {
			lines = append(lines, line{p.At, fmt.Sprintf("object rv %s deployment_status %q", p.ResourceVersion, p.Phase)})
		}
		for who, f := range workers {
			for _, r := range f.completed(ns) {
				lines = append(lines, line{r.At, fmt.Sprintf("%s %s activity %s attempt %d local %v run %s, %s, err %q", who, r.Key, r.ActivityID, r.Attempt, r.Local, r.RunID, r.Done.Sub(r.At).Round(time.Millisecond), r.Err)})
			}
			if c, ok := f.crashedAt()[ns]; ok {
				lines = append(lines, line{c.At, fmt.Sprintf("%s crash point %s activity %s attempt %d", who, c.Key, c.ActivityID, c.Attempt)})
			}
		}
		sort.SliceStable(lines, func(i, j int) bool { return lines[i].at.Before(lines[j].at) })
		var b strings.Builder
		for _, l := range lines {
			fmt.Fprintf(&b, "\n  %s %s", l.at.Format("15:04:05.000"), l.text)
		}
		b.WriteString("\n")
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		kit.WriteHistory(ctx, &b, stack.tc, oda.WorkflowID(oda.KindComponent.Name, ns, names[ns]))
		cancel()
		t.Logf("%s timeline:%s", ns, b.String())
	}
}

// commonBoundaries lists, in a's order, the activity executions both
// lifecycles had: the n-th execution of a key is a boundary when both ran
// the key at least n times.
func commonBoundaries(a, b []activityRun) []boundary {
	inB := map[string]int{}
	for _, r := range b {
		inB[r.Key]++
	}
	var out []boundary
	for _, r := range a {
		if r.N <= inB[r.Key] {
			out = append(out, boundary{Key: r.Key, N: r.N})
		}
	}
	return out
}

// ranAgain reports whether the new worker ran the crashed activity again
// in the same workflow run. A remote activity is in the history: it comes
// back as its next attempt, same activity id. A local activity is not: the
// crashed workflow task is run again from the last completed one, and with
// the signals that arrived meanwhile it may take another path (an adoption
// before the status write), so the local activity's ids shift; what must
// happen is an execution of the same activity type in that run. Its outcome
// is the activity's own: registering a hub fails here, as in the clean
// lifecycle, for want of a listener.
func ranAgain(runs []activityRun, c activityRun) bool {
	for _, r := range runs {
		if r.WorkflowID != c.WorkflowID || r.RunID != c.RunID || r.Key != c.Key {
			continue
		}
		if c.Local || (r.ActivityID == c.ActivityID && r.Attempt > c.Attempt) {
			return true
		}
	}
	return false
}

// lifecycleIDs are the IDs of every workflow of a Component's lifecycle:
// its own, its ExposedAPIs' and its IdentityConfig's; apis are the
// ExposedAPI names with the Component's name replaced by C.
func lifecycleIDs(ns, name string, apis []string) []string {
	ids := []string{oda.WorkflowID(oda.KindComponent.Name, ns, name), oda.WorkflowID(oda.KindIdentityConfig.Name, ns, name)}
	for _, api := range apis {
		ids = append(ids, oda.WorkflowID(oda.KindExposedAPI.Name, ns, strings.Replace(api, "C", name, 1)))
	}
	return ids
}

// sameLifecycles checks that every workflow of a lifecycle has exactly one
// run, the one it had before the fault if it had started by then.
func sameLifecycles(before, after map[string][]string) []string {
	var bad []string
	for id, runs := range after {
		switch {
		case len(runs) != 1:
			bad = append(bad, fmt.Sprintf("%s has runs %v", id, runs))
		case len(before[id]) > 0 && runIDOf(before[id][0]) != runIDOf(runs[0]):
			bad = append(bad, fmt.Sprintf("%s ran %v before and %v after", id, before[id], runs))
		}
	}
	sort.Strings(bad)
	return bad
}

func runIDOf(run string) string {
	id, _, _ := strings.Cut(run, ":")
	return id
}

// waitQuiet waits until a Component's workflows (every Component's with
// ns "") have run no activity on the worker for two seconds: the
// lifecycles have settled.
func waitQuiet(t *testing.T, f *faultInterceptor, ns string) {
	t.Helper()
	last, since := -1, time.Now()
	eventually(t, 30*time.Second, ns+" settles", func() (bool, string) {
		n := len(f.completed(ns))
		if n != last {
			last, since = n, time.Now()
		}
		return time.Since(since) > 2*time.Second, fmt.Sprintf("%d activities", n)
	})
}

// whereIs says what a workflow waits for: its explain answer and what is
// pending (a failure message's diagnosis).
func whereIs(tc client.Client, workflowID string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var parts []string
	if v, err := tc.QueryWorkflow(ctx, workflowID, "", workflows.QueryExplain); err == nil {
		var e workflows.Explanation
		if err := v.Get(&e); err == nil {
			parts = append(parts, fmt.Sprintf("explain %+v", e))
		}
	}
	desc, err := tc.DescribeWorkflow(ctx, workflowID, "")
	if err != nil {
		return strings.Join(append(parts, "describe: "+err.Error()), "; ")
	}
	d := desc.RawResponse
	for _, a := range d.GetPendingActivities() {
		parts = append(parts, fmt.Sprintf("pending activity %s attempt %d state %s", a.GetActivityType().GetName(), a.GetAttempt(), a.GetState()))
	}
	if wt := d.GetPendingWorkflowTask(); wt != nil {
		parts = append(parts, fmt.Sprintf("pending workflow task attempt %d state %s", wt.GetAttempt(), wt.GetState()))
	}
	parts = append(parts, fmt.Sprintf("history length %d", d.GetWorkflowExecutionInfo().GetHistoryLength()))
	return strings.Join(parts, "; ")
}
