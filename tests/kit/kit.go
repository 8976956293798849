// Package kit holds the test steps that more than one end-to-end suite
// takes on a real apiserver and Temporal (tests/integration with in-process
// worker and watcher, tests/production with separate processes on the
// production Temporal server): polling, the simulated gateway address and
// EndpointSlices, a Component's phase and children, a workflow's runs, and
// the half-way lifecycle the fault tests interrupt.
package kit

import (
	"context"
	"fmt"
	"testing"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/odaflow/odaflow/internal/doubles/keycloak"
	"github.com/odaflow/odaflow/oda"
	"github.com/odaflow/odaflow/tests/fixtures"
)

// Cluster is the apiserver and Temporal a suite runs on.
type Cluster struct {
	Dyn      dynamic.Interface
	Core     kubernetes.Interface
	Temporal client.Client
}

// Eventually polls cond until it holds or the timeout passes; the last
// reason is reported on failure.
func Eventually(t *testing.T, timeout time.Duration, what string, cond func() (bool, string)) {
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

// CreateNamespace creates a namespace, deleted when the test ends.
func (c *Cluster) CreateNamespace(t *testing.T, name string) {
	t.Helper()
	_, err := c.Core.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create namespace %s: %v", name, err)
	}
	// API paths are cluster-wide claims on the gateway: leave none behind
	// for the next test.
	t.Cleanup(func() {
		_ = c.Core.CoreV1().Namespaces().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
}

// Create creates an ODA object.
func (c *Cluster) Create(t *testing.T, kind oda.Kind, obj *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	out, err := c.Dyn.Resource(kind.GVR()).Namespace(obj.GetNamespace()).Create(context.Background(), obj, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create %s %s: %v", kind.Name, obj.GetName(), err)
	}
	return out
}

// Get reads an ODA object.
func (c *Cluster) Get(kind oda.Kind, ns, name string) (*unstructured.Unstructured, error) {
	return c.Dyn.Resource(kind.GVR()).Namespace(ns).Get(context.Background(), name, metav1.GetOptions{})
}

// DeploymentStatus is a Component's status.summary/status.deployment_status.
func DeploymentStatus(u *unstructured.Unstructured) string {
	s, _, _ := unstructured.NestedString(u.Object, "status", "summary/status", "deployment_status")
	return s
}

// WaitPhase waits for a Component's deployment_status. Errors reading it
// (an apiserver that is restarting) count as not yet.
func (c *Cluster) WaitPhase(t *testing.T, ns, name, phase string, timeout time.Duration) *unstructured.Unstructured {
	t.Helper()
	var got *unstructured.Unstructured
	Eventually(t, timeout, fmt.Sprintf("Component %s/%s reaches %s", ns, name, phase), func() (bool, string) {
		u, err := c.Get(oda.KindComponent, ns, name)
		if err != nil {
			return false, err.Error()
		}
		got = u
		return DeploymentStatus(u) == phase, "deployment_status=" + DeploymentStatus(u)
	})
	return got
}

// ListChildren lists one kind's objects labelled for the component,
// leaving out those being deleted.
func (c *Cluster) ListChildren(t *testing.T, kind oda.Kind, ns, component string) []string {
	t.Helper()
	l, err := c.Dyn.Resource(kind.GVR()).Namespace(ns).List(context.Background(), metav1.ListOptions{LabelSelector: oda.LabelComponentName + "=" + component})
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

// RunsOf lists the runs (open and closed) with this workflow ID, as
// "<run id>:<status>".
func (c *Cluster) RunsOf(t *testing.T, workflowID string) []string {
	t.Helper()
	resp, err := c.Temporal.ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{
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

// EnsureIngress creates the Istio ingress Service the gateway publishes
// through, without a load-balancer address (as while it is pending).
func (c *Cluster) EnsureIngress(t *testing.T) {
	t.Helper()
	_, _ = c.Core.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "istio-ingress"}}, metav1.CreateOptions{})
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "istio-ingress", Namespace: "istio-ingress", Labels: map[string]string{"istio": "ingressgateway"}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{
			{Name: "http2", Port: 80, TargetPort: intstr.FromInt32(8080)},
			{Name: "https", Port: 443, TargetPort: intstr.FromInt32(8443)},
		}},
	}
	_, err := c.Core.CoreV1().Services("istio-ingress").Create(context.Background(), svc, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create ingress service: %v", err)
	}
}

// SetIngressAddress sets (or, with "", clears) the ingress Service's
// load-balancer address, as a cloud load balancer would.
func (c *Cluster) SetIngressAddress(t *testing.T, ip string) {
	t.Helper()
	svc, err := c.Core.CoreV1().Services("istio-ingress").Get(context.Background(), "istio-ingress", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	svc.Status.LoadBalancer.Ingress = nil
	if ip != "" {
		svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: ip}}
	}
	if _, err := c.Core.CoreV1().Services("istio-ingress").UpdateStatus(context.Background(), svc, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("set ingress address: %v", err)
	}
}

// SetEndpoints creates or updates the implementation Service's
// EndpointSlice, as the EndpointSlice controller would.
func (c *Cluster) SetEndpoints(t *testing.T, ns, service string, ready bool) {
	t.Helper()
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: service + "-abcde", Namespace: ns, Labels: map[string]string{discoveryv1.LabelServiceName: service}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"10.244.0.10"}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}},
	}
	api := c.Core.DiscoveryV1().EndpointSlices(ns)
	cur, err := api.Get(context.Background(), slice.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = api.Create(context.Background(), slice, metav1.CreateOptions{})
	case err == nil:
		cur.Endpoints = slice.Endpoints
		_, err = api.Update(context.Background(), cur, metav1.UpdateOptions{})
	}
	if err != nil {
		t.Fatalf("endpoints of %s: %v", service, err)
	}
}

// FaultImplementations are the productcatalog fixture's implementation
// Services, one per exposed API.
var FaultImplementations = []string{"ctk-prodcatapi", "ctk-promgmtapi", "ctk-productcatalogmanagement-sm", "ctk-partyroleapi"}

// ExposedAPIsPerComponent is how many ExposedAPIs the fixture StartHalfWay
// installs has.
const ExposedAPIsPerComponent = 4

// StartHalfWay installs a Component whose gateway has no address and whose
// implementations are down, waits until its children are applied, and
// returns its workflow's runs at that point.
func (c *Cluster) StartHalfWay(t *testing.T, ns, name string) []string {
	t.Helper()
	c.CreateNamespace(t, ns)
	c.LogLifecycle(t, ns, name)
	c.EnsureIngress(t)
	c.SetIngressAddress(t, "")
	for _, svc := range FaultImplementations {
		c.SetEndpoints(t, ns, svc, false)
	}
	c.Create(t, oda.KindComponent, fixtures.WithOwnPaths(fixtures.WithoutDependentAPIs(fixtures.ProductCatalog(ns, name))))
	Eventually(t, 60*time.Second, "children applied", func() (bool, string) {
		apis := c.ListChildren(t, oda.KindExposedAPI, ns, name)
		return len(apis) == ExposedAPIsPerComponent, fmt.Sprint(apis)
	})
	c.WaitPhase(t, ns, name, oda.StatusCompCon, 30*time.Second)
	return c.RunsOf(t, oda.WorkflowID(oda.KindComponent.Name, ns, name))
}

// BringUpGatewayAndImplementations gives the gateway its address and the
// implementations ready endpoints.
func (c *Cluster) BringUpGatewayAndImplementations(t *testing.T, ns string) {
	t.Helper()
	c.SetIngressAddress(t, "34.159.217.74")
	for _, svc := range FaultImplementations {
		c.SetEndpoints(t, ns, svc, true)
	}
}

// AssertSameLifecycleCompletes waits for Complete and checks that the
// workflow run is the one from before the fault and that no child was
// created twice.
func (c *Cluster) AssertSameLifecycleCompletes(t *testing.T, ns, name string, runsBefore []string, timeout time.Duration) {
	t.Helper()
	c.WaitPhase(t, ns, name, oda.StatusComplete, timeout)
	if runs := c.RunsOf(t, oda.WorkflowID(oda.KindComponent.Name, ns, name)); len(runs) != len(runsBefore) || runs[0] != runsBefore[0] {
		t.Errorf("runs before %v, after %v: the restart must continue the same lifecycle", runsBefore, runs)
	}
	if apis := c.ListChildren(t, oda.KindExposedAPI, ns, name); len(apis) != ExposedAPIsPerComponent {
		t.Errorf("ExposedAPIs after the restart = %v, want the same %d", apis, ExposedAPIsPerComponent)
	}
}

// WaitIdentity waits for a component's client in the Keycloak double and
// its credentials Secret, and checks the Secret's client id.
func WaitIdentity(t *testing.T, kc *keycloak.Server, core kubernetes.Interface, realm, ns, name string) {
	t.Helper()
	Eventually(t, 30*time.Second, fmt.Sprintf("identity of %s/%s", ns, name), func() (bool, string) {
		_, inKeycloak := kc.ClientSecret(realm, name)
		sec, err := core.CoreV1().Secrets(ns).Get(context.Background(), name+"-secret", metav1.GetOptions{})
		if !inKeycloak || err != nil {
			return false, fmt.Sprintf("Keycloak client present %v, Secret err %v", inKeycloak, err)
		}
		if got := string(sec.Data["client_id"]); got != name {
			t.Fatalf("Secret %s-secret client_id = %q, want %q", name, got, name)
		}
		return true, ""
	})
}
