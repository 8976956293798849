package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"

	"github.com/odaflow/odaflow/internal/config"
	"github.com/odaflow/odaflow/oda"
	"github.com/odaflow/odaflow/tests/kit"
	"github.com/odaflow/odaflow/watcher"
	"github.com/odaflow/odaflow/worker"
)

// eventually polls cond until it holds or the timeout passes.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	kit.Eventually(t, timeout, what, cond)
}

// cluster is the integration stack's apiserver and Temporal for the shared
// test steps.
func cluster() *kit.Cluster {
	return &kit.Cluster{Dyn: stack.dyn, Core: stack.core, Temporal: stack.tc}
}

func createNamespace(t *testing.T, name string) {
	t.Helper()
	cluster().CreateNamespace(t, name)
}

func create(t *testing.T, kind oda.Kind, obj *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	return cluster().Create(t, kind, obj)
}

func get(kind oda.Kind, ns, name string) (*unstructured.Unstructured, error) {
	return cluster().Get(kind, ns, name)
}

func mustGet(t *testing.T, kind oda.Kind, ns, name string) *unstructured.Unstructured {
	t.Helper()
	u, err := get(kind, ns, name)
	if err != nil {
		t.Fatalf("get %s %s/%s: %v", kind.Name, ns, name, err)
	}
	return u
}

// updateComponent changes a Component's spec, retrying on the conflicts
// odaflow's own status writes can cause.
func updateComponent(t *testing.T, ns, name string, change func(*unstructured.Unstructured)) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		u, err := get(oda.KindComponent, ns, name)
		if err != nil {
			return err
		}
		change(u)
		_, err = stack.dyn.Resource(oda.KindComponent.GVR()).Namespace(ns).Update(context.Background(), u, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("update Component %s/%s: %v", ns, name, err)
	}
}

func mergePatch(t *testing.T, kind oda.Kind, ns, name string, patch string) {
	t.Helper()
	_, err := stack.dyn.Resource(kind.GVR()).Namespace(ns).Patch(context.Background(), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: "test"})
	if err != nil {
		t.Fatalf("patch %s %s/%s: %v", kind.Name, ns, name, err)
	}
}

func deploymentStatus(u *unstructured.Unstructured) string { return kit.DeploymentStatus(u) }

// waitPhase waits for a Component's deployment_status.
func waitPhase(t *testing.T, ns, name, phase string, timeout time.Duration) *unstructured.Unstructured {
	t.Helper()
	return cluster().WaitPhase(t, ns, name, phase, timeout)
}

// listChildren lists one kind's objects labelled for the component.
func listChildren(t *testing.T, kind oda.Kind, ns, component string) []string {
	t.Helper()
	return cluster().ListChildren(t, kind, ns, component)
}

// historyCounts counts a workflow's history events by type, over all runs
// of the current chain if runID is empty.
func historyCounts(t *testing.T, workflowID string) map[enumspb.EventType]int {
	t.Helper()
	counts := map[enumspb.EventType]int{}
	it := stack.tc.GetWorkflowHistory(context.Background(), workflowID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatalf("history of %s: %v", workflowID, err)
		}
		counts[ev.GetEventType()]++
	}
	return counts
}

// runsOf lists the runs (open and closed) with this workflow ID.
func runsOf(t *testing.T, workflowID string) []string {
	t.Helper()
	return cluster().RunsOf(t, workflowID)
}

// runsIn lists the runs (open and closed) with this workflow ID on another
// Temporal server than the suite's.
func runsIn(t *testing.T, tc client.Client, workflowID string) []string {
	t.Helper()
	return (&kit.Cluster{Temporal: tc}).RunsOf(t, workflowID)
}

func workflowStatus(workflowID string) (enumspb.WorkflowExecutionStatus, error) {
	d, err := stack.tc.DescribeWorkflow(context.Background(), workflowID, "")
	if err != nil {
		return 0, err
	}
	return d.Status, nil
}

func eventsFor(t *testing.T, ns, name string) []string {
	t.Helper()
	l, err := stack.core.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
	if err != nil {
		t.Fatalf("list events: %v", err)
	}
	var out []string
	for _, e := range l.Items {
		out = append(out, e.Type+"/"+e.Reason+": "+e.Message)
	}
	return out
}

func containsAny(list []string, sub string) bool {
	for _, s := range list {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// readyNamespace creates a namespace where a productcatalog Component can
// complete: the gateway has its address and every implementation behind
// the fixture's APIs has ready endpoints.
func readyNamespace(t *testing.T, ns string) {
	t.Helper()
	createNamespace(t, ns)
	ensureIngress(t)
	setIngressAddress(t, "34.159.217.74")
	for _, svc := range faultImplementations {
		setEndpoints(t, ns, svc, true)
	}
}

// stackWorker is a worker configuration with gateway gw and the main
// worker's identity and inventory setup (a Component has an IdentityConfig
// wherever it runs); common names its own task queue and namespaces.
func stackWorker(common config.Common, gw string) config.Worker {
	common.Gateway = gw
	return config.Worker{Common: common, IstioGateway: "components/component-gateway",
		ServiceInventoryURL: stack.inventoryURL,
		Keycloak: config.Keycloak{URL: stack.keycloak.URL(), Realm: keycloakRealm, AdminRealm: "master",
			AdminSecret: systemNamespace + "/" + keycloakAdminSecret, Timeout: 10 * time.Second},
	}
}

// startIstioStack starts a second worker (istio gateway, the main worker's
// Keycloak and inventory) and a watcher with common, which names their own
// task queue and namespaces, and stops them when the test ends; what names
// them in failures.
func startIstioStack(t *testing.T, common config.Common, what string) {
	t.Helper()
	startStack(t, stackWorker(common, "istio"), what)
}

// startStack starts a worker with wcfg and a watcher with its Common, and
// stops them when the test ends (the watcher first); what names them in
// failures.
func startStack(t *testing.T, wcfg config.Worker, what string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	wk := worker.New(wcfg)
	if err := wk.Start(ctx); err != nil {
		t.Fatalf("start the %s worker: %v", what, err)
	}
	t.Cleanup(func() { stopApp(wk) })
	wcommon := wcfg.Common
	wcommon.HTTPAddress = "127.0.0.1:0"
	wt := watcher.NewApp(config.Watcher{Common: wcommon, IdentityCheckInterval: 10 * time.Minute})
	if err := wt.Start(ctx); err != nil {
		t.Fatalf("start the %s watcher: %v", what, err)
	}
	// Registered last, so it runs first: no signals to a stopped worker.
	t.Cleanup(func() { stopApp(wt) })
}
