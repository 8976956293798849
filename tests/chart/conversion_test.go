package chart

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/odaflow/odaflow/webhook"
	"github.com/odaflow/odaflow/webhook/conversion"
)

// testCABundle is a valid base64 PEM CA for renderings that need
// webhook.tls.caBundle.
var testCABundle = func() string {
	_, _, ca, err := webhook.SelfSigned([]string{"odaflow-test-ca"}, nil)
	if err != nil {
		panic(err)
	}
	return base64.StdEncoding.EncodeToString(ca)
}()

// TestChartConversionWebhook converts a v1beta3 Component through the
// chart's own webhook on the real apiserver, with nothing but the rendered
// objects wiring them together:
//
//   - the rendered Component CRD (strategy Webhook, the release's webhook
//     Service) is applied, with the caBundle that cert-manager's cainjector
//     would write from the Certificate its annotation names (this test
//     plays cert-manager: it signs a certificate for that Certificate's
//     dnsNames);
//   - the rendered webhook Service is applied, and an Endpoints and an
//     EndpointSlice stand for the webhook pod (there is no kubelet); the
//     apiserver runs with --enable-aggregator-routing, so it calls the
//     endpoint as kube-proxy would route the ClusterIP;
//   - the webhook is the odaflow binary started with the rendered
//     Deployment's args and environment.
//
// A Component created at v1beta3 is then read at v1: the webhook moved its
// metadata under spec.componentMetadata and left its annotation.
func TestChartConversionWebhook(t *testing.T) {
	k := kube(t)
	c := clientsFor(t, k.RESTConfig)
	const ns, release = "conv-e2e", "conv"
	ensureNamespaces(t, c, ns)
	objs := render(t, release, ns, "")
	crd := componentCRD(t, objs)
	deploy := find(t, objs, "Deployment", "conv-odaflow-webhook")
	svcRef := mapOf(get(crd, "spec", "conversion", "webhook", "clientConfig", "service"))
	svc := find(t, objs, "Service", str(svcRef, "name"))

	// cert-manager's part: the serving certificate of the Certificate the
	// CRD's inject-ca-from annotation names, and that certificate's CA.
	_, certName, _ := strings.Cut(str(crd, "metadata", "annotations", "cert-manager.io/inject-ca-from"), "/")
	cert := find(t, objs, "Certificate", certName)
	var dnsNames []string
	for _, n := range list(get(cert, "spec", "dnsNames")) {
		dnsNames = append(dnsNames, n.(string))
	}
	certPEM, keyPEM, caPEM, err := webhook.SelfSigned(dnsNames, nil)
	if err != nil {
		t.Fatal(err)
	}

	// The webhook pod: the binary with the Deployment's args and env, its
	// Secret volume a folder, on an address the apiserver can reach.
	hostIP := nonLoopbackIPv4(t)
	port := freePort(t, hostIP)
	cont := container(t, deploy)
	tlsDir := t.TempDir()
	mountPath := ""
	for _, m := range list(cont["volumeMounts"]) {
		if str(m, "name") == "webhook-tls" {
			mountPath = str(m, "mountPath")
		}
	}
	if mountPath == "" {
		t.Fatal("the webhook Deployment mounts no webhook-tls volume")
	}
	for name, data := range map[string][]byte{"tls.crt": certPEM, "tls.key": keyPEM} {
		if err := os.WriteFile(filepath.Join(tlsDir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	env := os.Environ()
	for k, v := range envOf(cont) {
		switch k {
		case "ODAFLOW_LISTEN_ADDRESS":
			v = net.JoinHostPort(hostIP, strconv.Itoa(port))
		case "ODAFLOW_METRICS_ADDRESS":
			v = "127.0.0.1:0"
		default:
			v = strings.ReplaceAll(v, mountPath, tlsDir)
		}
		env = append(env, k+"="+v)
	}
	cmd := exec.Command(odaflowBinary(t), argsOf(cont)...)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
	})

	// The Service as rendered, and its endpoint.
	apply(t, c, []object{svc}, false)
	ctx := context.Background()
	svcPort := mapOf(list(get(svc, "spec", "ports"))[0])
	portName := str(svcPort, "name")
	_, err = c.core.CoreV1().Endpoints(ns).Create(ctx, &corev1.Endpoints{ //nolint:staticcheck // the resolver of some apiservers reads Endpoints
		ObjectMeta: metav1.ObjectMeta{Name: svc.name()},
		Subsets: []corev1.EndpointSubset{{ //nolint:staticcheck
			Addresses: []corev1.EndpointAddress{{IP: hostIP}},
			Ports:     []corev1.EndpointPort{{Name: portName, Port: int32(port), Protocol: corev1.ProtocolTCP}},
		}},
	}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	ready := true
	_, err = c.core.DiscoveryV1().EndpointSlices(ns).Create(ctx, &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: svc.name() + "-test", Labels: map[string]string{discoveryv1.LabelServiceName: svc.name()}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{hostIP}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}},
		Ports:       []discoveryv1.EndpointPort{{Name: &portName, Port: ptr(int32(port)), Protocol: ptr(corev1.ProtocolTCP)}},
	}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}

	// The rendered CRD with the caBundle cainjector would inject.
	crdGVR := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	crds := c.dyn.Resource(crdGVR)
	injected := object(deepCopy(t, crd))
	if err := unstructured.SetNestedField(injected, base64.StdEncoding.EncodeToString(caPEM), "spec", "conversion", "webhook", "clientConfig", "caBundle"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Back to the CRD the other tests installed.
		_, err := crds.Patch(context.Background(), crd.name(), types.MergePatchType, webhook.ConversionNonePatch(), metav1.PatchOptions{FieldManager: "helm-chart-test"})
		if err != nil {
			t.Errorf("restore the Component CRD's conversion: %v", err)
		}
	})
	// Directly: apply() leaves CRDs out (the other tests keep the ones
	// kube() installed).
	body, err := json.Marshal(injected)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := crds.Patch(ctx, crd.name(), types.ApplyPatchType, body, metav1.PatchOptions{FieldManager: "helm-chart-test", Force: ptr(true)}); err != nil {
		t.Fatalf("apply the Component CRD with the webhook conversion: %v", err)
	}

	compNS := "conv-e2e-components"
	ensureNamespaces(t, c, compNS)
	v1beta3 := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "oda.tmforum.org/v1beta3",
		"kind":       "Component",
		"metadata":   map[string]any{"name": "chart-conversion", "namespace": compNS},
		"spec": map[string]any{
			"name": "productcatalog", "version": "1.0.0", "functionalBlock": "CoreCommerce",
			"description": "converted through the chart's webhook",
		},
	}}
	components := func(version string) schema.GroupVersionResource {
		return schema.GroupVersionResource{Group: "oda.tmforum.org", Version: version, Resource: "components"}
	}
	// The apiserver takes the new conversion a moment after the apply:
	// until then a create comes back unconverted.
	deadline := time.Now().Add(60 * time.Second)
	var last error
	for {
		_, err := c.dyn.Resource(components("v1beta3")).Namespace(compNS).Create(ctx, v1beta3, metav1.CreateOptions{})
		if err == nil || apierrors.IsAlreadyExists(err) {
			got, err := c.dyn.Resource(components("v1")).Namespace(compNS).Get(ctx, "chart-conversion", metav1.GetOptions{})
			if err == nil {
				name, _, _ := unstructured.NestedString(got.Object, "spec", "componentMetadata", "name")
				ann := got.GetAnnotations()[conversion.AnnotationConverted]
				if name == "productcatalog" && strings.Contains(ann, "v1beta3") {
					t.Logf("read at v1 through the chart's webhook: componentMetadata.name %q, %s", name, ann)
					break
				}
				last = fmt.Errorf("v1 read back without conversion: componentMetadata.name %q, annotation %q", name, ann)
				_ = c.dyn.Resource(components("v1")).Namespace(compNS).Delete(ctx, "chart-conversion", metav1.DeleteOptions{})
			} else {
				last = err
			}
		} else {
			last = err
		}
		if time.Now().After(deadline) {
			t.Fatalf("no v1beta3 Component converted through the chart's webhook in 60 s: %v", last)
		}
		time.Sleep(500 * time.Millisecond)
	}
	_ = c.dyn.Resource(components("v1")).Namespace(compNS).Delete(ctx, "chart-conversion", metav1.DeleteOptions{})
}

func deepCopy(t *testing.T, o object) map[string]any {
	t.Helper()
	b, err := json.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// nonLoopbackIPv4 is an address of this machine that an Endpoints object
// accepts (the apiserver refuses loopback and link-local endpoints).
func nonLoopbackIPv4(t *testing.T) string {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok {
			if ip := n.IP.To4(); ip != nil && !ip.IsLoopback() && !ip.IsLinkLocalUnicast() {
				return ip.String()
			}
		}
	}
	t.Fatal(errors.New("this machine has no non-loopback IPv4 address for the webhook endpoint"))
	return ""
}

func freePort(t *testing.T, host string) int {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}
