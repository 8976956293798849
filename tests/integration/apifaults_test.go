package integration

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/odaflow/odaflow/internal/localstack"
	"github.com/odaflow/odaflow/oda"
	"github.com/odaflow/odaflow/tests/fixtures"
)

// proxyStack is a worker and a watcher that reach kube-apiserver only
// through a FaultProxy. They have their own task queue and serve the
// namespaces it-px-*, which the main watcher ("it-[^gkprtx]*") ignores.
type proxyStack struct {
	proxy      *localstack.FaultProxy
	metricsURL string
	readyzAddr string
}

const proxyNSPrefix = "it-px-"

func startProxyStack(t *testing.T) *proxyStack {
	t.Helper()
	// A new choice of requests each run; the seed is logged to repeat one.
	seed := uint64(time.Now().UnixNano())
	proxy, err := localstack.StartFaultProxy(stack.kube.RESTConfig, t.TempDir(), seed)
	if err != nil {
		t.Fatalf("start the fault proxy: %v", err)
	}
	t.Logf("fault proxy %s, seed %d", proxy.URL, seed)
	t.Cleanup(proxy.Close)
	common := stack.common
	common.Kubeconfig = proxy.KubeconfigPath
	common.TaskQueue = "odaflow-it-px"
	common.Namespaces = []string{proxyNSPrefix + "*"}
	common.HTTPAddress = freeAddress(t)
	ps := &proxyStack{proxy: proxy, metricsURL: "http://" + common.HTTPAddress + "/metrics", readyzAddr: common.HTTPAddress}
	startIstioStack(t, common, "proxied")
	return ps
}

// apiFaults is about a quarter of the apiserver requests failing: 409s
// (AlreadyExists on create, Conflict otherwise), 500s before and after the
// write took effect, and 503s with Retry-After. Each of the write faults
// and the 503 hits its first matching request: the lifecycle converges in
// about 150 requests, few enough for a 5% share to miss altogether.
var apiFaults = []localstack.FaultRule{
	{Verbs: []string{"POST", "PUT", "PATCH", "DELETE"}, Code: 409, Share: 0.10, FirstAlways: true},
	{Verbs: []string{"POST", "PUT", "PATCH", "DELETE"}, Code: 500, Share: 0.05, AfterForward: true, FirstAlways: true},
	{Verbs: []string{"POST", "PUT", "PATCH", "DELETE"}, Code: 500, Share: 0.05, FirstAlways: true},
	{Verbs: []string{"GET"}, Code: 500, Share: 0.05},
	{Code: 503, Share: 0.05, FirstAlways: true},
}

// childLog counts, from a watch on the real apiserver (not through the
// proxy), how often each child was added and deleted: an object created
// twice shows as two ADDED events or a DELETED one.
type childLog struct {
	mu             sync.Mutex
	added, deleted map[string]int
}

func watchChildren(t *testing.T, gvr schema.GroupVersionResource, ns string) *childLog {
	t.Helper()
	w, err := stack.dyn.Resource(gvr).Namespace(ns).Watch(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("watch %s: %v", gvr.Resource, err)
	}
	l := &childLog{added: map[string]int{}, deleted: map[string]int{}}
	go func() {
		for ev := range w.ResultChan() {
			u, ok := ev.Object.(*unstructured.Unstructured)
			if !ok {
				continue
			}
			l.mu.Lock()
			switch ev.Type {
			case watch.Added:
				l.added[u.GetName()]++
			case watch.Deleted:
				l.deleted[u.GetName()]++
			}
			l.mu.Unlock()
		}
	}()
	t.Cleanup(w.Stop)
	return l
}

// once reports the children not added exactly once, or deleted.
func (l *childLog) once(want int) (bool, string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var bad []string
	for name, n := range l.added {
		if n != 1 || l.deleted[name] != 0 {
			bad = append(bad, fmt.Sprintf("%s added %d deleted %d", name, n, l.deleted[name]))
		}
	}
	return len(l.added) == want && len(bad) == 0, fmt.Sprintf("%d children added (want %d), wrong: %v", len(l.added), want, bad)
}

// metricSum sums the samples of a metric on a /metrics page.
func metricSum(t *testing.T, url, name string) float64 {
	t.Helper()
	return metricWith(t, url, name, "")
}

// metricWith sums the samples of a metric whose labels begin with labels
// (`kind="Component"`, in the order the metric declares them).
func metricWith(t *testing.T, url, name, labels string) float64 {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("scrape %s: %v", url, err)
	}
	defer resp.Body.Close()
	sum := 0.0
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name+"{"+labels) && (labels != "" || !strings.HasPrefix(line, name+" ")) {
			continue
		}
		if v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64); err == nil {
			sum += v
		}
	}
	return sum
}

// TestAPIServerFaultsInjected installs and deletes Components while about
// a quarter of the worker's and watcher's apiserver requests fail with
// 409, 500 or 503: every Component reaches Complete in one workflow run,
// no child is created twice, the status is true, and deletion ends with no
// stuck finalizer.
func TestAPIServerFaultsInjected(t *testing.T) {
	const n = 4
	ns := proxyNSPrefix + "install"
	ps := startProxyStack(t)
	createNamespace(t, ns)
	ensureIngress(t)
	setIngressAddress(t, "34.159.217.74")
	for _, svc := range faultImplementations {
		setEndpoints(t, ns, svc, true)
	}
	apis := watchChildren(t, oda.KindExposedAPI.GVR(), ns)
	idents := watchChildren(t, oda.KindIdentityConfig.GVR(), ns)
	keycloakBefore := len(stack.keycloak.Requests())

	ps.proxy.SetRules(apiFaults...)
	start := time.Now()
	var names []string
	for i := range n {
		name := fmt.Sprintf("px%d-productcatalogmanagement", i)
		names = append(names, name)
		cluster().LogLifecycle(t, ns, name)
		create(t, oda.KindComponent, fixtures.WithOwnPaths(fixtures.WithoutDependentAPIs(fixtures.ProductCatalog(ns, name))))
	}
	for _, name := range names {
		waitPhase(t, ns, name, oda.StatusComplete, 4*time.Minute)
	}
	converged := time.Since(start)
	injected := ps.proxy.Injected()
	t.Logf("%d Components Complete under faults in %s; injected %v; forwarded %d", n, converged.Round(time.Millisecond), injected, ps.proxy.Forwarded())
	for _, code := range []int{409, 500, 503} {
		if ps.proxy.InjectedCode(code) == 0 {
			t.Errorf("no %d injected: %v", code, injected)
		}
	}

	// Nothing created twice: 4 ExposedAPIs and one IdentityConfig each,
	// each added once, one Keycloak client each, one workflow run each.
	eventually(t, 10*time.Second, "ExposedAPIs each added once", func() (bool, string) { return apis.once(4 * n) })
	eventually(t, 10*time.Second, "IdentityConfigs each added once", func() (bool, string) { return idents.once(n) })
	created := 0
	for _, r := range stack.keycloak.Requests()[keycloakBefore:] {
		if r.Method == http.MethodPost && r.Path == "/admin/realms/"+keycloakRealm+"/clients" && r.Status == http.StatusCreated {
			created++
		}
	}
	if created != n {
		t.Errorf("Keycloak clients created %d times, want %d", created, n)
	}
	for _, name := range names {
		wfID := oda.WorkflowID(oda.KindComponent.Name, ns, name)
		if runs := runsOf(t, wfID); len(runs) != 1 {
			t.Errorf("runs of %s = %v, want one", wfID, runs)
		}
		// The status tells the truth: Ready=True and every API with url and ready.
		c := mustGet(t, oda.KindComponent, ns, name)
		conds, _, _ := unstructured.NestedSlice(c.Object, "status", "conditions")
		if len(conds) != 1 || conds[0].(map[string]any)["status"] != "True" {
			t.Errorf("%s conditions = %v, want Ready True", name, conds)
		}
		for _, api := range listChildren(t, oda.KindExposedAPI, ns, name) {
			if url, ready := apiStatus(mustGet(t, oda.KindExposedAPI, ns, api)); url == "" || !ready {
				t.Errorf("ExposedAPI %s: url %q ready %t while its Component says Complete", api, url, ready)
			}
		}
	}

	// Deletion under the same faults ends: no stuck finalizer.
	delStart := time.Now()
	for _, name := range names {
		deleteComponent(t, ns, name)
		wfID := oda.WorkflowID(oda.KindComponent.Name, ns, name)
		eventually(t, 60*time.Second, "workflow of "+name+" completes", func() (bool, string) {
			st, err := workflowStatus(wfID)
			return err == nil && st == enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED, fmt.Sprint(st, err)
		})
	}
	deleted := time.Since(delStart)
	t.Logf("%d Components deleted under faults in %s; injected in all %v", n, deleted.Round(time.Millisecond), ps.proxy.Injected())

	// Faults off: the worker is alive and ready, and no workflow task
	// failed (a panic or a non-determinism would count there).
	ps.proxy.SetRules()
	eventually(t, 30*time.Second, "the proxied worker is ready", func() (bool, string) {
		code, body := readyz(ps.readyzAddr)
		return code == http.StatusOK, body
	})
	if f := metricSum(t, ps.metricsURL, "temporal_workflow_task_execution_failed_total"); f != 0 {
		t.Errorf("workflow task failures = %v, want 0", f)
	}
	// The same page shows the lifecycles that ended, so it is the worker's.
	if done := metricSum(t, ps.metricsURL, "temporal_workflow_completed_total"); done < n {
		t.Errorf("temporal_workflow_completed_total = %v, want at least %d", done, n)
	}
	writeResult(t, "apiserver-faults.json", map[string]any{
		"components": n, "injected": injected, "injectedTotal": ps.proxy.Injected(),
		"forwarded": ps.proxy.Forwarded(), "convergeSeconds": converged.Seconds(),
		"deleteSeconds": deleted.Seconds(),
	})
}
