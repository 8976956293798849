package chart

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/odaflow/odaflow/internal/uninstallguard"
	"github.com/odaflow/odaflow/oda"
)

// guardObjects are the uninstall guard's rendered objects.
func guardObjects(objs []object) []object {
	var out []object
	for _, o := range objs {
		if str(o, "metadata", "labels", "app.kubernetes.io/component") == "uninstall-guard" {
			out = append(out, o)
		}
	}
	return out
}

// odaKindsListOnly: the guard's one rule, list on the seven ODA kinds.
func odaKindsListOnly(t *testing.T, role object) {
	t.Helper()
	var kinds []any
	for _, k := range oda.Kinds {
		kinds = append(kinds, k.Resource)
	}
	want := []any{map[string]any{"apiGroups": []any{oda.Group}, "resources": kinds, "verbs": []any{"list"}}}
	if got := role["rules"]; !reflect.DeepEqual(got, want) {
		t.Errorf("%s rules %v, want %v", role.id(), got, want)
	}
}

// TestTemplateUninstallGuard: by default a pre-delete hook Job runs
// `odaflow uninstall-check` on the watched namespaces, hardened as the
// Deployments are, under a ServiceAccount that may only list the ODA kinds
// (cluster-wide or per namespace, as rbac.scope says); disabled, none of it
// renders.
func TestTemplateUninstallGuard(t *testing.T) {
	objs := render(t, "odaflow", "canvas", "")
	job := find(t, objs, "Job", "odaflow-uninstall-guard")
	if got := str(job, "metadata", "annotations", "helm.sh/hook"); got != "pre-delete" {
		t.Errorf("Job hook %q, want pre-delete", got)
	}
	if got := str(job, "metadata", "annotations", "helm.sh/hook-delete-policy"); got != "before-hook-creation,hook-succeeded" {
		t.Errorf("Job hook-delete-policy %q: a failed Job must stay for its log and be replaced next time", got)
	}
	if get(job, "spec", "backoffLimit") != float64(0) {
		t.Errorf("Job backoffLimit %v, want 0", get(job, "spec", "backoffLimit"))
	}
	pod := mapOf(get(job, "spec", "template", "spec"))
	if pod["serviceAccountName"] != "odaflow-uninstall-guard" || pod["automountServiceAccountToken"] != true || pod["restartPolicy"] != "Never" {
		t.Errorf("Job pod spec %v", pod)
	}
	if psc := mapOf(pod["securityContext"]); psc["runAsNonRoot"] != true || str(psc, "seccompProfile", "type") != "RuntimeDefault" {
		t.Errorf("Job pod securityContext %v", psc)
	}
	c := container(t, job)
	args := argsOf(c)
	if !reflect.DeepEqual(args, []string{"uninstall-check"}) {
		t.Errorf("Job args %v, want [uninstall-check]", args)
	}
	u := usageOf(t, "uninstall-check")
	env := envOf(c)
	for name := range env {
		if !u.envs[name] {
			t.Errorf("Job env %s: odaflow uninstall-check reads no such variable", name)
		}
	}
	if env["ODAFLOW_NAMESPACES"] != "components,odacompns-*" {
		t.Errorf("Job checks namespaces %q, want the watched ones", env["ODAFLOW_NAMESPACES"])
	}
	sc := mapOf(c["securityContext"])
	if sc["runAsNonRoot"] != true || sc["readOnlyRootFilesystem"] != true || sc["allowPrivilegeEscalation"] != false ||
		!reflect.DeepEqual(get(sc, "capabilities", "drop"), []any{"ALL"}) {
		t.Errorf("Job container securityContext %v", sc)
	}
	if get(c, "resources", "limits", "memory") == nil {
		t.Errorf("Job container has no memory limit")
	}
	odaKindsListOnly(t, find(t, objs, "ClusterRole", "odaflow-uninstall-guard"))
	crb := find(t, objs, "ClusterRoleBinding", "odaflow-uninstall-guard")
	if got := str(get(crb, "subjects").([]any)[0], "name"); got != "odaflow-uninstall-guard" {
		t.Errorf("ClusterRoleBinding binds %q", got)
	}
	find(t, objs, "ServiceAccount", "odaflow-uninstall-guard")

	t.Run("namespaced", func(t *testing.T) {
		objs := guardObjects(render(t, "odaflow", "canvas", "", "rbac.scope=namespaced", "watchNamespaces={components,team-a}"))
		want := []string{
			"Job canvas/odaflow-uninstall-guard",
			"Role components/odaflow-uninstall-guard",
			"Role team-a/odaflow-uninstall-guard",
			"RoleBinding components/odaflow-uninstall-guard",
			"RoleBinding team-a/odaflow-uninstall-guard",
			"ServiceAccount canvas/odaflow-uninstall-guard",
		}
		if got := ids(objs, true); !reflect.DeepEqual(got, want) {
			t.Errorf("renders %v, want %v", got, want)
		}
		for _, r := range findAll(objs, "Role") {
			odaKindsListOnly(t, r)
		}
	})
	t.Run("disabled", func(t *testing.T) {
		if got := ids(guardObjects(render(t, "odaflow", "canvas", "", "uninstallGuard.enabled=false")), true); len(got) != 0 {
			t.Errorf("uninstallGuard.enabled=false still renders %v", got)
		}
	})
}

// TestUninstallGuard installs the guard's RBAC for real and runs the
// check as its ServiceAccount, on the namespaces its Job is given: with a
// Component in a watched namespace it refuses, naming it; with none it
// allows. Both RBAC scopes.
func TestUninstallGuard(t *testing.T) {
	k := kube(t)
	c := clientsFor(t, k.RESTConfig)
	ensureNamespaces(t, c, "guard-rel", "guard-a", "guard-b", "guard-unwatched")
	ctx := context.Background()
	for _, tc := range []struct {
		release string
		sets    []string
	}{
		{"guardc", []string{"watchNamespaces={guard-a,guard-b*}"}},
		{"guardn", []string{"rbac.scope=namespaced", "watchNamespaces={guard-a,guard-b}"}},
	} {
		t.Run(tc.release, func(t *testing.T) {
			objs := guardObjects(render(t, tc.release, "guard-rel", "", tc.sets...))
			job := find(t, objs, "Job", tc.release+"-odaflow-uninstall-guard")
			patterns := strings.Split(envOf(container(t, job))["ODAFLOW_NAMESPACES"], ",")
			apply(t, c, slices.DeleteFunc(objs, func(o object) bool { return o.kind() == "Job" }), false)
			sa := tc.release + "-odaflow-uninstall-guard"
			checkAccess(t, c, "guard-rel", sa, []access{
				{"list", oda.Group, "components", "", "guard-b", "", true, "the check lists"},
				{"list", oda.Group, "exposedapis", "", "guard-a", "", true, "the check lists every kind"},
				{"get", oda.Group, "components", "", "guard-a", "c", false, "list only"},
				{"delete", oda.Group, "components", "", "guard-a", "c", false, "the check deletes nothing"},
				{"list", "", "secrets", "", "guard-a", "", false, "the ODA kinds only"},
			})
			cfg := rest.CopyConfig(k.RESTConfig)
			cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:guard-rel:" + sa, Groups: []string{"system:serviceaccounts", "system:authenticated"}}
			asGuard := dynamic.NewForConfigOrDie(cfg)
			check := func() error {
				t.Helper()
				objs, err := uninstallguard.List(ctx, asGuard, patterns)
				if err != nil {
					t.Fatalf("the check, as %s: %v", sa, err)
				}
				return uninstallguard.Decide(objs)
			}

			// Not watched: no business of this release.
			createComponent(t, c, "guard-unwatched", "elsewhere")
			if err := check(); err != nil {
				t.Errorf("no ODA resource in the watched namespaces, yet refused: %v", err)
			}
			createComponent(t, c, "guard-b", "remaining")
			err := check()
			if err == nil || !strings.Contains(err.Error(), "1 Component in guard-b") || !strings.Contains(err.Error(), "kubectl delete components --all -A --wait") || !strings.Contains(err.Error(), uninstallguard.SkipValue) {
				t.Errorf("a Component remains: got %v, want the refusal naming it and the way out", err)
			}
			components := c.dyn.Resource(oda.KindComponent.GVR())
			for _, ns := range []string{"guard-b", "guard-unwatched"} {
				if err := components.Namespace(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			if err := check(); err != nil {
				t.Errorf("the Components deleted, yet refused: %v", err)
			}
		})
	}
}

// createComponent makes a v1 Component with no finalizer.
func createComponent(t *testing.T, c clients, ns, name string) {
	t.Helper()
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": oda.APIVersion, "kind": "Component",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec": map[string]any{"componentMetadata": map[string]any{
			"name": name, "version": "1.0.0", "functionalBlock": "CoreCommerce",
		}},
	}}
	if _, err := c.dyn.Resource(oda.KindComponent.GVR()).Namespace(ns).Create(context.Background(), u, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create Component %s/%s: %v", ns, name, err)
	}
}
