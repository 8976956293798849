package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	odaflowchart "github.com/odaflow/odaflow/charts/odaflow"
	"github.com/odaflow/odaflow/gateway"
	"github.com/odaflow/odaflow/internal/doubles/keycloak"
	"github.com/odaflow/odaflow/internal/localstack"
	"github.com/odaflow/odaflow/oda"
	"github.com/odaflow/odaflow/tests/fixtures"
	"github.com/odaflow/odaflow/tests/kit"
)

// TestPrometheusAnnotationOnAClusterWithoutPrometheusOperator runs odaflow
// with the Canvas's metrics default, --metrics-mode PrometheusAnnotation,
// against a second real kube-apiserver that has the ODA and Istio CRDs but
// not the Prometheus Operator's (monitoring.coreos.com), as a Canvas
// cluster often has. The product catalog Component, whose metrics API's
// pod appears only after the ExposedAPI is made, reaches Complete, and the
// pod behind the metrics API carries prometheus.io/scrape, port and path.
func TestPrometheusAnnotationOnAClusterWithoutPrometheusOperator(t *testing.T) {
	const (
		ns      = "pma-components"
		name    = "pma-productcatalog"
		metrics = "ctk-productcatalogmanagement-sm"
	)
	kube, c := startCluster(t, func(crdDir string) {
		// Istio's CRDs only, of the gateway CRDs the shared stack installs.
		gw := t.TempDir()
		if err := localstack.GatewayCRDs(gw); err != nil {
			t.Fatal(err)
		}
		istio, err := os.ReadFile(filepath.Join(gw, "istio.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(crdDir, "istio.yaml"), istio, 0o600); err != nil {
			t.Fatal(err)
		}
	})
	ctx := context.Background()
	if _, err := c.Core.Discovery().ServerResourcesForGroupVersion("monitoring.coreos.com/v1"); !apierrors.IsNotFound(err) {
		t.Fatalf("monitoring.coreos.com/v1: %v; want it not served", err)
	}

	// The Keycloak admin Secret the worker reads, on this cluster.
	c.CreateNamespace(t, systemNamespace)
	if _, err := c.Core.CoreV1().Secrets(systemNamespace).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: keycloakAdminSecret},
		Data:       map[string][]byte{"username": []byte(keycloak.AdminUser), "password": []byte(stack.keycloakPassword)},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	common := stack.common
	common.Kubeconfig = kube.KubeconfigPath
	common.TaskQueue = "odaflow-it-pma"
	common.Namespaces = []string{"pma-*"}
	common.HTTPAddress = freeAddress(t)
	wcfg := stackWorker(common, "istio")
	wcfg.MetricsMode = gateway.MetricsPrometheusAnnotation
	startStack(t, wcfg, "PrometheusAnnotation")

	c.CreateNamespace(t, ns)
	c.EnsureIngress(t)
	c.SetIngressAddress(t, "34.159.217.74")
	for _, svc := range kit.FaultImplementations {
		c.SetEndpoints(t, ns, svc, false)
	}
	// The metrics implementation's Service, selecting its pods as a Helm
	// chart's Service does.
	selector := map[string]string{"app": "pma-sm"}
	if _, err := c.Core.CoreV1().Services(ns).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: metrics},
		Spec:       corev1.ServiceSpec{Selector: selector, Ports: []corev1.ServicePort{{Port: 4000}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.Create(t, oda.KindComponent, fixtures.WithoutDependentAPIs(fixtures.ProductCatalog(ns, name)))
	metricsAPI := name + "-metrics"
	kit.Eventually(t, 60*time.Second, "the metrics ExposedAPI", func() (bool, string) {
		_, err := c.Get(oda.KindExposedAPI, ns, metricsAPI)
		return err == nil, fmt.Sprint(err)
	})

	// The pod comes after the ExposedAPI (the chart's Deployment rolling
	// out), then the implementations become ready.
	kit.Eventually(t, 30*time.Second, "the metrics pod created", func() (bool, string) {
		_, err := c.Core.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "pma-sm-0", Labels: selector},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "sm", Image: "example.com/sm:1"}}},
		}, metav1.CreateOptions{})
		// The namespace's default ServiceAccount comes from the
		// controller manager, shortly after the namespace.
		return err == nil || apierrors.IsAlreadyExists(err), fmt.Sprint(err)
	})
	for _, svc := range kit.FaultImplementations {
		c.SetEndpoints(t, ns, svc, true)
	}
	c.WaitPhase(t, ns, name, oda.StatusComplete, 90*time.Second)

	api, err := c.Get(oda.KindExposedAPI, ns, metricsAPI)
	if err != nil {
		t.Fatal(err)
	}
	path, _, _ := unstructured.NestedString(api.Object, "spec", "path")
	want := map[string]string{"prometheus.io/scrape": "true", "prometheus.io/port": "4000", "prometheus.io/path": path}
	kit.Eventually(t, 30*time.Second, "the metrics pod annotated", func() (bool, string) {
		pod, err := c.Core.CoreV1().Pods(ns).Get(ctx, "pma-sm-0", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		for k, v := range want {
			if pod.Annotations[k] != v {
				return false, fmt.Sprintf("annotations %v, want %v", pod.Annotations, want)
			}
		}
		return true, ""
	})
	if url, ready := apiStatus(api); !ready || url == "" {
		t.Errorf("metrics ExposedAPI url %q ready %t, want it Ready with its url", url, ready)
	}
}

// startCluster starts a second real kube-apiserver (and controller manager)
// with the ODA CRDs and what crds writes beside them into the CRD folder,
// for a test that needs a cluster shaped unlike the shared one. It stops
// when the test ends.
func startCluster(t *testing.T, crds func(crdDir string)) (*localstack.Kube, *kit.Cluster) {
	t.Helper()
	tools, err := localstack.LookupTools()
	if err != nil {
		t.Fatal(err)
	}
	crdDir := t.TempDir()
	if err := odaflowchart.WriteCRDs(crdDir); err != nil {
		t.Fatal(err)
	}
	crds(crdDir)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	kube, err := localstack.StartKube(ctx, localstack.Options{ToolsDir: tools, DataDir: t.TempDir(), CRDDir: crdDir})
	if err != nil {
		t.Fatalf("start the second cluster: %v", err)
	}
	t.Cleanup(func() { _ = kube.Stop() })
	return kube, &kit.Cluster{Dyn: dynamic.NewForConfigOrDie(kube.RESTConfig), Core: kubernetes.NewForConfigOrDie(kube.RESTConfig), Temporal: stack.tc}
}
