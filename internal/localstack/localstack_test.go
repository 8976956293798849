package localstack

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

const testCRD = `# a tiny CRD for the localstack test
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.localstack.odaflow.io
spec:
  group: localstack.odaflow.io
  names:
    kind: Widget
    listKind: WidgetList
    plural: widgets
    singular: widget
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            x-kubernetes-preserve-unknown-fields: true
`

var widgetGVR = schema.GroupVersionResource{Group: "localstack.odaflow.io", Version: "v1", Resource: "widgets"}

// toolsOrSkip finds the built servers. Missing ones fail the test unless
// ODAFLOW_SKIP_INTEGRATION asks for a skip (never under CI).
func toolsOrSkip(t *testing.T) string {
	t.Helper()
	dir, err := LookupTools()
	if err != nil {
		if os.Getenv("CI") != "" || os.Getenv("ODAFLOW_SKIP_INTEGRATION") == "" {
			t.Fatalf("the local servers are missing (run make test or hack/tools.sh): %v", err)
		}
		t.Skipf("skipping: local servers not built (run hack/tools.sh, or set ODAFLOW_TOOLS_DIR): %v", err)
	}
	return dir
}

// syncBuffer collects process output; it is printed when a test fails.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) tail(n int) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.b.Bytes()
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

func logsOnFailure(t *testing.T) *syncBuffer {
	buf := &syncBuffer{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("process output (tail):\n%s", buf.tail(20000))
		}
	})
	return buf
}

// eventually polls cond every 100 ms until it holds or timeout passes.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() (bool, error)) time.Duration {
	t.Helper()
	start := time.Now()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(timeout)
	var last error
	for {
		ok, err := cond()
		if ok {
			return time.Since(start)
		}
		last = err
		select {
		case <-deadline:
			t.Fatalf("%s: not done after %s (last error: %v)", what, timeout, last)
		case <-tick.C:
		}
	}
}

func processGone(pid int) bool {
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

func TestLocalStack(t *testing.T) {
	tools := toolsOrSkip(t)
	logs := logsOnFailure(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	opts := Options{ToolsDir: tools, Logs: logs}

	start := time.Now()
	kube, err := StartKube(ctx, opts)
	if err != nil {
		t.Fatalf("StartKube: %v", err)
	}
	t.Logf("kube ready in %s (%s)", time.Since(start).Round(time.Millisecond), kube.Host)
	kubeStopped := false
	t.Cleanup(func() {
		if !kubeStopped {
			_ = kube.Stop()
		}
	})
	if kube.RESTConfig.Insecure || len(kube.RESTConfig.CAData) == 0 {
		t.Errorf("rest.Config does not verify the serving certificate (Insecure=%v)", kube.RESTConfig.Insecure)
	}

	// The kubeconfig works on its own.
	kcfg, err := clientcmd.BuildConfigFromFlags("", kube.KubeconfigPath)
	if err != nil {
		t.Fatalf("kubeconfig: %v", err)
	}
	kcs := kubernetes.NewForConfigOrDie(kcfg)
	if v, err := kcs.Discovery().ServerVersion(); err != nil {
		t.Fatalf("server version through the kubeconfig: %v", err)
	} else {
		t.Logf("kube-apiserver %s", v.GitVersion)
	}

	// CRDs.
	crdDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(crdDir, "widget.yaml"), []byte("---\n"+testCRD+"---\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	if err := InstallCRDs(ctx, kube.RESTConfig, crdDir); err != nil {
		t.Fatalf("InstallCRDs: %v", err)
	}
	t.Logf("CRD established in %s", time.Since(start).Round(time.Millisecond))
	// Applying again is a no-op.
	if err := InstallCRDs(ctx, kube.RESTConfig, crdDir); err != nil {
		t.Fatalf("InstallCRDs again: %v", err)
	}

	cs := kubernetes.NewForConfigOrDie(kube.RESTConfig)
	dyn := dynamic.NewForConfigOrDie(kube.RESTConfig)

	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "localstack-test"}}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	widget := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "localstack.odaflow.io/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "w1"},
		"spec":     map[string]any{"size": int64(3)},
	}}
	if _, err := dyn.Resource(widgetGVR).Namespace(ns.Name).Create(ctx, widget, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create a Widget: %v", err)
	}

	// Owner-reference garbage collection (kube-controller-manager).
	cms := cs.CoreV1().ConfigMaps(ns.Name)
	owner, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create owner: %v", err)
	}
	_, err = cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Name: "dependent",
		OwnerReferences: []metav1.OwnerReference{{
			APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID,
		}},
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create dependent: %v", err)
	}
	bg := metav1.DeletePropagationBackground
	if err := cms.Delete(ctx, owner.Name, metav1.DeleteOptions{PropagationPolicy: &bg}); err != nil {
		t.Fatalf("delete owner: %v", err)
	}
	took := eventually(t, 90*time.Second, "garbage collection of the dependent ConfigMap", func() (bool, error) {
		_, err := cms.Get(ctx, "dependent", metav1.GetOptions{})
		return apierrors.IsNotFound(err), err
	})
	t.Logf("dependent collected %s after its owner's deletion", took.Round(time.Millisecond))

	// Namespace deletion completes (namespace controller).
	if err := cs.CoreV1().Namespaces().Delete(ctx, ns.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete namespace: %v", err)
	}
	took = eventually(t, 90*time.Second, "namespace deletion", func() (bool, error) {
		_, err := cs.CoreV1().Namespaces().Get(ctx, ns.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), err
	})
	t.Logf("namespace deleted in %s", took.Round(time.Millisecond))

	// The apiserver restarts alone on the same port.
	if err := kube.StopAPIServer(); err != nil {
		t.Fatalf("StopAPIServer: %v", err)
	}
	if _, err := cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{}); err == nil {
		t.Fatalf("apiserver still answers after StopAPIServer")
	}
	start = time.Now()
	if err := kube.StartAPIServer(ctx); err != nil {
		t.Fatalf("StartAPIServer: %v", err)
	}
	t.Logf("kube-apiserver restarted in %s", time.Since(start).Round(time.Millisecond))
	if _, err := dyn.Resource(widgetGVR).List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatalf("list Widgets after the apiserver restart: %v", err)
	}

	// Temporal.
	start = time.Now()
	tmp, err := StartTemporal(ctx, opts)
	if err != nil {
		t.Fatalf("StartTemporal: %v", err)
	}
	t.Logf("temporal ready in %s (%s, UI %s)", time.Since(start).Round(time.Millisecond), tmp.Address, tmp.UIAddress)
	tmpStopped := false
	t.Cleanup(func() {
		if !tmpStopped {
			_ = tmp.Stop()
		}
	})
	c, err := tmp.Dial(ctx)
	if err != nil {
		t.Fatalf("dial temporal: %v", err)
	}
	resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Namespace: tmp.Namespace})
	c.Close()
	if err != nil {
		t.Fatalf("list workflows: %v", err)
	}
	t.Logf("temporal lists %d workflows", len(resp.GetExecutions()))

	// Stop everything; the processes must be gone and temp data removed.
	pids := kube.Pids()
	pids["temporal"] = tmp.Pid()
	if len(pids) != 4 {
		t.Fatalf("expected 4 running processes, got %v", pids)
	}
	start = time.Now()
	kubeStopped = true
	if err := kube.Stop(); err != nil {
		t.Errorf("kube.Stop: %v", err)
	}
	tmpStopped = true
	if err := tmp.Stop(); err != nil {
		t.Errorf("temporal.Stop: %v", err)
	}
	t.Logf("stopped in %s", time.Since(start).Round(time.Millisecond))
	for name, pid := range pids {
		if !processGone(pid) {
			t.Errorf("%s (pid %d) still exists after Stop", name, pid)
		}
	}
	for _, d := range []string{kube.DataDir, tmp.DataDir} {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("temporary data dir %s not removed (%v)", d, err)
		}
	}
	if err := kube.Stop(); err != nil {
		t.Errorf("second Stop: %v", err)
	}
}

// TestPersist starts a persisted stack twice on the same ports and data dir:
// objects, CRDs, workflows and the kubeconfig survive.
func TestPersist(t *testing.T) {
	if testing.Short() {
		t.Skip("short mode")
	}
	tools := toolsOrSkip(t)
	logs := logsOnFailure(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	ports, err := freePorts(4)
	if err != nil {
		t.Fatal(err)
	}
	opts := Options{
		ToolsDir: tools, DataDir: t.TempDir(), Persist: true, Logs: logs,
		KubePort: ports[0], EtcdPort: ports[1], // peer port = EtcdPort+1, normally free
		TemporalPort: ports[2], TemporalUIPort: ports[3],
		SearchAttributes: map[string]string{"OdaComponent": "Keyword"},
	}

	opts.CRDDir = t.TempDir() // installed by StartKube before the controller manager
	if err := os.WriteFile(filepath.Join(opts.CRDDir, "widget.yaml"), []byte(testCRD), 0o644); err != nil {
		t.Fatal(err)
	}
	kube, err := StartKube(ctx, opts)
	if err != nil {
		t.Fatalf("StartKube: %v", err)
	}
	t.Cleanup(func() { _ = kube.Stop() })
	dyn := dynamic.NewForConfigOrDie(kube.RESTConfig)
	widget := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "localstack.odaflow.io/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "kept", "namespace": "default"},
	}}
	if _, err := dyn.Resource(widgetGVR).Namespace("default").Create(ctx, widget, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create Widget: %v", err)
	}

	tmp, err := StartTemporal(ctx, opts)
	if err != nil {
		t.Fatalf("StartTemporal: %v", err)
	}
	t.Cleanup(func() { _ = tmp.Stop() })
	c, err := tmp.Dial(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// A workflow without a worker stays running: enough to prove persistence.
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "persisted-wf", TaskQueue: "nobody-polls"}, "NoSuchWorkflow")
	c.Close()
	if err != nil {
		t.Fatalf("start workflow: %v", err)
	}

	// Restart Temporal alone (same port, same db).
	if err := tmp.Restart(ctx); err != nil {
		t.Fatalf("Temporal.Restart: %v", err)
	}
	assertWorkflow(ctx, t, tmp, run.GetID())

	kubeconfig, _ := os.ReadFile(kube.KubeconfigPath)
	if err := kube.Stop(); err != nil {
		t.Fatalf("kube.Stop: %v", err)
	}
	if err := tmp.Stop(); err != nil {
		t.Fatalf("temporal.Stop: %v", err)
	}

	// Second run.
	kube2, err := StartKube(ctx, opts)
	if err != nil {
		t.Fatalf("StartKube (second run): %v", err)
	}
	t.Cleanup(func() { _ = kube2.Stop() })
	// The old kubeconfig's credentials still work.
	oldCfg, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dynamic.NewForConfigOrDie(oldCfg).Resource(widgetGVR).Namespace("default").Get(ctx, "kept", metav1.GetOptions{}); err != nil {
		t.Fatalf("Widget after restart, with the first run's kubeconfig: %v", err)
	}
	tmp2, err := StartTemporal(ctx, opts)
	if err != nil {
		t.Fatalf("StartTemporal (second run): %v", err)
	}
	t.Cleanup(func() { _ = tmp2.Stop() })
	assertWorkflow(ctx, t, tmp2, run.GetID())
	c, err = tmp2.Dial(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sa, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: tmp2.Namespace})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := sa.GetCustomAttributes()["OdaComponent"]; !ok {
		t.Errorf("search attribute OdaComponent missing: %v", sa.GetCustomAttributes())
	}
}

func assertWorkflow(ctx context.Context, t *testing.T, tmp *Temporal, id string) {
	t.Helper()
	c, err := tmp.Dial(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.DescribeWorkflow(ctx, id, ""); err != nil {
		t.Fatalf("workflow %s after restart: %v", id, err)
	}
}
