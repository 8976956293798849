package vault

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	"github.com/odaflow/odaflow/activities"
	"github.com/odaflow/odaflow/oda"
	"github.com/odaflow/odaflow/secrets"
	"github.com/odaflow/odaflow/webhook"
	"github.com/odaflow/odaflow/webhook/sidecar"
)

func podSpec(containers ...string) corev1.PodSpec {
	var cs []corev1.Container
	for _, c := range containers {
		cs = append(cs, corev1.Container{Name: c, Image: "example/app:1"})
	}
	return corev1.PodSpec{Containers: cs}
}

var sidecarLabels = map[string]string{secrets.LabelSecretsManagement: secrets.LabelSidecarValue}

// TestSidecarsCheckAndRestart: the pods a SecretsManagement selects are
// checked for the sidecar, and those without it are restarted through
// their Deployment (restartedAt), at a bounded rate; a bare pod is only
// reported. No Deployment controller runs here, so the objects are made by
// hand with the owner references the controllers would set.
func TestSidecarsCheckAndRestart(t *testing.T) {
	ctx := context.Background()
	const ns = "restart"
	ensureNamespace(t, ns)
	apps := env.core.AppsV1()
	dep, err := apps.Deployments(ns).Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "demo-a-api"},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "demo-a"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "demo-a", secrets.LabelSecretsManagement: "sidecar"}}, Spec: podSpec("app")},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rs, err := apps.ReplicaSets(ns).Create(ctx, &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "demo-a-api-57868f9d7c", OwnerReferences: []metav1.OwnerReference{{
			APIVersion: "apps/v1", Kind: "Deployment", Name: dep.Name, UID: dep.UID, Controller: ptr.To(true)}}},
		Spec: appsv1.ReplicaSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "demo-a"}},
			Template: dep.Spec.Template,
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mkPod := func(name string, owned bool, labels map[string]string, containers ...string) {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Spec: podSpec(containers...)}
		if owned {
			p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID, Controller: ptr.To(true)}}
		}
		if _, err := env.core.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	mkPod("demo-a-api-57868f9d7c-aaaaa", true, sidecarLabels, "app")                      // missing, restartable
	mkPod("demo-a-api-57868f9d7c-bbbbb", true, sidecarLabels, "app")                      // same Deployment
	mkPod("demo-a-api-57868f9d7c-ccccc", true, sidecarLabels, "app", secrets.SidecarName) // has it
	mkPod("demo-a-bare", false, sidecarLabels, "app")                                     // missing, bare
	mkPod("demo-b-api-x", true, sidecarLabels, "app")                                     // other selector
	mkPod("demo-a-unlabelled", true, map[string]string{"app": "demo-a"}, "app")           // not asking

	kube := activities.NewKube(env.dyn, env.core, env.log)
	in := activities.SecretsSidecarsInput{Namespace: ns, Name: "demo-a",
		Spec: secrets.Spec{Type: secrets.TypeSideCar, PodSelector: secrets.Selector{Name: "demo-a-*"}}, Restart: true, MaxRestarts: 5, MinInterval: 5 * time.Minute}
	res, err := kube.SecretsSidecars(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(res.Unmanaged)
	if res.Selected != 4 || res.Missing != 3 || fmt.Sprint(res.Restarted) != "[Deployment/demo-a-api]" || fmt.Sprint(res.Unmanaged) != "[demo-a-bare]" {
		t.Fatalf("result %+v", res)
	}
	got, _ := apps.Deployments(ns).Get(ctx, dep.Name, metav1.GetOptions{})
	at := got.Spec.Template.Annotations[activities.AnnotationRestartedAt]
	if _, err := time.Parse(time.RFC3339, at); err != nil {
		t.Fatalf("restartedAt = %q", at)
	}
	// Within the interval the rollout is left alone.
	res, err = kube.SecretsSidecars(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Restarted) != 0 || res.Missing != 3 {
		t.Errorf("second check restarted %v", res.Restarted)
	}
	// Check only: nothing restarted.
	in.Restart, in.MinInterval = false, 0
	if res, _ = kube.SecretsSidecars(ctx, in); len(res.Restarted) != 0 {
		t.Errorf("check-only restarted %v", res.Restarted)
	}
}

// TestWebhookThroughTheAPIServer registers the sidecar webhook with the
// real apiserver (failure policy Fail, scoped by selectors) and creates
// pods: a selected pod gets the sidecar, an unselected labelled pod is
// refused with the reason, an unlabelled pod is untouched; with the
// webhook down, labelled pods are refused and unlabelled ones still start.
func TestWebhookThroughTheAPIServer(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const ns = "webhooked"
	ensureNamespace(t, ns)

	lister := sidecar.NewInformerLister(env.dyn, "", 0)
	lister.Start(ctx)
	if !lister.WaitForSync(ctx) {
		t.Fatal("informer did not sync")
	}
	certPEM, keyPEM, caPEM, err := webhook.SelfSigned(nil, []net.IP{net.ParseIP("127.0.0.1")})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := webhook.New(webhook.Config{
		Address: "127.0.0.1:0", CertPEM: certPEM, KeyPEM: keyPEM, Logger: env.log,
		MutatePod: sidecar.NewHandler(lister, secrets.SidecarConfig{VaultAddr: env.vaultAddr, AuthPath: env.cfg.AuthPath}, env.log),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			_ = srv.Shutdown(context.Background())
		}
	}()
	url := "https://" + srv.Addr().String() + webhook.PathMutatePod
	whc := Configuration(admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: caPEM}, []string{"kube-system"})
	regs := env.core.AdmissionregistrationV1().MutatingWebhookConfigurations()
	if _, err := regs.Create(ctx, whc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = regs.Delete(context.Background(), whc.Name, metav1.DeleteOptions{}) }()

	// The SecretsManagement, as the Component operator creates it.
	sm := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": oda.APIVersion, "kind": oda.KindSecretsManagement.Name,
		"metadata": map[string]any{"name": "demo-a", "namespace": ns},
		"spec":     map[string]any{"type": "sideCar", "sideCar": map[string]any{"port": int64(5000)}, "podSelector": map[string]any{"namespace": ns, "name": "demo-a-*", "serviceaccount": "default"}},
	}}
	if _, err := env.dyn.Resource(oda.KindSecretsManagement.GVR()).Namespace(ns).Create(ctx, sm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, ok := lister.Get(ns, "demo-a"); ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the SecretsManagement never reached the webhook's cache")
		}
		time.Sleep(20 * time.Millisecond)
	}

	pods := env.core.CoreV1().Pods(ns)
	create := func(generateName string, labels map[string]string) (*corev1.Pod, time.Duration, error) {
		start := time.Now()
		p, err := pods.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{GenerateName: generateName, Labels: labels}, Spec: podSpec("app")}, metav1.CreateOptions{})
		return p, time.Since(start), err
	}
	// The apiserver may need a moment to pick the configuration up.
	var p *corev1.Pod
	var d time.Duration
	for i := 0; ; i++ {
		p, d, err = create("demo-a-api-", sidecarLabels)
		if err != nil {
			t.Fatal(err)
		}
		if secrets.PodInfoOf(p).HasSidecar() || i > 50 {
			break
		}
		_ = pods.Delete(ctx, p.Name, metav1.DeleteOptions{})
		time.Sleep(100 * time.Millisecond)
	}
	if !secrets.PodInfoOf(p).HasSidecar() {
		t.Fatalf("no sidecar injected: containers %v", secrets.PodInfoOf(p).Containers)
	}
	var env0 []string
	for _, e := range p.Spec.Containers[1].Env {
		env0 = append(env0, e.Name+"="+e.Value)
	}
	if want := "LOGIN_ROLE=sman-webhooked.demo-a-role"; !strings.Contains(strings.Join(env0, " "), want) {
		t.Errorf("sidecar env %v lacks %s", env0, want)
	}
	var sum time.Duration
	const n = 20
	for range n {
		_, d, err := create("demo-a-api-", sidecarLabels)
		if err != nil {
			t.Fatal(err)
		}
		sum += d
	}
	var plain time.Duration
	for range n {
		_, d, err := create("plain-", nil)
		if err != nil {
			t.Fatal(err)
		}
		plain += d
	}
	t.Logf("FIGURE pod create through the apiserver: with sidecar injection first %s, mean of %d %s; unlabelled (webhook not called) mean %s",
		d.Round(time.Microsecond), n, (sum / n).Round(time.Microsecond), (plain / n).Round(time.Microsecond))

	if _, _, err := create("demo-z-api-", sidecarLabels); err == nil || !strings.Contains(err.Error(), "no SecretsManagement in namespace webhooked selects it") {
		t.Errorf("unselected labelled pod: err %v", err)
	}
	if p, _, err := create("other-", nil); err != nil || secrets.PodInfoOf(p).HasSidecar() {
		t.Errorf("unlabelled pod: err %v", err)
	}

	// Webhook down: Fail for labelled pods only.
	if err := srv.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	stopped = true
	_, _, err = create("demo-a-api-", sidecarLabels)
	if err == nil {
		t.Error("a labelled pod was admitted without its sidecar while the webhook was down")
	} else {
		t.Logf("webhook down, labelled pod refused: %v", firstLine(err.Error()))
	}
	if _, _, err := create("other-", nil); err != nil {
		t.Errorf("webhook down blocked an unrelated pod: %v", err)
	}
}

func firstLine(s string) string {
	if i := bytes.IndexByte([]byte(s), '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// TestWebhookReadyWaitsForTheCache: /readyz fails while a ready check (the
// SecretsManagement cache) fails, so the Service sends no admission to a
// webhook that would answer 503.
func TestWebhookReadyWaitsForTheCache(t *testing.T) {
	certPEM, keyPEM, caPEM, err := webhook.SelfSigned(nil, []net.IP{net.ParseIP("127.0.0.1")})
	if err != nil {
		t.Fatal(err)
	}
	var synced atomic.Bool
	srv, err := webhook.New(webhook.Config{
		Address: "127.0.0.1:0", CertPEM: certPEM, KeyPEM: keyPEM,
		MutatePod: sidecar.NewHandler(noSecretsManagement{}, secrets.SidecarConfig{}, nil),
		ReadyChecks: []func() error{func() error {
			if !synced.Load() {
				return fmt.Errorf("SecretsManagement cache not synced")
			}
			return nil
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = srv.Shutdown(context.Background()) }()
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	get := func() int {
		resp, err := client.Get("https://" + srv.Addr().String() + webhook.PathReadyz)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := get(); code != 503 {
		t.Errorf("readyz before sync = %d, want 503", code)
	}
	synced.Store(true)
	if code := get(); code != 200 {
		t.Errorf("readyz after sync = %d, want 200", code)
	}
}

// Configuration is the MutatingWebhookConfiguration of the sidecar webhook
// (the chart renders the same): pods on CREATE, failure policy Fail,
// scoped by the objectSelector to pods labelled for the sidecar and by the
// namespaceSelector away from excludeNamespaces (kube-system and odaflow's
// own namespace, at least).
func Configuration(client admissionregistrationv1.WebhookClientConfig, excludeNamespaces []string) *admissionregistrationv1.MutatingWebhookConfiguration {
	fail := admissionregistrationv1.Fail
	none := admissionregistrationv1.SideEffectClassNone
	equivalent := admissionregistrationv1.Equivalent
	// IfNeeded: when another webhook (Istio's) adds containers after ours,
	// ours runs again; the patch is empty once the sidecar is there.
	reinvoke := admissionregistrationv1.IfNeededReinvocationPolicy
	wh := admissionregistrationv1.MutatingWebhook{
		Name:                    sidecar.WebhookName,
		ClientConfig:            client,
		AdmissionReviewVersions: []string{"v1"},
		SideEffects:             &none,
		FailurePolicy:           &fail,
		MatchPolicy:             &equivalent,
		ReinvocationPolicy:      &reinvoke,
		TimeoutSeconds:          ptr.To(int32(5)),
		Rules: []admissionregistrationv1.RuleWithOperations{{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
			Rule: admissionregistrationv1.Rule{
				APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"},
				Scope: ptr.To(admissionregistrationv1.NamespacedScope),
			},
		}},
		ObjectSelector: &metav1.LabelSelector{MatchLabels: map[string]string{secrets.LabelSecretsManagement: secrets.LabelSidecarValue}},
	}
	if len(excludeNamespaces) > 0 {
		wh.NamespaceSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
			Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpNotIn, Values: excludeNamespaces,
		}}}
	}
	return &admissionregistrationv1.MutatingWebhookConfiguration{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "MutatingWebhookConfiguration"},
		ObjectMeta: metav1.ObjectMeta{Name: sidecar.ConfigurationName},
		Webhooks:   []admissionregistrationv1.MutatingWebhook{wh},
	}
}

func TestConfiguration(t *testing.T) {
	url := "https://127.0.0.1:9443" + sidecar.Path
	c := Configuration(admissionregistrationv1.WebhookClientConfig{URL: &url}, []string{"kube-system", "odaflow"})
	wh := c.Webhooks[0]
	if *wh.FailurePolicy != "Fail" || *wh.SideEffects != "None" || *wh.TimeoutSeconds != 5 {
		t.Errorf("policy %s side effects %s timeout %d", *wh.FailurePolicy, *wh.SideEffects, *wh.TimeoutSeconds)
	}
	if wh.ObjectSelector.MatchLabels[secrets.LabelSecretsManagement] != "sidecar" {
		t.Errorf("object selector %+v", wh.ObjectSelector)
	}
	if e := wh.NamespaceSelector.MatchExpressions[0]; e.Operator != "NotIn" || strings.Join(e.Values, ",") != "kube-system,odaflow" {
		t.Errorf("namespace selector %+v", e)
	}
	if r := wh.Rules[0]; r.Operations[0] != "CREATE" || r.Resources[0] != "pods" {
		t.Errorf("rules %+v", r)
	}
}

// noSecretsManagement is a sidecar.Lister that knows no SecretsManagement.
type noSecretsManagement struct{}

func (noSecretsManagement) Get(string, string) (sidecar.Entry, bool) { return sidecar.Entry{}, false }
func (noSecretsManagement) List(string) []sidecar.Entry              { return nil }
func (noSecretsManagement) HasSynced() bool                          { return true }
