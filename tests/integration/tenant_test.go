package integration

import (
	"context"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/odaflow/odaflow/oda"
)

// tenantRole is what a Canvas gives a team in its own namespaces: every
// verb on the ODA kinds (status included: these CRDs have no status
// subresource, so a tenant who may update a resource may write its status),
// and on the workloads, Services, Secrets and Events a Component chart
// installs. It is a ClusterRole bound by RoleBindings, so it reaches only the
// namespaces it is bound in.
const tenantRole = "it-tenant"

// tenant is a team of the adversarial tests: a user with tenantRole in its
// own namespaces only, and clients that make every request as that user
// through the apiserver's impersonation (the stack's admin credentials
// impersonate it, so RBAC and admission judge the tenant, not the admin).
type tenant struct {
	User string
	Dyn  dynamic.Interface
	Core kubernetes.Interface
}

// newTenant creates namespaces (each with the stack's ingress and ready
// endpoints, see readyNamespace, when ready is set) and a user that may
// write only in them.
func newTenant(t *testing.T, user string, ready bool, namespaces ...string) tenant {
	t.Helper()
	ctx := context.Background()
	ensureTenantRole(t)
	for _, ns := range namespaces {
		if ready {
			readyNamespace(t, ns)
		} else {
			createNamespace(t, ns)
		}
		rb := &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: tenantRole, Namespace: ns},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: tenantRole},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: user}},
		}
		if _, err := stack.core.RbacV1().RoleBindings(ns).Create(ctx, rb, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("bind %s in %s: %v", user, ns, err)
		}
	}
	cfg := rest.CopyConfig(stack.kube.RESTConfig)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:authenticated"}}
	tn := tenant{User: user, Dyn: dynamic.NewForConfigOrDie(cfg), Core: kubernetes.NewForConfigOrDie(cfg)}
	// The authorizer sees a new RoleBinding a moment after it is stored:
	// wait until it does, so that a refused write in a test is the attack's
	// refusal, not the binding's delay.
	for _, ns := range namespaces {
		eventually(t, 30*time.Second, user+" may write in "+ns, func() (bool, string) {
			review, err := tn.Core.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
				Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
					Namespace: ns, Verb: "create", Group: oda.Group, Resource: oda.KindComponent.GVR().Resource,
				}},
			}, metav1.CreateOptions{})
			if err != nil {
				return false, err.Error()
			}
			return review.Status.Allowed, review.Status.Reason
		})
	}
	return tn
}

func ensureTenantRole(t *testing.T) {
	t.Helper()
	all := []string{rbacv1.VerbAll}
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: tenantRole},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{oda.Group}, Resources: []string{rbacv1.ResourceAll}, Verbs: all},
			{APIGroups: []string{""}, Resources: []string{"services", "secrets", "configmaps", "events", "pods", "serviceaccounts"}, Verbs: all},
			{APIGroups: []string{"apps"}, Resources: []string{"deployments", "statefulsets"}, Verbs: all},
			{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: all},
		},
	}
	if _, err := stack.core.RbacV1().ClusterRoles().Create(context.Background(), role, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create ClusterRole %s: %v", tenantRole, err)
	}
}

// Create makes obj as the tenant.
func (tn tenant) Create(t *testing.T, kind oda.Kind, obj *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	out, err := tn.Dyn.Resource(kind.GVR()).Namespace(obj.GetNamespace()).Create(context.Background(), obj, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("%s creates %s %s/%s: %v", tn.User, kind.Name, obj.GetNamespace(), obj.GetName(), err)
	}
	return out
}

// TestTenantCannotWriteOutsideItsNamespaces checks the harness itself: a
// tenant's request in a namespace it was not given is refused by RBAC, so a
// failed attack in the tests below is odaflow's doing, not the harness's.
func TestTenantCannotWriteOutsideItsNamespaces(t *testing.T) {
	a := newTenant(t, "it-harness-a", false, "it-harness-a")
	newTenant(t, "it-harness-b", false, "it-harness-b")
	obj := child(oda.KindExposedAPI, "it-harness-b", "probe", map[string]any{"name": "probe", "apiType": "openapi", "path": "/probe", "port": int64(8080), "implementation": "probe"})
	_, err := a.Dyn.Resource(oda.KindExposedAPI.GVR()).Namespace("it-harness-b").Create(context.Background(), obj, metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) {
		t.Fatalf("a tenant created in another team's namespace: %v", err)
	}
	if _, err := a.Dyn.Resource(oda.KindExposedAPI.GVR()).Namespace("it-harness-a").Create(context.Background(), obj.DeepCopy(), metav1.CreateOptions{}); err == nil {
		t.Fatal("the object kept the other namespace but was created")
	}
	obj.SetNamespace("it-harness-a")
	a.Create(t, oda.KindExposedAPI, obj)
}
