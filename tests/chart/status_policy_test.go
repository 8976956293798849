package chart

import (
	"context"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

// TestStatusAdmissionPolicy installs the chart (rbac.scope cluster, and
// namespaced) on the real apiserver and writes ODA resources as a tenant
// (a user with a Role in its namespace) and as odaflow's worker: the
// tenant's writes of status, of the status subresource and of odaflow's
// bookkeeping annotations are refused with the policy's message; its spec
// and the annotations users set to ask odaflow something are admitted, and
// so is every write of the worker's.
func TestStatusAdmissionPolicy(t *testing.T) {
	k := kube(t)
	c := clientsFor(t, k.RESTConfig)
	for _, tc := range []struct {
		scope, release, system, tenantNS string
	}{
		{"cluster", "sealflow", "sealflow-sys", "seal-tenant"},
		{"namespaced", "sealns", "sealns-sys", "sealns-tenant"},
	} {
		t.Run(tc.scope, func(t *testing.T) {
			ensureNamespaces(t, c, tc.system, tc.tenantNS, "istio-ingress")
			apply(t, c, render(t, tc.release, tc.system, "", "rbac.scope="+tc.scope, "watchNamespaces={"+tc.tenantNS+"}", "webhook.enabled=false"), false)
			tenant := tenantClient(t, k.RESTConfig, c, tc.tenantNS, "tenant-"+tc.scope)
			// The release name lacks the chart's: <release>-odaflow-worker.
			worker := impersonate(k.RESTConfig, "system:serviceaccount:"+tc.system+":"+tc.release+"-odaflow-worker")
			checkStatusPolicy(t, tenant, worker, tc.tenantNS)
		})
	}
}

func checkStatusPolicy(t *testing.T, tenant, worker dynamic.Interface, ns string) {
	ctx := context.Background()
	exposed := schema.GroupVersionResource{Group: "oda.tmforum.org", Version: "v1", Resource: "exposedapis"}
	notifications := schema.GroupVersionResource{Group: "oda.tmforum.org", Version: "v1", Resource: "publishednotifications"}
	api := func(name string, status map[string]any) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "oda.tmforum.org/v1", "kind": "ExposedAPI",
			"metadata": map[string]any{"name": name, "namespace": ns},
			"spec":     map[string]any{"name": "r1", "apiType": "openapi", "implementation": "r1-svc", "path": "/r1/tmf620", "port": int64(8080)},
		}}
		if status != nil {
			u.Object["status"] = status
		}
		return u
	}
	// The policy is seen by the apiserver a moment after it is created:
	// the first refusal is waited for.
	denied := func(what, message string, call func() error) {
		t.Helper()
		var err error
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
			if err = call(); apierrors.IsForbidden(err) || apierrors.IsInvalid(err) {
				if !strings.Contains(err.Error(), message) {
					t.Errorf("%s: refused, but not by the status policy: %v", what, err)
				}
				return
			}
		}
		t.Errorf("%s: admitted (err %v), want the status policy's refusal", what, err)
	}
	// New Roles reach the RBAC authorizer a moment after they are
	// written: a write refused by RBAC (not by the policy) is tried again.
	admitted := func(what string, call func() error) {
		t.Helper()
		err := call()
		for deadline := time.Now().Add(10 * time.Second); apierrors.IsForbidden(err) && !strings.Contains(err.Error(), "odaflow only") && time.Now().Before(deadline); {
			time.Sleep(200 * time.Millisecond)
			err = call()
		}
		if err != nil {
			t.Errorf("%s: %v, want it admitted", what, err)
		}
	}
	patch := func(cl dynamic.Interface, gvr schema.GroupVersionResource, name, body string, sub ...string) error {
		_, err := cl.Resource(gvr).Namespace(ns).Patch(ctx, name, types.MergePatchType, []byte(body), metav1.PatchOptions{}, sub...)
		return err
	}
	const statusOnly = "is written by odaflow only"
	const annotationsOnly = "are written by odaflow only"

	admitted("the tenant creates its ExposedAPI", func() error {
		_, err := tenant.Resource(exposed).Namespace(ns).Create(ctx, api("r1", nil), metav1.CreateOptions{})
		return err
	})
	denied("the tenant creates an ExposedAPI with a status", statusOnly, func() error {
		_, err := tenant.Resource(exposed).Namespace(ns).Create(ctx, api("forged", map[string]any{"apiStatus": map[string]any{"url": "http://169.254.169.254/"}}), metav1.CreateOptions{})
		return err
	})
	admitted("the worker writes status and its annotations", func() error {
		return patch(worker, exposed, "r1", `{"metadata":{"annotations":{"odaflow.oda.tmforum.org/status-fence":"1.5","odaflow.oda.tmforum.org/status-seal":"s","odaflow.oda.tmforum.org/observed-hash":"h"}},"status":{"apiStatus":{"url":"https://canvas.example/r1/tmf620"}}}`)
	})
	denied("the tenant writes status.apiStatus.url", statusOnly, func() error {
		return patch(tenant, exposed, "r1", `{"status":{"apiStatus":{"url":"http://169.254.169.254/latest/meta-data/iam/security-credentials/"}}}`)
	})
	denied("the tenant removes the status", statusOnly, func() error {
		return patch(tenant, exposed, "r1", `{"status":null}`)
	})
	denied("the tenant writes a maximal status-fence", annotationsOnly, func() error {
		return patch(tenant, exposed, "r1", `{"metadata":{"annotations":{"odaflow.oda.tmforum.org/status-fence":"9223372036854775807.9223372036854775807"}}}`)
	})
	denied("the tenant removes the status-seal", annotationsOnly, func() error {
		return patch(tenant, exposed, "r1", `{"metadata":{"annotations":{"odaflow.oda.tmforum.org/status-seal":null}}}`)
	})
	denied("the tenant writes the observed-hash", annotationsOnly, func() error {
		return patch(tenant, exposed, "r1", `{"metadata":{"annotations":{"odaflow.oda.tmforum.org/observed-hash":"x"}}}`)
	})
	admitted("the tenant changes the spec and sets the annotations users set", func() error {
		return patch(tenant, exposed, "r1", `{"metadata":{"annotations":{"odaflow.oda.tmforum.org/adopt":"true","odaflow.oda.tmforum.org/rotate-credentials":"1","team":"a"}},"spec":{"path":"/r1/tmf620v2"}}`)
	})
	got, err := worker.Resource(exposed).Namespace(ns).Get(ctx, "r1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if url, _, _ := unstructured.NestedString(got.Object, "status", "apiStatus", "url"); url != "https://canvas.example/r1/tmf620" {
		t.Errorf("status url %q after the refused writes, want the worker's", url)
	}
	if f := got.GetAnnotations()["odaflow.oda.tmforum.org/status-fence"]; f != "1.5" {
		t.Errorf("status-fence %q after the refused writes, want the worker's 1.5", f)
	}

	// The kinds with a status subresource: the worker's status write goes
	// in, the tenant's is refused.
	n := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "oda.tmforum.org/v1", "kind": "PublishedNotification",
		"metadata": map[string]any{"name": "n1", "namespace": ns}, "spec": map[string]any{},
	}}
	admitted("the tenant creates a PublishedNotification", func() error {
		_, err := tenant.Resource(notifications).Namespace(ns).Create(ctx, n, metav1.CreateOptions{})
		return err
	})
	admitted("the worker writes its status", func() error {
		return patch(worker, notifications, "n1", `{"status":{"uid":"x"}}`, "status")
	})
	denied("the tenant writes a status subresource", statusOnly, func() error {
		return patch(tenant, notifications, "n1", `{"status":{"uid":"forged"}}`, "status")
	})
}

func impersonate(cfg *rest.Config, user string) dynamic.Interface {
	c := rest.CopyConfig(cfg)
	c.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:serviceaccounts", "system:authenticated"}}
	return dynamic.NewForConfigOrDie(c)
}

// tenantClient is a user with a Role in its own namespace: every verb on
// the ODA kinds and their status subresources.
func tenantClient(t *testing.T, cfg *rest.Config, c clients, ns, user string) dynamic.Interface {
	t.Helper()
	ctx := context.Background()
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: user, Namespace: ns}, Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{"oda.tmforum.org"}, Resources: []string{"*", "*/status"}, Verbs: []string{"*"},
	}}}
	if _, err := c.core.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user, Namespace: ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: user},
		Subjects: []rbacv1.Subject{{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: user}}}
	if _, err := c.core.RbacV1().RoleBindings(ns).Create(ctx, rb, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	c2 := rest.CopyConfig(cfg)
	c2.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:authenticated"}}
	return dynamic.NewForConfigOrDie(c2)
}
