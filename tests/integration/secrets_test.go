package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	vaultapi "github.com/hashicorp/vault/api"
	enumspb "go.temporal.io/api/enums/v1"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	"github.com/odaflow/odaflow/activities"
	"github.com/odaflow/odaflow/oda"
	"github.com/odaflow/odaflow/secrets"
	"github.com/odaflow/odaflow/tests/fixtures"
	"github.com/odaflow/odaflow/workflows"
)

// smState is what a SecretsManagement's status says: implementation.ready
// and its Ready condition's reason and message.
type smState struct {
	ready           bool
	reason, message string
}

func (s smState) String() string {
	return fmt.Sprintf("ready=%v reason=%s message=%q", s.ready, s.reason, s.message)
}

func secretsState(u *unstructured.Unstructured) smState {
	var s smState
	s.ready, _, _ = unstructured.NestedBool(u.Object, "status", "implementation", "ready")
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == "Ready" {
			s.reason, _ = m["reason"].(string)
			s.message, _ = m["message"].(string)
		}
	}
	return s
}

// waitSecrets waits until the SecretsManagement's status satisfies ok.
func waitSecrets(t *testing.T, ns, name, what string, timeout time.Duration, ok func(smState) bool) smState {
	t.Helper()
	var st smState
	eventually(t, timeout, "SecretsManagement "+ns+"/"+name+": "+what, func() (bool, string) {
		u, err := get(oda.KindSecretsManagement, ns, name)
		if err != nil {
			return false, err.Error()
		}
		st = secretsState(u)
		return ok(st), st.String()
	})
	return st
}

// waitVaultStore waits until the store's mount, policy and role all exist
// in Vault (want) or are all gone.
func waitVaultStore(t *testing.T, names secrets.Names, want bool, timeout time.Duration) {
	t.Helper()
	eventually(t, timeout, fmt.Sprintf("Vault store %s present=%v", names.Mount, want), func() (bool, string) {
		m, p, r, err := vaultStore(context.Background(), names.Mount, names.Policy, names.Role)
		if err != nil {
			return false, err.Error()
		}
		return m == want && p == want && r == want, fmt.Sprintf("mount %v, policy %v, role %v", m, p, r)
	})
}

// sidecarWorkload is a Deployment with its ReplicaSet, made by hand with
// the owner references the Deployment controller would set (this stack
// runs no Deployment controller, kubelet or scheduler).
type sidecarWorkload struct {
	ns         string
	deployment *appsv1.Deployment
	rs         *appsv1.ReplicaSet
}

func newSidecarWorkload(t *testing.T, ns, component string) *sidecarWorkload {
	t.Helper()
	ctx := context.Background()
	labels := map[string]string{"app": component + "-prodcatapi", secrets.LabelSecretsManagement: secrets.LabelSidecarValue, secrets.LabelComponentName: component}
	tmpl := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "example/prodcatapi:1"}}}}
	apps := stack.core.AppsV1().Deployments(ns)
	dep, err := apps.Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: component + "-prodcatapi"},
		Spec:       appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": labels["app"]}}, Template: tmpl},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rs, err := stack.core.AppsV1().ReplicaSets(ns).Create(ctx, &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: dep.Name + "-57868f9d7c", OwnerReferences: []metav1.OwnerReference{{
			APIVersion: "apps/v1", Kind: "Deployment", Name: dep.Name, UID: dep.UID, Controller: ptr.To(true)}}},
		Spec: appsv1.ReplicaSetSpec{Selector: dep.Spec.Selector, Template: tmpl},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return &sidecarWorkload{ns: ns, deployment: dep, rs: rs}
}

// runPod creates a pod of the workload, with the sidecar container in its
// spec or not (the webhook that injects it is not part of this stack), and
// marks it Running and Ready through the status subresource, as a kubelet
// would.
func (w *sidecarWorkload) runPod(t *testing.T, suffix string, withSidecar bool) *corev1.Pod {
	t.Helper()
	ctx := context.Background()
	spec := *w.rs.Spec.Template.Spec.DeepCopy()
	spec.ServiceAccountName = "default"
	if withSidecar {
		spec.Containers = append(spec.Containers, corev1.Container{Name: secrets.SidecarName, Image: secrets.DefaultSidecarImage})
	}
	pods := stack.core.CoreV1().Pods(w.ns)
	pod, err := pods.Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: w.rs.Name + "-" + suffix, Labels: w.rs.Spec.Template.Labels, OwnerReferences: []metav1.OwnerReference{{
			APIVersion: "apps/v1", Kind: "ReplicaSet", Name: w.rs.Name, UID: w.rs.UID, Controller: ptr.To(true)}}},
		Spec: spec,
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	now := metav1.Now()
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, StartTime: &now, Conditions: []corev1.PodCondition{
		{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
		{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
	}}
	for _, c := range spec.Containers {
		pod.Status.ContainerStatuses = append(pod.Status.ContainerStatuses, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, Ready: true, Started: ptr.To(true), State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}})
	}
	if pod, err = pods.UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	return pod
}

// ensureServiceAccount creates ns/name (no service-account controller runs
// in this stack).
func ensureServiceAccount(t *testing.T, ns, name string) {
	t.Helper()
	_, err := stack.core.CoreV1().ServiceAccounts(ns).Create(context.Background(), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// withSecretsManagement adds spec.securityFunction.secretsManagement: the
// sidecar for the component's own pods running as the default account.
func withSecretsManagement(u *unstructured.Unstructured, port int) *unstructured.Unstructured {
	_ = unstructured.SetNestedField(u.Object, map[string]any{
		"type":        secrets.TypeSideCar,
		"sideCar":     map[string]any{"port": int64(port)},
		"podSelector": map[string]any{"namespace": u.GetNamespace(), "name": u.GetName() + "-*", "serviceaccount": "default"},
	}, "spec", "securityFunction", "secretsManagement")
	return u
}

// sidecarLogin logs in to Vault as the sidecar of a pod running as ns/sa
// does: a service-account token from the apiserver's TokenRequest API,
// verified by Vault through TokenReview against the test apiserver. It
// writes and reads back a secret in the store with the token it gets, and
// returns the secrets it handled (for the history scan).
func sidecarLogin(t *testing.T, ns, sa string, names secrets.Names) (jwt, vaultToken string) {
	t.Helper()
	ctx := context.Background()
	tr, err := stack.core.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(600))},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := vaultapi.DefaultConfig()
	cfg.Address = stack.vault.Address
	cfg.MaxRetries = 0
	c, err := vaultapi.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c.ClearToken()
	sec, err := c.Logical().WriteWithContext(ctx, "auth/"+activities.DefaultVaultAuthPath+"/login", map[string]any{"role": names.Role, "jwt": tr.Status.Token})
	if err != nil {
		t.Fatalf("sidecar login with role %s: %v", names.Role, err)
	}
	c.SetToken(sec.Auth.ClientToken)
	path := names.Mount + "/data/" + secrets.BasePath + "/db-password"
	if _, err := c.Logical().WriteWithContext(ctx, path, map[string]any{"data": map[string]any{"value": "it-sidecar-value"}}); err != nil {
		t.Fatalf("sidecar write %s: %v", path, err)
	}
	got, err := c.Logical().ReadWithContext(ctx, path)
	if err != nil || got == nil {
		t.Fatalf("sidecar read %s: %v", path, err)
	}
	return tr.Status.Token, sec.Auth.ClientToken
}

// TestSecretsManagementOnRealServers: a Component with
// securityFunction.secretsManagement, on the real apiserver, Temporal and
// Vault. Its SecretsManagement gets a kv-v2 mount, a policy and a login
// role in Vault; it waits (WaitingForSidecars) while a selected pod runs
// without the sidecar, rolls that pod's Deployment, and is ready once the
// rolled pod runs it; the Component reaches Complete. With Vault gone the
// status says VaultUnavailable; Vault back, empty, the workflow re-creates
// the store. Deleting the Component removes the store and releases the
// finalizer.
func TestSecretsManagementOnRealServers(t *testing.T) {
	requireVault(t)
	ctx := context.Background()
	ns := "it-secrets"
	name := "sec-productcatalogmanagement"
	names := secrets.NamesFor(ns, name)
	smID := oda.WorkflowID(oda.KindSecretsManagement.Name, ns, name)
	compID := oda.WorkflowID(oda.KindComponent.Name, ns, name)
	readyNamespace(t, ns)
	ensureServiceAccount(t, ns, "default")

	// A pod that was running before the component asked for secrets: it
	// has no sidecar.
	wl := newSidecarWorkload(t, ns, name)
	old := wl.runPod(t, "aaaaa", false)

	start := time.Now()
	create(t, oda.KindComponent, withSecretsManagement(fixtures.WithOwnPaths(fixtures.WithoutDependentAPIs(fixtures.ProductCatalog(ns, name))), 5000))
	waitVaultStore(t, names, true, 60*time.Second)
	t.Logf("create → Vault store configured: %s", time.Since(start).Round(time.Millisecond))
	policy, err := stack.vaultRoot.Sys().GetPolicyWithContext(ctx, names.Policy)
	if err != nil || !strings.Contains(policy, names.Mount+"/data/"+secrets.BasePath+"/*") {
		t.Fatalf("policy %s = %q (%v), want access to %s/data/%s/*", names.Policy, policy, err, names.Mount, secrets.BasePath)
	}
	role, err := stack.vaultRoot.Logical().ReadWithContext(ctx, "auth/"+activities.DefaultVaultAuthPath+"/role/"+names.Role)
	if err != nil || role == nil || fmt.Sprint(role.Data["bound_service_account_namespaces"]) != "["+ns+"]" || fmt.Sprint(role.Data["token_policies"]) != "["+names.Policy+"]" {
		t.Fatalf("role %s = %v (%v)", names.Role, role, err)
	}

	// Not ready while the selected pod lacks the sidecar; its Deployment
	// is rolled, and the Component waits at the secrets step.
	st := waitSecrets(t, ns, name, "WaitingForSidecars", 60*time.Second, func(s smState) bool {
		return s.reason == workflows.PhaseWaitingForSidecars && !s.ready
	})
	// The message names the pod; it names the Deployment only in the check
	// that rolled it (a re-check 15 s later may already have replaced it),
	// so the rollout itself is checked on the Deployment below.
	if !strings.Contains(st.message, old.Name) {
		t.Errorf("waiting message %q: want the pod %s named", st.message, old.Name)
	}
	waitPhase(t, ns, name, oda.StatusSecretMan, 60*time.Second)
	dep, err := stack.core.AppsV1().Deployments(ns).Get(ctx, wl.deployment.Name, metav1.GetOptions{})
	if err != nil || dep.Spec.Template.Annotations[activities.AnnotationRestartedAt] == "" {
		t.Fatalf("Deployment %s not rolled: annotations %v (%v)", wl.deployment.Name, dep.Spec.Template.Annotations, err)
	}

	// The rollout, simulated: the old pod goes, a new one runs with the
	// sidecar the webhook would have injected.
	if err := stack.core.CoreV1().Pods(ns).Delete(ctx, old.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To(int64(0))}); err != nil {
		t.Fatal(err)
	}
	wl.runPod(t, "bbbbb", true)
	// The workflow re-checks pods on a timer (15 s, then 30 s): pods send it no events.
	waitSecrets(t, ns, name, "ready", 90*time.Second, func(s smState) bool { return s.ready && s.reason == workflows.PhaseSecretsReady })
	done := waitPhase(t, ns, name, oda.StatusComplete, 60*time.Second)
	if ready, _, _ := unstructured.NestedBool(done.Object, "status", "securitySecretsManagement", "ready"); !ready {
		t.Errorf("Component status.securitySecretsManagement = %v, want ready", done.Object["status"].(map[string]any)["securitySecretsManagement"])
	}
	t.Logf("create → Complete (with one rollout): %s", time.Since(start).Round(time.Millisecond))
	// What the sidecar does works: log in with the pod's service-account
	// token (TokenReview by the real apiserver) and use the store.
	jwt, sidecarToken := sidecarLogin(t, ns, "default", names)

	// Vault goes away; a spec change makes the workflow call it.
	if err := stack.vault.Kill(); err != nil {
		t.Fatal(err)
	}
	vaultKilled := true
	t.Cleanup(func() {
		if vaultKilled {
			_ = stack.vault.Start(context.Background())
		}
	})
	updateComponent(t, ns, name, func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(u.Object, int64(5001), "spec", "securityFunction", "secretsManagement", "sideCar", "port")
	})
	st = waitSecrets(t, ns, name, "VaultUnavailable", 90*time.Second, func(s smState) bool { return s.reason == "VaultUnavailable" && !s.ready })
	t.Logf("Vault down: %s", st.message)
	waitPhase(t, ns, name, oda.StatusSecretMan, 60*time.Second)
	if !containsAny(eventsFor(t, ns, name), "VaultUnavailable") {
		t.Errorf("no VaultUnavailable Event on %s/%s: %v", ns, name, eventsFor(t, ns, name))
	}

	// Vault back, empty (a dev server keeps nothing): after its backoff the
	// workflow configures everything again, the auth method included.
	if err := stack.vault.Start(ctx); err != nil {
		t.Fatal(err)
	}
	vaultKilled = false
	recovered := time.Now()
	waitVaultStore(t, names, true, 3*time.Minute)
	waitSecrets(t, ns, name, "ready again", 60*time.Second, func(s smState) bool { return s.ready && s.reason == workflows.PhaseSecretsReady })
	waitPhase(t, ns, name, oda.StatusComplete, 60*time.Second)
	t.Logf("Vault back → ready again: %s", time.Since(recovered).Round(time.Millisecond))
	jwt2, sidecarToken2 := sidecarLogin(t, ns, "default", names)

	assertSecretsAbsent(t, map[string]string{
		"Vault root token": stack.vault.RootToken(), "service-account token": jwt, "sidecar's Vault token": sidecarToken,
		"second service-account token": jwt2, "second sidecar Vault token": sidecarToken2,
	}, smID, compID)

	// Uninstall: the store goes from Vault, then the finalizer, then the
	// SecretsManagement.
	deleteComponent(t, ns, name)
	waitVaultStore(t, names, false, 60*time.Second)
	eventually(t, 60*time.Second, "SecretsManagement released and deleted", func() (bool, string) {
		_, err := get(oda.KindSecretsManagement, ns, name)
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
	eventually(t, 30*time.Second, "SecretsManagement workflow closed", func() (bool, string) {
		st, err := workflowStatus(smID)
		return err == nil && st == enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED, fmt.Sprint(st, err)
	})
	recordHistory(t, smID, "secretsmanagement-lifecycle.json")
}
