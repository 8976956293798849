package production

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/odaflow/odaflow/oda"
	"github.com/odaflow/odaflow/tests/kit"
)

// TestWorkerKilledMidLifecycle SIGKILLs the worker that ran the Component
// workflow's last task while the lifecycle waits for the gateway and the
// implementations; the other worker finishes the same run.
func TestWorkerKilledMidLifecycle(t *testing.T) {
	ns, name := "prod-worker-kill", "wk-productcatalogmanagement"
	id := oda.WorkflowID(oda.KindComponent.Name, ns, name)
	var victim *proc
	midLifecycle(t, ns, name, func() {
		victim = env.workers[0]
		if last := lastWorkflowTaskWorker(t, id); last != nil {
			victim = last
		}
		t.Logf("SIGKILL %s (pid %d), which ran the workflow's last task", victim.name, victim.pid())
		victim.kill()
	})
	if last := lastWorkflowTaskWorker(t, id); last == nil || last == victim {
		t.Errorf("the last workflow task was run by %v, want the surviving worker", last)
	}
}

// TestLeadingWatcherKilledMidLifecycle SIGKILLs the watcher holding the
// Lease; the standby takes the Lease, sees the gateway and implementations
// that came up meanwhile, and the same run completes.
func TestLeadingWatcherKilledMidLifecycle(t *testing.T) {
	ns, name := "prod-watcher-kill", "wl-productcatalogmanagement"
	midLifecycle(t, ns, name, func() {
		leader := watcherByName(leaseHolder(t))
		if leader == nil {
			t.Fatalf("the Lease is held by %q, none of %s, %s", leaseHolder(t), env.watchers[0].name, env.watchers[1].name)
		}
		killed := time.Now()
		leader.kill()
		t.Logf("SIGKILL the leading watcher %s (pid %d)", leader.name, leader.pid())
		// The world moves on while no watcher acts.
		env.c.BringUpGatewayAndImplementations(t, ns)
		var next string
		kit.Eventually(t, time.Minute, "another watcher takes the Lease", func() (bool, string) {
			next = leaseHolder(t)
			return next != leader.name && watcherByName(next) != nil, "holder " + next
		})
		t.Logf("%s took the Lease %s after the leader was killed (Lease duration 15 s)", next, time.Since(killed).Round(100*time.Millisecond))
	})
}

// TestTemporalServerRestartMidLifecycle restarts the Temporal server (same
// PostgreSQL) half way; workers and watchers reconnect and the same run
// completes.
func TestTemporalServerRestartMidLifecycle(t *testing.T) {
	midLifecycle(t, "prod-temporal-restart", "tr-productcatalogmanagement", func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		began := time.Now()
		if err := env.temporal.Restart(ctx); err != nil {
			t.Fatalf("restart temporal-server: %v", err)
		}
		t.Logf("temporal-server stopped and serving again in %s", time.Since(began).Round(100*time.Millisecond))
	})
}

// TestAPIServerRestartMidLifecycle stops kube-apiserver half way and starts
// it again; informers reconnect, retried activities carry the writes, the
// watchers' election survives or hands over, and the same run completes.
func TestAPIServerRestartMidLifecycle(t *testing.T) {
	midLifecycle(t, "prod-apiserver-restart", "ar-productcatalogmanagement", func() {
		began := time.Now()
		if err := env.kube.StopAPIServer(); err != nil {
			t.Fatalf("stop kube-apiserver: %v", err)
		}
		// The outage itself is what is tested: for these seconds the
		// watches break and the activities fail and retry.
		time.Sleep(3 * time.Second)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := env.kube.StartAPIServer(ctx); err != nil {
			t.Fatalf("start kube-apiserver again: %v", err)
		}
		t.Logf("kube-apiserver down for %s", time.Since(began).Round(100*time.Millisecond))
	})
}

// midLifecycle installs a Component that stops half way (children applied,
// no gateway address, implementations down), applies fault, brings the
// gateway and implementations up and checks that the same lifecycle
// converges with nothing lost or duplicated.
func midLifecycle(t *testing.T, ns, name string, fault func()) {
	t.Helper()
	kcBefore := begin(t)
	runsBefore := env.c.StartHalfWay(t, ns, name)
	fault()
	env.c.BringUpGatewayAndImplementations(t, ns)
	assertConverged(t, ns, name, runsBefore, kcBefore)
	reportExits(t)
}

// begin gives the test two workers and two watchers and returns the
// Keycloak double's request count so far.
func begin(t *testing.T) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := ensureProcesses(ctx); err != nil {
		t.Fatalf("start odaflow processes: %v", err)
	}
	kit.Eventually(t, 30*time.Second, "a watcher holds the Lease", func() (bool, string) {
		h := leaseHolder(t)
		return watcherByName(h) != nil, "holder " + h
	})
	return len(env.keycloak.Requests())
}

// assertConverged waits for the same lifecycle to complete and checks
// that nothing was lost or done twice: the run from before the fault, the
// fixture's exact children, one Keycloak client created once, its Secret.
func assertConverged(t *testing.T, ns, name string, runsBefore []string, kcBefore int) {
	t.Helper()
	env.c.AssertSameLifecycleCompletes(t, ns, name, runsBefore, 2*time.Minute)
	kit.WaitIdentity(t, env.keycloak, env.core, keycloakRealm, ns, name)
	if ids := env.c.ListChildren(t, oda.KindIdentityConfig, ns, name); len(ids) != 1 {
		t.Errorf("IdentityConfigs = %v, want 1", ids)
	}
	created := 0
	for _, r := range env.keycloak.Requests()[kcBefore:] {
		if r.Method == "POST" && r.Path == "/admin/realms/"+keycloakRealm+"/clients" && r.Status == 201 {
			created++
		}
	}
	if created != 1 {
		t.Errorf("Keycloak clients created during the test = %d, want 1", created)
	}
}

// leaseHolder is the watchers' Lease holder ("" while there is none).
func leaseHolder(t *testing.T) string {
	t.Helper()
	l, err := env.core.CoordinationV1().Leases(systemNamespace).Get(context.Background(), leaseName, metav1.GetOptions{})
	if err != nil || l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// lastWorkflowTaskWorker is the worker that started the workflow's last
// workflow task, found by the SDK's identity "<pid>@<host>@...".
func lastWorkflowTaskWorker(t *testing.T, workflowID string) *proc {
	t.Helper()
	var identity string
	it := env.tc.GetWorkflowHistory(context.Background(), workflowID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatalf("history of %s: %v", workflowID, err)
		}
		if a := ev.GetWorkflowTaskStartedEventAttributes(); a != nil {
			identity = a.GetIdentity()
		}
	}
	pid, err := strconv.Atoi(strings.SplitN(identity, "@", 2)[0])
	if err != nil {
		return nil
	}
	return workerByPid(pid)
}

// reportExits logs the odaflow processes a fault ended: a watcher that
// cannot renew its Lease exits by design and its slot is refilled.
func reportExits(t *testing.T) {
	for _, p := range append(env.workers[:], env.watchers[:]...) {
		if p != nil && !p.alive() {
			t.Logf("%s exited during the fault (%v); the next test starts a new one", p.name, p.cmd.ProcessState)
		}
	}
}
