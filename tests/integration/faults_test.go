package integration

import (
	"context"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"

	"github.com/odaflow/odaflow/oda"
	"github.com/odaflow/odaflow/tests/kit"
)

// TestWorkerRestartMidLifecycle stops the worker while a Component is half
// way (children applied, gateway address and endpoints not there yet),
// changes the world while no worker runs, and starts a new worker: the
// lifecycle continues where it was, in the same workflow run, and nothing is
// created twice.
func TestWorkerRestartMidLifecycle(t *testing.T) {
	ns := "it-worker-restart"
	name := "wr-productcatalogmanagement"
	runsBefore := startHalfWay(t, ns, name)

	stopApp(stack.worker)
	// While no worker runs, the gateway gets its address and the
	// implementations come up: the watcher keeps signalling, Temporal keeps
	// the signals.
	apis := listChildren(t, oda.KindExposedAPI, ns, name)
	signalled := func(api string) int {
		return historyCounts(t, oda.WorkflowID(oda.KindExposedAPI.Name, ns, api))[enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED]
	}
	before := map[string]int{}
	for _, api := range apis {
		before[api] = signalled(api)
	}
	bringUpGatewayAndImplementations(t, ns)
	eventually(t, time.Minute, "every ExposedAPI's workflow holds a signal no worker has taken", func() (bool, string) {
		for _, api := range apis {
			if signalled(api) == before[api] {
				return false, api + " has no new signal"
			}
		}
		return true, ""
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	w, err := startWorker(ctx)
	if err != nil {
		t.Fatalf("restart the worker: %v", err)
	}
	stack.worker = w

	waitIdentity(t, ns, name)
	assertSameLifecycleCompletes(t, ns, name, runsBefore, 90*time.Second)
	if ids := listChildren(t, oda.KindIdentityConfig, ns, name); len(ids) != 1 {
		t.Errorf("IdentityConfigs after the restart = %v, want 1", ids)
	}
	deleteComponent(t, ns, name)
}

// TestAPIServerRestartMidLifecycle stops kube-apiserver while a Component
// is half way and starts it again: the watcher's informers reconnect, the
// activities' retries carry the writes that failed meanwhile, and the same
// lifecycle reaches Complete with nothing created twice.
func TestAPIServerRestartMidLifecycle(t *testing.T) {
	ns := "it-apiserver-restart"
	name := "ar-productcatalogmanagement"
	runsBefore := startHalfWay(t, ns, name)

	if err := stack.kube.StopAPIServer(); err != nil {
		t.Fatalf("stop kube-apiserver: %v", err)
	}
	// The outage itself is what is tested: for these seconds the watcher's
	// watches break and the activities fail and retry.
	time.Sleep(3 * time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := stack.kube.StartAPIServer(ctx); err != nil {
		t.Fatalf("start kube-apiserver again: %v", err)
	}
	bringUpGatewayAndImplementations(t, ns)
	waitIdentity(t, ns, name)
	assertSameLifecycleCompletes(t, ns, name, runsBefore, 2*time.Minute)
	deleteComponent(t, ns, name)
}

// faultImplementations are the Services behind the productcatalog
// fixture's APIs.
var faultImplementations = kit.FaultImplementations

// startHalfWay installs a Component whose gateway has no address and whose
// implementations are down and waits until its children are applied.
func startHalfWay(t *testing.T, ns, name string) []string {
	t.Helper()
	return cluster().StartHalfWay(t, ns, name)
}

// installHalfWay is startHalfWay for a Component whose lifecycle runs on
// another Temporal server than the suite's (the runs it lists there are
// none, and ignored).
func installHalfWay(t *testing.T, ns, name string) {
	t.Helper()
	_ = cluster().StartHalfWay(t, ns, name)
}

func bringUpGatewayAndImplementations(t *testing.T, ns string) {
	t.Helper()
	cluster().BringUpGatewayAndImplementations(t, ns)
}

func assertSameLifecycleCompletes(t *testing.T, ns, name string, runsBefore []string, timeout time.Duration) {
	t.Helper()
	cluster().AssertSameLifecycleCompletes(t, ns, name, runsBefore, timeout)
}
