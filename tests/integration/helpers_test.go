package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/odaflow/odaflow/oda"
)

// eventually polls cond until it holds or the timeout passes; the last
// reason is reported on failure.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var last string
	for {
		ok, reason := cond()
		if ok {
			return
		}
		last = reason
		if time.Now().After(deadline) {
			t.Fatalf("%s: not true after %s: %s", what, timeout, last)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func createNamespace(t *testing.T, name string) {
	t.Helper()
	_, err := stack.core.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create namespace %s: %v", name, err)
	}
	// API paths are cluster-wide claims on the gateway: leave none behind
	// for the next test.
	t.Cleanup(func() {
		_ = stack.core.CoreV1().Namespaces().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
}

func create(t *testing.T, kind oda.Kind, obj *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	out, err := stack.dyn.Resource(kind.GVR()).Namespace(obj.GetNamespace()).Create(context.Background(), obj, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create %s %s: %v", kind.Name, obj.GetName(), err)
	}
	return out
}

func get(kind oda.Kind, ns, name string) (*unstructured.Unstructured, error) {
	return stack.dyn.Resource(kind.GVR()).Namespace(ns).Get(context.Background(), name, metav1.GetOptions{})
}

func mustGet(t *testing.T, kind oda.Kind, ns, name string) *unstructured.Unstructured {
	t.Helper()
	u, err := get(kind, ns, name)
	if err != nil {
		t.Fatalf("get %s %s/%s: %v", kind.Name, ns, name, err)
	}
	return u
}

func mergePatch(t *testing.T, kind oda.Kind, ns, name string, patch string) {
	t.Helper()
	_, err := stack.dyn.Resource(kind.GVR()).Namespace(ns).Patch(context.Background(), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: "test"})
	if err != nil {
		t.Fatalf("patch %s %s/%s: %v", kind.Name, ns, name, err)
	}
}

func deploymentStatus(u *unstructured.Unstructured) string {
	s, _, _ := unstructured.NestedString(u.Object, "status", "summary/status", "deployment_status")
	return s
}

// waitPhase waits for a Component's deployment_status.
func waitPhase(t *testing.T, ns, name, phase string, timeout time.Duration) *unstructured.Unstructured {
	t.Helper()
	var got *unstructured.Unstructured
	eventually(t, timeout, fmt.Sprintf("Component %s/%s reaches %s", ns, name, phase), func() (bool, string) {
		u, err := get(oda.KindComponent, ns, name)
		if err != nil {
			return false, err.Error()
		}
		got = u
		return deploymentStatus(u) == phase, "deployment_status=" + deploymentStatus(u)
	})
	return got
}

// listChildren lists one kind's objects labelled for the component.
func listChildren(t *testing.T, kind oda.Kind, ns, component string) []string {
	t.Helper()
	l, err := stack.dyn.Resource(kind.GVR()).Namespace(ns).List(context.Background(), metav1.ListOptions{LabelSelector: oda.LabelComponentName + "=" + component})
	if err != nil {
		t.Fatalf("list %s: %v", kind.Resource, err)
	}
	var names []string
	for _, it := range l.Items {
		if it.GetDeletionTimestamp() == nil {
			names = append(names, it.GetName())
		}
	}
	return names
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
	return runsIn(t, stack.tc, workflowID)
}

// runsIn lists the runs (open and closed) with this workflow ID.
func runsIn(t *testing.T, tc client.Client, workflowID string) []string {
	t.Helper()
	resp, err := tc.ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{
		Query: fmt.Sprintf("WorkflowId = '%s'", workflowID),
	})
	if err != nil {
		t.Fatalf("list runs of %s: %v", workflowID, err)
	}
	var runs []string
	for _, e := range resp.GetExecutions() {
		runs = append(runs, e.GetExecution().GetRunId()+":"+e.GetStatus().String())
	}
	return runs
}

func workflowStatus(workflowID string) (enumspb.WorkflowExecutionStatus, error) {
	d, err := stack.tc.DescribeWorkflowExecution(context.Background(), workflowID, "")
	if err != nil {
		return 0, err
	}
	return d.GetWorkflowExecutionInfo().GetStatus(), nil
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
