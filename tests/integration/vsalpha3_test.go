package integration

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/odaflow/odaflow/internal/config"
	"github.com/odaflow/odaflow/internal/localstack"
	"github.com/odaflow/odaflow/oda"
	"github.com/odaflow/odaflow/tests/kit"
	"github.com/odaflow/odaflow/watcher"
	"github.com/odaflow/odaflow/worker"
)

// TestVirtualServiceOnAClusterServingOnlyV1alpha3 runs odaflow against a
// second real kube-apiserver whose Istio VirtualService CRD serves only
// v1alpha3, as on a cluster with an Istio from before v1beta1 (1.5) and v1
// (1.22): Istio's own CRD, with the newer versions taken out. The worker
// finds the version through discovery: the VirtualService it writes is a
// v1alpha3 one (the apiserver would refuse any other), with the route to
// the implementation, and the ExposedAPI is Ready with its url.
func TestVirtualServiceOnAClusterServingOnlyV1alpha3(t *testing.T) {
	const (
		ns   = "vsa-components"
		name = "vsa-productcatalogmanagement-productcatalogmanagement-v4"
		path = "/vsa-productcatalogmanagement/tmf-api/productCatalogManagement/v4"
		impl = "vsa-prodcatapi"
		ip   = "34.159.217.74"
	)
	kube, c := startCluster(t, func(crdDir string) { writeV1alpha3OnlyVirtualServiceCRD(t, crdDir) })
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	// The cluster serves VirtualServices in v1alpha3 only.
	disc := c.Core.Discovery()
	for _, v := range []string{"v1", "v1beta1"} {
		if _, err := disc.ServerResourcesForGroupVersion("networking.istio.io/" + v); !apierrors.IsNotFound(err) {
			t.Fatalf("networking.istio.io/%s: %v; want it not served", v, err)
		}
	}
	if _, err := disc.ServerResourcesForGroupVersion("networking.istio.io/v1alpha3"); err != nil {
		t.Fatalf("networking.istio.io/v1alpha3 not served: %v", err)
	}

	// A worker and a watcher of their own on that cluster: their own task
	// queue, and a namespace no other test's watcher serves (the workflow
	// ids, on the shared Temporal server, carry it).
	common := stack.common
	common.Kubeconfig = kube.KubeconfigPath
	common.TaskQueue = "odaflow-it-vsalpha3"
	common.Namespaces = []string{"vsa-*"}
	common.HTTPAddress = freeAddress(t)
	wk := worker.New(config.Worker{Common: common, IstioGateway: "components/component-gateway"})
	if err := wk.Start(ctx); err != nil {
		t.Fatalf("start the worker: %v", err)
	}
	t.Cleanup(func() { stopApp(wk) })
	wcommon := common
	wcommon.HTTPAddress = "127.0.0.1:0"
	wt := watcher.NewApp(config.Watcher{Common: wcommon, IdentityCheckInterval: 10 * time.Minute})
	if err := wt.Start(ctx); err != nil {
		t.Fatalf("start the watcher: %v", err)
	}
	t.Cleanup(func() { stopApp(wt) })

	c.CreateNamespace(t, ns)
	c.EnsureIngress(t)
	c.SetIngressAddress(t, ip)
	c.SetEndpoints(t, ns, impl, true)
	c.Create(t, oda.KindExposedAPI, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": oda.APIVersion, "kind": oda.KindExposedAPI.Name,
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec": map[string]any{
			"name": "productcatalogmanagement", "apiType": "openapi", "implementation": impl, "path": path, "port": int64(8080),
			"specification": map[string]any{"url": "https://raw.githubusercontent.com/tmforum-apis/TMF620_ProductCatalog/master/TMF620-ProductCatalog-v4.0.0.swagger.json"},
		},
	}})

	var api *unstructured.Unstructured
	kit.Eventually(t, 60*time.Second, "the ExposedAPI Ready with its url", func() (bool, string) {
		u, err := c.Get(oda.KindExposedAPI, ns, name)
		if err != nil {
			return false, err.Error()
		}
		api = u
		url, ready := apiStatus(u)
		return url == "https://"+ip+path && ready && strings.HasPrefix(readyReason(u), "True/"),
			fmt.Sprintf("url %q ready %t, Ready %q; status %v", url, ready, readyReason(u), u.Object["status"])
	})

	vsV1alpha3 := schema.GroupVersionResource{Group: "networking.istio.io", Version: "v1alpha3", Resource: "virtualservices"}
	vs, err := c.Dyn.Resource(vsV1alpha3).Namespace(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("read the VirtualService back as v1alpha3: %v", err)
	}
	// Who wrote it, and in which version: the apiserver records the
	// request's apiVersion per field manager.
	var written []string
	for _, mf := range vs.GetManagedFields() {
		written = append(written, mf.Manager+" "+mf.APIVersion)
		if mf.APIVersion != "networking.istio.io/v1alpha3" {
			t.Errorf("VirtualService written by %s as %s, want networking.istio.io/v1alpha3", mf.Manager, mf.APIVersion)
		}
	}
	if len(written) == 0 {
		t.Error("the VirtualService has no managed fields to tell who wrote it")
	}
	owners := vs.GetOwnerReferences()
	if len(owners) != 1 || owners[0].Kind != oda.KindExposedAPI.Name || owners[0].Name != name || owners[0].UID != api.GetUID() {
		t.Errorf("VirtualService owners %v, want the ExposedAPI %s", owners, name)
	}
	gateways, _, _ := unstructured.NestedStringSlice(vs.Object, "spec", "gateways")
	routes, _, _ := unstructured.NestedSlice(vs.Object, "spec", "http")
	var prefix, host string
	var port int64
	if len(routes) == 1 {
		r := routes[0].(map[string]any)
		if m, ok := r["match"].([]any); ok && len(m) == 1 {
			prefix, _, _ = unstructured.NestedString(m[0].(map[string]any), "uri", "prefix")
		}
		if d, ok := r["route"].([]any); ok && len(d) == 1 {
			host, _, _ = unstructured.NestedString(d[0].(map[string]any), "destination", "host")
			port, _, _ = unstructured.NestedInt64(d[0].(map[string]any), "destination", "port", "number")
		}
	}
	if strings.Join(gateways, ",") != "components/component-gateway" || prefix != path || host != impl || port != 8080 {
		t.Errorf("VirtualService spec: gateways %v, prefix %q, destination %s:%d; want components/component-gateway, %q, %s:8080\n%v",
			gateways, prefix, host, port, path, impl, vs.Object["spec"])
	}
	t.Logf("VirtualService %s/%s written as %v; ExposedAPI url %s", ns, name, written, "https://"+ip+path)
}

// writeV1alpha3OnlyVirtualServiceCRD writes Istio's own VirtualService CRD
// (from the istio.io/api module odaflow requires) into dir with v1alpha3 as
// its only version, the storage one.
func writeV1alpha3OnlyVirtualServiceCRD(t *testing.T, dir string) {
	t.Helper()
	gw := t.TempDir()
	if err := localstack.GatewayCRDs(gw); err != nil {
		t.Fatalf("the gateway CRDs: %v", err)
	}
	b, err := os.ReadFile(filepath.Join(gw, "istio.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 64*1024)
	for {
		var crd map[string]any
		if err := dec.Decode(&crd); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("read Istio's CRDs: %v", err)
		}
		if name, _, _ := unstructured.NestedString(crd, "metadata", "name"); name != "virtualservices.networking.istio.io" {
			continue
		}
		versions, _, _ := unstructured.NestedSlice(crd, "spec", "versions")
		var keep []any
		for _, v := range versions {
			if m := v.(map[string]any); m["name"] == "v1alpha3" {
				m["served"], m["storage"] = true, true
				keep = append(keep, m)
			}
		}
		if len(keep) != 1 {
			t.Fatalf("Istio's VirtualService CRD has no v1alpha3 version: %d versions", len(versions))
		}
		if err := unstructured.SetNestedSlice(crd, keep, "spec", "versions"); err != nil {
			t.Fatal(err)
		}
		out, err := yaml.Marshal(crd)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "istio-virtualservices-v1alpha3.yaml"), out, 0o600); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Fatal("Istio's CRDs have no virtualservices.networking.istio.io")
}
