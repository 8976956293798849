package integration

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/odaflow/odaflow/internal/doubles/kongadmin"
)

// The gateway objects the kong and apisix gateways write, besides the
// VirtualService.
var (
	httpRoutes          = schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "httproutes"}
	referenceGrants     = schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1beta1", Resource: "referencegrants"}
	kongPlugins         = schema.GroupVersionResource{Group: "configuration.konghq.com", Version: "v1", Resource: "kongplugins"}
	apisixRoutes        = schema.GroupVersionResource{Group: "apisix.apache.org", Version: "v2", Resource: "apisixroutes"}
	apisixPluginConfigs = schema.GroupVersionResource{Group: "apisix.apache.org", Version: "v2", Resource: "apisixpluginconfigs"}
)

// gatewayStack is a second odaflow worker and watcher, started by a test,
// that drive one non-default gateway. They have their own task queue and
// serve only namespaces with their own prefix, which the main watcher
// ("it-[^gkprtx]*") ignores, so the two sets of processes never handle the
// same object.
type gatewayStack struct {
	gateway string
	// nsPrefix starts every namespace this stack serves. The gateway's
	// dash is dropped ("it-gw-kongadmin-") so that kong's glob
	// ("it-gw-kong-*") does not also match kong-admin's namespaces.
	nsPrefix  string
	taskQueue string
	// ingressIP is the load-balancer address of the simulated proxy
	// Service; every url starts with scheme://ingressIP.
	ingressIP string
	scheme    string
	// kong is the Kong Admin API double (kong-admin only) and kongURL its
	// address.
	kong    *kongadmin.Server
	kongURL string
	// metricsURL is the worker's /metrics: the kube request counter there
	// is the whole test process's (client-go's metrics hook is global).
	metricsURL string
}

// proxyService is the gateway's ingress Service as the Kong and APISIX
// charts install it, simulated: a LoadBalancer Service with an address in
// its status (no load-balancer controller runs here).
type proxyService struct {
	namespace, name string
	labels          map[string]string
	ports           []corev1.ServicePort
	// selector and namespace are what the watcher is told
	// (--ingress-selector, --ingress-namespace).
	selector string
}

// proxyFor is where each gateway's ingress is found:
//   - kong and kong-admin: the Kong chart's proxy Service kong/canvas-kong-proxy
//     (IWK reads it by name; odaflow selects it by the chart's labels in
//     namespace kong; the admin Service has the same labels but no
//     load-balancer address, and the watcher takes the first Service with one);
//   - apisix: the first Service in namespace canvas labelled
//     app.kubernetes.io/service=apisix-gateway (IWA);
//   - istio: the main tests' istio-ingress Service.
func proxyFor(gw string) proxyService {
	switch gw {
	case "kong", "kong-admin":
		return proxyService{
			namespace: "kong", name: "canvas-kong-proxy",
			labels: map[string]string{"app.kubernetes.io/name": "kong", "app.kubernetes.io/instance": "canvas"},
			ports: []corev1.ServicePort{
				{Name: "kong-proxy", Port: 80, TargetPort: intstr.FromInt32(8000)},
				{Name: "kong-proxy-tls", Port: 443, TargetPort: intstr.FromInt32(8443)},
			},
			selector: "app.kubernetes.io/name=kong,app.kubernetes.io/instance=canvas",
		}
	case "apisix":
		return proxyService{
			namespace: "canvas", name: "canvas-apisix-gateway",
			labels: map[string]string{"app.kubernetes.io/service": "apisix-gateway"},
			ports:  []corev1.ServicePort{{Name: "apisix-gateway", Port: 80, TargetPort: intstr.FromInt32(9080)}},
			// 9080 is no "http" port name, so no port suffix in the url.
			selector: "app.kubernetes.io/service=apisix-gateway",
		}
	}
	return proxyService{
		namespace: "istio-ingress", name: "istio-ingress",
		labels: map[string]string{"istio": "ingressgateway"},
		ports: []corev1.ServicePort{
			{Name: "http2", Port: 80, TargetPort: intstr.FromInt32(8080)},
			{Name: "https", Port: 443, TargetPort: intstr.FromInt32(8443)},
		},
		selector: "istio=ingressgateway",
	}
}

// startGatewayStack starts a worker with --gateway gw and a watcher for
// it, with the gateway's proxy Service present and addressed, and stops
// them when the test ends.
func startGatewayStack(t *testing.T, gw, ingressIP string) *gatewayStack {
	t.Helper()
	gs := &gatewayStack{
		gateway:   gw,
		nsPrefix:  "it-gw-" + strings.ReplaceAll(gw, "-", "") + "-",
		taskQueue: "odaflow-it-gw-" + gw,
		ingressIP: ingressIP,
		scheme:    "https",
	}
	if gw == "apisix" {
		gs.scheme = "http" // IWA
	}
	// Kong's ReferenceGrant and the APISIX objects live with the Istio
	// ingress they forward to.
	ensureNamespace(t, "istio-ingress")
	proxy := proxyFor(gw)
	ensureProxyService(t, proxy, ingressIP)

	common := stack.common
	common.TaskQueue = gs.taskQueue
	common.Namespaces = []string{gs.nsPrefix + "*"}
	common.IngressSelector = proxy.selector
	common.IngressNamespace = proxy.namespace
	common.HTTPAddress = freeAddress(t)
	gs.metricsURL = "http://" + common.HTTPAddress + "/metrics"

	wcfg := stackWorker(common, gw)
	if gw == "kong-admin" {
		gs.kong = kongadmin.New()
		srv := httptest.NewServer(gs.kong)
		t.Cleanup(srv.Close)
		gs.kongURL = srv.URL
		wcfg.KongAdminURL = srv.URL
	}
	startStack(t, wcfg, gw)
	return gs
}

func ensureNamespace(t *testing.T, name string) {
	t.Helper()
	_, err := stack.core.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create namespace %s: %v", name, err)
	}
}

// ensureProxyService creates the proxy Service if needed and gives it the
// load-balancer address ip ("" clears it).
func ensureProxyService(t *testing.T, p proxyService, ip string) {
	t.Helper()
	ctx := context.Background()
	ensureNamespace(t, p.namespace)
	svcs := stack.core.CoreV1().Services(p.namespace)
	_, err := svcs.Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: p.name, Namespace: p.namespace, Labels: p.labels},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: p.ports},
	}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create proxy service %s/%s: %v", p.namespace, p.name, err)
	}
	svc, err := svcs.Get(ctx, p.name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	svc.Status.LoadBalancer.Ingress = nil
	if ip != "" {
		svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: ip}}
	}
	if _, err := svcs.UpdateStatus(ctx, svc, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("set the address of %s/%s: %v", p.namespace, p.name, err)
	}
}

// kubeRequestsTotal scrapes odaflow_kube_requests_total (all methods and
// codes) from the worker's /metrics, by method.
func kubeRequestsTotal(t *testing.T, metricsURL string) map[string]float64 {
	t.Helper()
	return kubeRequestsBy(t, metricsURL, "method")
}

// kubeRequestsBy scrapes odaflow_kube_requests_total from the worker's
// /metrics (process-wide: the test's own requests are in it too), summed by
// the values of the given labels joined with a space ("PATCH 409" for
// method and code).
func kubeRequestsBy(t *testing.T, metricsURL string, labels ...string) map[string]float64 {
	t.Helper()
	var resp *http.Response
	var err error
	for range 50 { // the server starts in the background
		if resp, err = http.Get(metricsURL); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("scrape %s: %v", metricsURL, err)
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "odaflow_kube_requests_total{") {
			continue
		}
		pairs, value, ok := strings.Cut(strings.TrimPrefix(line, "odaflow_kube_requests_total{"), "} ")
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			continue
		}
		got := map[string]string{}
		for _, kv := range strings.Split(pairs, ",") {
			if k, val, ok := strings.Cut(kv, "="); ok {
				got[k] = strings.Trim(val, `"`)
			}
		}
		key := make([]string, len(labels))
		for i, l := range labels {
			key[i] = got[l]
		}
		out[strings.Join(key, " ")] += v
	}
	return out
}

// kongEntities lists a table of the Kong Admin double through its own
// Admin API, as Kong's state is seen from outside.
func kongEntities(t *testing.T, gs *gatewayStack, table string) []map[string]any {
	t.Helper()
	resp, err := http.Get(gs.kongURL + "/" + table + "?size=1000")
	if err != nil {
		t.Fatalf("list kong %s: %v", table, err)
	}
	defer resp.Body.Close()
	var page struct {
		Data []map[string]any `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&page); err != nil {
		t.Fatalf("list kong %s: %v", table, err)
	}
	return page.Data
}

// kongNames lists the names (instance_name for plugins) of a table's
// entities carrying tag.
func kongNames(t *testing.T, gs *gatewayStack, table, tag string) []string {
	t.Helper()
	var names []string
	for _, e := range kongEntities(t, gs, table) {
		if !strings.Contains(fmt.Sprint(e["tags"]), tag) {
			continue
		}
		key := "name"
		if table == "plugins" {
			key = "instance_name"
		}
		names = append(names, fmt.Sprint(e[key]))
	}
	return names
}
