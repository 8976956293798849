package integration

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/odaflow/odaflow/internal/config"
	"github.com/odaflow/odaflow/oda"
	"github.com/odaflow/odaflow/tests/fixtures"
	"github.com/odaflow/odaflow/tests/kit"
)

const component = "ctk-productcatalogmanagement"

func waitIdentity(t *testing.T, ns, name string) {
	t.Helper()
	kit.WaitIdentity(t, stack.keycloak, stack.core, keycloakRealm, ns, name)
}

func TestComponentLifecycleOnRealServers(t *testing.T) {
	ns := "it-lifecycle"
	createNamespace(t, ns)
	wfID := oda.WorkflowID("Component", ns, component)
	comp := fixtures.WithoutDependentAPIs(fixtures.ProductCatalog(ns, component))
	start := time.Now()
	create(t, oda.KindComponent, comp)

	// The workflow exists and writes status back.
	waitPhase(t, ns, component, oda.StatusCompCon, 30*time.Second)
	t.Logf("apply → status written: %s", time.Since(start).Round(time.Millisecond))
	if st, err := workflowStatus(wfID); err != nil || st != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		t.Fatalf("workflow %s: status %v, err %v", wfID, st, err)
	}
	// The watcher's workflow-task timeout reaches Temporal: with the
	// default 10 s, tasks whose apiserver calls run long under load lose
	// their heartbeat and run those calls again.
	if d, err := stack.tc.DescribeWorkflow(context.Background(), wfID, ""); err != nil {
		t.Fatal(err)
	} else if got := d.RawResponse.GetExecutionConfig().GetDefaultWorkflowTaskTimeout().AsDuration(); got != config.DefaultWorkflowTaskTimeout {
		t.Errorf("workflow-task timeout %s, want the watcher's %s", got, config.DefaultWorkflowTaskTimeout)
	}
	exposed := listChildren(t, oda.KindExposedAPI, ns, component)
	slices.Sort(exposed)
	want := []string{
		component + "-metrics", component + "-partyrole-v4",
		component + "-productcatalogmanagement-v4", component + "-promotionmanagement-v4",
	}
	if fmt.Sprint(exposed) != fmt.Sprint(want) {
		t.Fatalf("ExposedAPIs = %v, want %v", exposed, want)
	}
	child := mustGet(t, oda.KindExposedAPI, ns, component+"-productcatalogmanagement-v4")
	owner := child.GetOwnerReferences()
	compObj := mustGet(t, oda.KindComponent, ns, component)
	if len(owner) != 1 || owner[0].UID != compObj.GetUID() || owner[0].Controller == nil || !*owner[0].Controller {
		t.Errorf("owner references = %+v, want the Component as controller", owner)
	}
	if seg, _, _ := unstructured.NestedString(child.Object, "spec", "segment"); seg != "coreFunction" {
		t.Errorf("spec.segment = %q", seg)
	}

	// The gateway gets an address and the implementations come up (what a
	// cluster's load balancer and EndpointSlice controller do): the
	// ExposedAPI workflows fill url and ready, and the Component moves on.
	ensureIngress(t)
	setIngressAddress(t, "34.159.217.74")
	for _, svc := range []string{"ctk-prodcatapi", "ctk-promgmtapi", "ctk-productcatalogmanagement-sm", "ctk-partyroleapi"} {
		setEndpoints(t, ns, svc, true)
	}
	waitIdentity(t, ns, component)
	done := waitPhase(t, ns, component, oda.StatusComplete, 30*time.Second)
	t.Logf("apply → Complete (endpoints and address simulated, identity through the Keycloak double): %s", time.Since(start).Round(time.Millisecond))
	if s, _, _ := unstructured.NestedString(done.Object, "status", "summary/status", "coreAPIsummary"); s == "" {
		t.Errorf("coreAPIsummary is empty")
	}

	recordHistory(t, wfID, "component-install.json")
	recordHistory(t, oda.WorkflowID(oda.KindIdentityConfig.Name, ns, component), "identityconfig-install.json")

	// A status-only write (what every controller does) re-drives nothing.
	before := historyCounts(t, wfID)[enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED]
	unchanged := func() float64 {
		return metricWith(t, "http://"+stack.watcherHTTP+"/metrics", "odaflow_watcher_dedup_total", `kind="Component",reason="unchanged"`)
	}
	decided := unchanged()
	mergePatch(t, oda.KindComponent, ns, component, `{"status":{"someoneElse":{"note":"hello"}}}`)
	// The watcher decides on the write (the desired state is unchanged)
	// before the history is read: a signal would have been sent by then.
	eventually(t, 30*time.Second, "the watcher finds the Component unchanged", func() (bool, string) {
		n := unchanged()
		return n > decided, fmt.Sprint(n)
	})
	if after := historyCounts(t, wfID)[enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED]; after != before {
		t.Errorf("a status-only write sent %d signals", after-before)
	}

	// A watcher restart starts no new run and sends nothing.
	stopApp(stack.watcher)
	var err error
	if stack.watcher, err = startWatcher(context.Background()); err != nil {
		t.Fatalf("restart watcher: %v", err)
	}
	// A negative: no event announces that the restarted watcher has
	// decided on every object, so give it a few seconds to send a wrong
	// signal.
	time.Sleep(3 * time.Second)
	if after := historyCounts(t, wfID)[enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED]; after != before {
		t.Errorf("a watcher restart sent %d signals", after-before)
	}
	if runs := runsOf(t, wfID); len(runs) != 1 {
		t.Errorf("runs of %s = %v, want exactly one", wfID, runs)
	}

	// A spec change reaches the same workflow: an API removed, its child deleted.
	upgraded := fixtures.WithoutAPI(fixtures.WithoutDependentAPIs(fixtures.ProductCatalog(ns, component)), "promotionmanagement")
	updateComponent(t, ns, component, func(cur *unstructured.Unstructured) { cur.Object["spec"] = upgraded.Object["spec"] })
	eventually(t, 30*time.Second, "promotionmanagement ExposedAPI removed", func() (bool, string) {
		names := listChildren(t, oda.KindExposedAPI, ns, component)
		return len(names) == 3, fmt.Sprint(names)
	})
	waitPhase(t, ns, component, oda.StatusComplete, 30*time.Second)
	// And an upgrade that adds it back.
	updateComponent(t, ns, component, func(cur *unstructured.Unstructured) {
		cur.Object["spec"] = fixtures.WithoutDependentAPIs(fixtures.ProductCatalog(ns, component)).Object["spec"]
	})
	eventually(t, 30*time.Second, "promotionmanagement ExposedAPI back", func() (bool, string) {
		names := listChildren(t, oda.KindExposedAPI, ns, component)
		return len(names) == 4, fmt.Sprint(names)
	})
	waitPhase(t, ns, component, oda.StatusComplete, 30*time.Second)
	if runs := runsOf(t, wfID); len(runs) != 1 {
		t.Errorf("runs after upgrade = %v, want the same single run", runs)
	}

	recordHistory(t, wfID, "component-upgrade.json")

	// Deletion ends the lifecycle; the garbage collector removes the children.
	if err := stack.dyn.Resource(oda.KindComponent.GVR()).Namespace(ns).Delete(context.Background(), component, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete: %v", err)
	}
	eventually(t, 30*time.Second, "workflow completes after deletion", func() (bool, string) {
		st, err := workflowStatus(wfID)
		return err == nil && st == enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED, fmt.Sprint(st, err)
	})
	recordHistory(t, wfID, "component-delete.json")
	eventually(t, 60*time.Second, "children garbage-collected", func() (bool, string) {
		names := append(listChildren(t, oda.KindExposedAPI, ns, component), listChildren(t, oda.KindIdentityConfig, ns, component)...)
		return len(names) == 0, fmt.Sprint(names)
	})
}

func TestMalformedComponentFailsWithoutBlockingOthers(t *testing.T) {
	ns := "it-malformed"
	createNamespace(t, ns)
	bad := fixtures.ProductCatalog(ns, "bad-component")
	// Wrong types inside a preserve-unknown-fields part of the schema get
	// past the apiserver and must be caught by odaflow.
	spec := fixtures.Spec(bad)
	spec["securityFunction"].(map[string]any)["canvasSystemRole"] = ""
	spec["managementFunction"].(map[string]any)["exposedAPIs"].([]any)[0].(map[string]any)["port"] = 99999
	create(t, oda.KindComponent, bad)
	good := fixtures.WithoutDependentAPIs(fixtures.ProductCatalog(ns, "good-component"))
	create(t, oda.KindComponent, good)

	failed := waitPhase(t, ns, "bad-component", oda.StatusFailed, 30*time.Second)
	conds, _, _ := unstructured.NestedSlice(failed.Object, "status", "conditions")
	if len(conds) != 1 {
		t.Fatalf("conditions = %v", conds)
	}
	c := conds[0].(map[string]any)
	if c["type"] != "Ready" || c["status"] != "False" || c["reason"] != "InvalidSpec" {
		t.Errorf("condition = %v", c)
	}
	eventually(t, 15*time.Second, "a Warning event names the problem", func() (bool, string) {
		evs := eventsFor(t, ns, "bad-component")
		return containsAny(evs, "Warning/InvalidSpec") && containsAny(evs, "canvasSystemRole"), fmt.Sprint(evs)
	})
	waitPhase(t, ns, "good-component", oda.StatusCompCon, 30*time.Second)

	// Fixing the spec recovers by itself.
	updateComponent(t, ns, "bad-component", func(fixed *unstructured.Unstructured) {
		fixed.Object["spec"] = fixtures.Spec(fixtures.ProductCatalog(ns, "bad-component"))
	})
	waitPhase(t, ns, "bad-component", oda.StatusCompCon, 30*time.Second)
	recordHistory(t, oda.WorkflowID("Component", ns, "bad-component"), "component-failure-recovery.json")
}
