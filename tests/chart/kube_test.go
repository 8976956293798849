package chart

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	authv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	odaflowchart "github.com/odaflow/odaflow/charts/odaflow"
	"github.com/odaflow/odaflow/internal/localstack"
)

var (
	kubeOnce  sync.Once
	kubeStack *localstack.Kube
	kubeErr   error
)

// kube starts one real kube-apiserver (internal/localstack) for the
// package, with the chart's CRDs and stand-ins for cert-manager's. Missing
// servers fail the test; skipping needs ODAFLOW_SKIP_KUBE and is refused
// under CI.
func kube(t *testing.T) *localstack.Kube {
	t.Helper()
	kubeOnce.Do(func() {
		tools, err := localstack.LookupTools()
		if err != nil {
			kubeErr = err
			return
		}
		dir, err := os.MkdirTemp("", "odaflow-chart-kube-")
		if err != nil {
			kubeErr = err
			return
		}
		crdDir := filepath.Join(dir, "crds")
		if kubeErr = odaflowchart.WriteCRDs(crdDir); kubeErr != nil {
			return
		}
		// cert-manager is not part of the test cluster; its two kinds the
		// chart renders are installed as schema-less CRDs so the dry run can
		// check the chart's own fields (names, namespaces, metadata) and the
		// apiserver accepts the kinds at all.
		for _, kind := range []string{"Certificate", "Issuer"} {
			if kubeErr = os.WriteFile(filepath.Join(crdDir, "cert-manager-"+strings.ToLower(kind)+".yaml"), []byte(stubCRD("cert-manager.io", kind)), 0o600); kubeErr != nil {
				return
			}
		}
		// The same for the Prometheus Operator's ServiceMonitor and PodMonitor.
		for _, kind := range []string{"ServiceMonitor", "PodMonitor"} {
			if kubeErr = os.WriteFile(filepath.Join(crdDir, "prometheus-"+strings.ToLower(kind)+".yaml"), []byte(stubCRD("monitoring.coreos.com", kind)), 0o600); kubeErr != nil {
				return
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
		defer cancel()
		kubeStack, kubeErr = localstack.StartKube(ctx, localstack.Options{
			ToolsDir: tools, DataDir: filepath.Join(dir, "kube"), CRDDir: crdDir,
			// TestChartConversionWebhook: the chart's webhook Service is
			// reached at its endpoint, as in a cluster through kube-proxy.
			KubeAPIServerExtraArgs: []string{"--enable-aggregator-routing=true"},
		})
	})
	if kubeErr != nil {
		if os.Getenv("ODAFLOW_SKIP_KUBE") != "" && os.Getenv("CI") == "" {
			t.Skipf("SKIPPED on request (ODAFLOW_SKIP_KUBE): %v", kubeErr)
		}
		t.Fatalf("the real kube-apiserver is missing: %v", kubeErr)
	}
	return kubeStack
}

func stubCRD(group, kind string) string {
	plural := strings.ToLower(kind) + "s"
	return fmt.Sprintf(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: %[3]s.%[1]s
spec:
  group: %[1]s
  scope: Namespaced
  names: {kind: %[2]s, plural: %[3]s, singular: %[4]s, listKind: %[2]sList}
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
`, group, kind, plural, strings.ToLower(kind))
}

type clients struct {
	core   kubernetes.Interface
	dyn    dynamic.Interface
	mapper meta.RESTMapper
}

func clientsFor(t *testing.T, cfg *rest.Config) clients {
	t.Helper()
	core := kubernetes.NewForConfigOrDie(cfg)
	return clients{
		core:   core,
		dyn:    dynamic.NewForConfigOrDie(cfg),
		mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(discovery.NewDiscoveryClientForConfigOrDie(cfg))),
	}
}

func ensureNamespaces(t *testing.T, c clients, names ...string) {
	t.Helper()
	for _, n := range names {
		_, err := c.core.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n}}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
}

// apply server-side-applies each object, as a dry run or for real. CRDs
// are applied in a dry run only: StartKube installed them, and the
// rendered Component CRD names a webhook that only
// TestChartConversionWebhook serves.
func apply(t *testing.T, c clients, objs []object, dryRun bool) {
	t.Helper()
	ctx := context.Background()
	for _, o := range objs {
		if o.kind() == "CustomResourceDefinition" && !dryRun {
			continue
		}
		u := &unstructured.Unstructured{Object: o}
		gvk := u.GroupVersionKind()
		mapping, err := c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			t.Errorf("%s: the apiserver does not serve %s: %v", o.id(), gvk, err)
			continue
		}
		var ri dynamic.ResourceInterface = c.dyn.Resource(mapping.Resource)
		if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
			if o.namespace() == "" {
				t.Errorf("%s: namespaced kind rendered without a namespace", o.id())
				continue
			}
			ri = c.dyn.Resource(mapping.Resource).Namespace(o.namespace())
		}
		body, _ := json.Marshal(o)
		opts := metav1.PatchOptions{FieldManager: "helm-chart-test", Force: ptr(true)}
		if dryRun {
			opts.DryRun = []string{metav1.DryRunAll}
		}
		if _, err := ri.Patch(ctx, o.name(), types.ApplyPatchType, body, opts); err != nil {
			t.Errorf("apply %s (dry run %v): %v", o.id(), dryRun, err)
		}
	}
}

func ptr[T any](v T) *T { return &v }

// TestServerDryRun applies the default and the full rendering to a real
// kube-apiserver with server-side dry run: every object must pass the
// apiserver's validation (schemas, PDB and RBAC rules, webhook configs).
func TestServerDryRun(t *testing.T) {
	k := kube(t)
	c := clientsFor(t, k.RESTConfig)
	ensureNamespaces(t, c, "canvas", "components", "istio-ingress", "dryrun-default", "dryrun-full", "dryrun-ns")
	for _, tc := range []struct {
		name, ns, values string
		sets             []string
	}{
		{"default", "dryrun-default", "", nil},
		{"full", "dryrun-full", fullValues, nil},
		{"namespaced-kong", "dryrun-ns", "", []string{"rbac.scope=namespaced", "watchNamespaces={components}", "gateway.type=kong",
			"keycloak.enabled=true", "keycloak.adminSecret.name=kc", "vault.enabled=true", "vault.kubernetesAuthRole=odaflow",
			"webhook.certManager.enabled=false", "webhook.tls.existingSecret=webhook-tls", "webhook.tls.caBundle=" + testCABundle}},
		{"monitoring", "dryrun-default", "", []string{"metrics.serviceMonitor.enabled=true", "metrics.podMonitor.enabled=true", "metrics.grafanaDashboard.enabled=true"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := render(t, "dry-"+tc.name, tc.ns, tc.values, tc.sets...)
			apply(t, c, objs, true)
		})
	}
}

// sar asks the apiserver whether a service account may do something.
func sar(t *testing.T, c clients, ns, sa string, attr authv1.ResourceAttributes) bool {
	t.Helper()
	r, err := c.core.AuthorizationV1().SubjectAccessReviews().Create(context.Background(), &authv1.SubjectAccessReview{
		Spec: authv1.SubjectAccessReviewSpec{
			User:               "system:serviceaccount:" + ns + ":" + sa,
			Groups:             []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
			ResourceAttributes: &attr,
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return r.Status.Allowed
}

type access struct {
	verb, group, resource, sub, ns, name string
	allowed                              bool
	why                                  string
}

func checkAccess(t *testing.T, c clients, ns, sa string, cases []access) {
	t.Helper()
	for _, a := range cases {
		attr := authv1.ResourceAttributes{Verb: a.verb, Group: a.group, Resource: a.resource, Subresource: a.sub, Namespace: a.ns, Name: a.name}
		got := sar(t, c, ns, sa, attr)
		// The RBAC authorizer sees new Roles and bindings through its
		// informers, a moment after they are written: a grant may take that
		// long to appear (a denial needs no wait; it is checked after).
		for deadline := time.Now().Add(10 * time.Second); a.allowed && !got && time.Now().Before(deadline); {
			time.Sleep(200 * time.Millisecond)
			got = sar(t, c, ns, sa, attr)
		}
		if got != a.allowed {
			where := a.ns
			if where == "" {
				where = "cluster-wide"
			}
			t.Errorf("%s: %s %s %s/%s %s in %s: allowed=%v, want %v (%s)", sa, a.verb, a.group, a.resource, a.sub, a.name, where, got, a.allowed, a.why)
		}
	}
}

// TestRBAC installs the chart's RBAC for real and asks the apiserver, as
// each service account, for every verb the code uses and for some it must
// never have.
func TestRBAC(t *testing.T) {
	k := kube(t)
	c := clientsFor(t, k.RESTConfig)
	ensureNamespaces(t, c, "canvas", "components", "odacompns-a", "istio-ingress", "rbac-ns", "elsewhere")
	// Full values (kong-admin, Keycloak, Vault token reviewer, sidecar
	// injection in components), cluster scope, release in canvas.
	apply(t, c, render(t, "odaflow", "canvas", fullValues), false)
	// Literal namespaces with rbac.scope=namespaced and the kong gateway,
	// release in rbac-ns.
	apply(t, c, render(t, "nsflow", "rbac-ns", "", "rbac.scope=namespaced", "watchNamespaces={components}", "gateway.type=kong",
		"keycloak.enabled=true", "keycloak.adminSecret.namespace=canvas", "keycloak.adminSecret.name=keycloak-admin",
		"webhook.enabled=false"), false)

	const oda = "oda.tmforum.org"
	t.Run("worker", func(t *testing.T) {
		checkAccess(t, c, "canvas", "odaflow-worker", []access{
			{"patch", oda, "components", "", "components", "c", true, "WriteStatus, finalizers"},
			{"get", oda, "components", "", "odacompns-a", "c", true, "RemoveFinalizers reads uid"},
			{"create", oda, "exposedapis", "", "odacompns-a", "", true, "ApplyChildren apply of a new child"},
			{"patch", oda, "exposedapis", "", "odacompns-a", "c-api", true, "ApplyChildren apply"},
			{"delete", oda, "identityconfigs", "", "components", "c", true, "ApplyChildren removes children"},
			{"patch", oda, "publishednotifications", "status", "components", "n", true, "initial notification status"},
			{"create", "", "events", "", "components", "", true, "recordEvent"},
			{"get", "", "secrets", "", "components", "c-secret", true, "IdentityConfig credentials"},
			{"create", "", "secrets", "", "components", "", true, "IdentityConfig credentials apply"},
			{"delete", "", "secrets", "", "components", "c-secret", true, "IdentityConfig deleted"},
			{"get", "", "secrets", "", "canvas", "keycloak-admin", true, "Keycloak admin login"},
			{"patch", "", "configmaps", "", "components", "cm", true, "AdoptWorkloads"},
			{"patch", "rbac.authorization.k8s.io", "rolebindings", "", "components", "rb", true, "AdoptWorkloads"},
			{"list", "", "pods", "", "components", "", true, "SecretsSidecars"},
			{"get", "apps", "replicasets", "", "components", "rs", true, "pod owner lookup"},
			{"patch", "apps", "deployments", "", "components", "d", true, "sidecar rollout"},
			{"create", "monitoring.coreos.com", "servicemonitors", "", "components", "", true, "metrics APIs"},
			{"patch", "", "pods", "", "components", "p", true, "PrometheusAnnotation: a metrics API's pods"},
			{"get", "", "services", "", "components", "s", true, "PrometheusAnnotation: the implementation's selector"},
			{"delete", "networking.istio.io", "virtualservices", "", "components", "v", true, "stale VirtualService under kong-admin"},
			{"create", "authentication.k8s.io", "tokenreviews", "", "", "", true, "vault.tokenReviewer"},
			// Never.
			{"list", "", "secrets", "", "", "", false, "no Secret is ever enumerated"},
			{"list", "", "secrets", "", "components", "", false, "no Secret is ever enumerated"},
			{"watch", "", "secrets", "", "", "", false, "no Secret is ever watched"},
			{"create", "networking.istio.io", "virtualservices", "", "components", "", false, "kong-admin writes no VirtualService"},
			{"create", oda, "components", "", "components", "", false, "components are the user's"},
			{"delete", oda, "components", "", "components", "c", false, "components are the user's"},
			{"list", oda, "components", "", "", "", false, "the watcher lists, not the worker"},
			{"update", oda, "exposedapis", "", "components", "c-api", false, "writes are patches"},
			{"delete", "", "namespaces", "", "", "components", false, "never"},
			{"create", "", "pods", "", "components", "", false, "never"},
			{"delete", "apps", "deployments", "", "components", "d", false, "rollouts patch, never delete"},
			{"escalate", "rbac.authorization.k8s.io", "clusterroles", "", "", "", false, "never"},
			{"bind", "rbac.authorization.k8s.io", "clusterroles", "", "", "cluster-admin", false, "never"},
			{"create", "coordination.k8s.io", "leases", "", "canvas", "", false, "only the watcher elects"},
		})
	})
	t.Run("worker-namespaced", func(t *testing.T) {
		checkAccess(t, c, "rbac-ns", "nsflow-odaflow-worker", []access{
			{"create", oda, "exposedapis", "", "components", "", true, "watched namespace"},
			{"create", "gateway.networking.k8s.io", "httproutes", "", "components", "", true, "kong"},
			{"create", "gateway.networking.k8s.io", "referencegrants", "", "istio-ingress", "", true, "kong ReferenceGrant in the backend namespace"},
			{"get", "", "secrets", "", "canvas", "keycloak-admin", true, "the one Keycloak admin Secret"},
			{"get", "", "secrets", "", "canvas", "other", false, "only the Keycloak Secret by name"},
			{"get", "", "secrets", "", "elsewhere", "x", false, "not a watched namespace"},
			{"create", oda, "exposedapis", "", "elsewhere", "", false, "not a watched namespace"},
			{"create", "gateway.networking.k8s.io", "referencegrants", "", "components", "", false, "ReferenceGrants only in the backend namespace"},
			{"create", "gateway.networking.k8s.io", "httproutes", "", "", "", false, "nothing cluster-wide"},
		})
	})
	t.Run("watcher", func(t *testing.T) {
		checkAccess(t, c, "canvas", "odaflow-watcher", []access{
			{"list", oda, "components", "", "", "", true, "informer, all namespaces"},
			{"watch", oda, "secretsmanagements", "", "", "", true, "informer"},
			{"watch", "discovery.k8s.io", "endpointslices", "", "", "", true, "implementation readiness"},
			{"list", "", "services", "", "", "", true, "ingress Service, adoption"},
			{"watch", "batch", "cronjobs", "", "", "", true, "adoption"},
			{"list", "", "secrets", "", "", "", true, "adoption's metadata-only informer (docs/rbac.md)"},
			{"create", "coordination.k8s.io", "leases", "", "canvas", "", true, "leader election"},
			{"update", "coordination.k8s.io", "leases", "", "canvas", "odaflow-watcher", true, "leader election"},
			// Never.
			{"update", "coordination.k8s.io", "leases", "", "canvas", "kube-scheduler", false, "only its own Lease"},
			{"update", "coordination.k8s.io", "leases", "", "kube-system", "odaflow-watcher", false, "Lease only in the release namespace"},
			{"get", "", "secrets", "", "components", "c-secret", false, "metadata lists only"},
			{"patch", oda, "components", "", "components", "c", false, "the watcher writes nothing"},
			{"create", "", "events", "", "components", "", false, "the watcher writes nothing"},
			{"delete", "", "namespaces", "", "", "components", false, "never"},
		})
	})
	t.Run("webhook", func(t *testing.T) {
		checkAccess(t, c, "canvas", "odaflow-webhook", []access{
			{"list", oda, "secretsmanagements", "", "components", "", true, "sidecar informer (--sidecar-namespace components)"},
			{"watch", oda, "secretsmanagements", "", "components", "", true, "sidecar informer"},
			{"list", oda, "secretsmanagements", "", "", "", false, "limited to its namespace"},
			{"get", "", "secrets", "", "components", "x", false, "never"},
			{"patch", "", "pods", "", "components", "p", false, "mutation is an admission response, not a write"},
		})
	})

	// The grants work as the code uses them: the worker server-side applies
	// the credentials Secret of an IdentityConfig (creating it), and deletes
	// it, but cannot list Secrets.
	t.Run("impersonated", func(t *testing.T) {
		cfg := rest.CopyConfig(k.RESTConfig)
		cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:canvas:odaflow-worker", Groups: []string{"system:serviceaccounts", "system:authenticated"}}
		w := kubernetes.NewForConfigOrDie(cfg)
		ctx := context.Background()
		body := []byte(`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"idc-secret","namespace":"components","labels":{"app.kubernetes.io/managed-by":"odaflow"}},"type":"Opaque","stringData":{"client_id":"idc"}}`)
		if _, err := w.CoreV1().Secrets("components").Patch(ctx, "idc-secret", types.ApplyPatchType, body, metav1.PatchOptions{FieldManager: "odaflow", Force: ptr(true)}); err != nil {
			t.Fatalf("worker applies a new credentials Secret: %v", err)
		}
		if err := w.CoreV1().Secrets("components").Delete(ctx, "idc-secret", metav1.DeleteOptions{}); err != nil {
			t.Fatalf("worker deletes the credentials Secret: %v", err)
		}
		if _, err := w.CoreV1().Secrets("components").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
			t.Fatalf("worker lists Secrets: err %v, want Forbidden", err)
		}
		ev := &corev1.Event{ObjectMeta: metav1.ObjectMeta{GenerateName: "c.", Namespace: "components"},
			InvolvedObject: corev1.ObjectReference{Kind: "Component", Namespace: "components", Name: "c"}, Reason: "Test", Type: "Normal"}
		if _, err := w.CoreV1().Events("components").Create(ctx, ev, metav1.CreateOptions{}); err != nil {
			t.Fatalf("worker records an Event: %v", err)
		}

		// The cluster scope's ClusterRole allows these; the admission
		// policy (rbac.admissionPolicy) refuses them. A new policy takes
		// effect within seconds, so the first refusal is waited for.
		denied := func(what string, call func() error) {
			t.Helper()
			var err error
			for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
				if err = call(); apierrors.IsForbidden(err) || apierrors.IsInvalid(err) {
					if !strings.Contains(err.Error(), "odaflow writes only") {
						t.Errorf("%s: refused, but not by odaflow's policy: %v", what, err)
					}
					return
				}
			}
			t.Errorf("%s: allowed (err %v), want the admission policy's refusal", what, err)
		}
		labelled := func(ns, name string) *corev1.Secret {
			return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"app.kubernetes.io/managed-by": "odaflow"}}}
		}
		denied("a Secret in kube-system", func() error {
			_, err := w.CoreV1().Secrets("kube-system").Create(ctx, labelled("kube-system", "odaflow-probe"), metav1.CreateOptions{})
			return err
		})
		denied("a Secret in a namespace odaflow does not watch", func() error {
			_, err := w.CoreV1().Secrets("elsewhere").Create(ctx, labelled("elsewhere", "odaflow-probe"), metav1.CreateOptions{})
			return err
		})
		team := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "teams-own", Namespace: "components"}, StringData: map[string]string{"k": "v"}}
		if _, err := c.core.CoreV1().Secrets("components").Create(ctx, team, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
		denied("overwriting a Secret odaflow did not create", func() error {
			body := []byte(`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"teams-own","namespace":"components","labels":{"app.kubernetes.io/managed-by":"odaflow"}},"stringData":{"k":"taken"}}`)
			_, err := w.CoreV1().Secrets("components").Patch(ctx, "teams-own", types.ApplyPatchType, body, metav1.PatchOptions{FieldManager: "odaflow", Force: ptr(true)})
			return err
		})
		denied("deleting a Secret odaflow did not create", func() error {
			return w.CoreV1().Secrets("components").Delete(ctx, "teams-own", metav1.DeleteOptions{})
		})
		if got, err := c.core.CoreV1().Secrets("components").Get(ctx, "teams-own", metav1.GetOptions{}); err != nil || string(got.Data["k"]) != "v" || len(got.Data) != 1 || len(got.Labels) != 0 {
			t.Errorf("the team's Secret was changed or deleted: %v %+v", err, got)
		}
		// A patch of an object that exists (a missing one is a 404 before
		// admission): the worker may patch ConfigMaps (AdoptWorkloads).
		probe := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "odaflow-probe", Namespace: "kube-system"}}
		if _, err := c.core.CoreV1().ConfigMaps("kube-system").Create(ctx, probe, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
		denied("a ConfigMap patch in kube-system", func() error {
			_, err := w.CoreV1().ConfigMaps("kube-system").Patch(ctx, "odaflow-probe", types.MergePatchType, []byte(`{"metadata":{"annotations":{"x":"y"}}}`), metav1.PatchOptions{})
			return err
		})
	})
}
