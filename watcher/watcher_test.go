package watcher

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/odaflow/odaflow/dependency"
	"github.com/odaflow/odaflow/gateway"
	"github.com/odaflow/odaflow/oda"
	"github.com/odaflow/odaflow/workflows"
)

// waitTimeout bounds every wait in these tests; a passing test never
// waits for it.
const waitTimeout = 10 * time.Second

// call is one call the watcher made on the Temporal client.
type call struct {
	// Method is "SignalWithStart" or "Signal".
	Method     string
	WorkflowID string
	Signal     string
	Arg        any
	Options    client.StartWorkflowOptions
	Workflow   any
	Args       []any
	At         time.Time
}

// fakeSignaller records the watcher's signals. fail, when set, decides an
// error for a call (the call is recorded either way).
type fakeSignaller struct {
	mu     sync.Mutex
	calls  []call
	fail   func(c call, attempt int) error
	wake   chan struct{}
	onCall func(c call)
	// now stamps each call (the watcher's clock in tests that fake it).
	now func() time.Time
}

func newFakeSignaller() *fakeSignaller {
	return &fakeSignaller{wake: make(chan struct{}, 1), now: time.Now}
}

func (f *fakeSignaller) record(c call) error {
	c.At = f.now()
	f.mu.Lock()
	f.calls = append(f.calls, c)
	attempt := 0
	for _, prev := range f.calls {
		if prev.WorkflowID == c.WorkflowID && prev.Method == c.Method {
			attempt++
		}
	}
	fail, onCall := f.fail, f.onCall
	f.mu.Unlock()
	if onCall != nil {
		onCall(c)
	}
	select {
	case f.wake <- struct{}{}:
	default:
	}
	if fail != nil {
		return fail(c, attempt)
	}
	return nil
}

func (f *fakeSignaller) SignalWithStartWorkflow(_ context.Context, workflowID string, signalName string, signalArg any,
	options client.StartWorkflowOptions, workflow any, workflowArgs ...any) (client.WorkflowRun, error) {
	return nil, f.record(call{Method: "SignalWithStart", WorkflowID: workflowID, Signal: signalName, Arg: signalArg,
		Options: options, Workflow: workflow, Args: workflowArgs})
}

func (f *fakeSignaller) SignalWorkflow(_ context.Context, workflowID string, _ string, signalName string, arg any) error {
	return f.record(call{Method: "Signal", WorkflowID: workflowID, Signal: signalName, Arg: arg})
}

func (f *fakeSignaller) snapshot() []call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]call(nil), f.calls...)
}

// await waits, without fixed sleeps, until cond holds on the calls so far.
func (f *fakeSignaller) await(t testing.TB, what string, cond func([]call) bool) []call {
	t.Helper()
	deadline := time.NewTimer(waitTimeout)
	defer deadline.Stop()
	for {
		calls := f.snapshot()
		if cond(calls) {
			return calls
		}
		select {
		case <-f.wake:
		case <-time.After(50 * time.Millisecond): // the condition may not depend on a call
		case <-deadline.C:
			t.Fatalf("%s: not true after %s; calls: %s", what, waitTimeout, describe(calls))
		}
	}
}

// awaitCalls waits for exactly n calls... or more, which the caller then sees.
func (f *fakeSignaller) awaitCalls(t testing.TB, n int) []call {
	t.Helper()
	return f.await(t, fmt.Sprintf("%d calls", n), func(c []call) bool { return len(c) >= n })
}

func describe(calls []call) string {
	s := ""
	for i, c := range calls {
		s += fmt.Sprintf("\n  %d: %s %s %s %+v", i, c.Method, c.WorkflowID, c.Signal, c.Arg)
	}
	if s == "" {
		return "none"
	}
	return s
}

// harness runs a Watcher on fake clients.
type harness struct {
	t       testing.TB
	dyn     *dynamicfake.FakeDynamicClient
	core    *kubefake.Clientset
	sig     *fakeSignaller
	w       *Watcher
	metrics *Metrics
}

type harnessOptions struct {
	namespaces []string
	workers    int
	objects    []*unstructured.Unstructured
	core       []runtime.Object
	fail       func(c call, attempt int) error
	lifecycles map[string]Lifecycle
	// searchAttributes is Config.SearchAttributes.
	searchAttributes bool
	// childStatusWindow is Config.ChildStatusWindow.
	childStatusWindow time.Duration
	// workflowTaskTimeout is Config.WorkflowTaskTimeout.
	workflowTaskTimeout time.Duration
	// clock is Config.Clock; nil is the real clock.
	clock clock.WithTicker
	// statusKey is Config.StatusKey.
	statusKey []byte
	// gateway and trust are Config.Gateway and Config.Trust.
	gateway gateway.Config
	trust   dependency.Trust
}

// watchedResources are the watches a started Watcher opens: the five ODA
// kinds on the dynamic client, EndpointSlices and ingress Services.
const watchedResources = 7

func listKinds() map[schema.GroupVersionResource]string {
	m := map[schema.GroupVersionResource]string{}
	for _, k := range oda.Kinds {
		m[k.GVR()] = k.Name + "List"
	}
	return m
}

func startHarness(t testing.TB, o harnessOptions) *harness {
	t.Helper()
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), listKinds())
	for _, obj := range o.objects {
		kind, ok := oda.KindByName(obj.GetKind())
		if !ok {
			t.Fatalf("not an ODA kind: %s", obj.GetKind())
		}
		if err := dyn.Tracker().Create(kind.GVR(), obj, obj.GetNamespace()); err != nil {
			t.Fatalf("seed %s: %v", obj.GetName(), err)
		}
	}
	core := kubefake.NewClientset(o.core...)
	// The fakes have no resourceVersions: an object created between an
	// informer's list and its watch would be lost. Count the watches, opened
	// on the tracker before they are counted, and start the test only when
	// all are open.
	var mu sync.Mutex
	watches := map[string]bool{}
	counting := func(tracker k8stesting.ObjectTracker) k8stesting.WatchReactionFunc {
		return func(action k8stesting.Action) (bool, watch.Interface, error) {
			var opts metav1.ListOptions
			if wa, ok := action.(k8stesting.WatchActionImpl); ok {
				opts = wa.ListOptions
			}
			wi, err := tracker.Watch(action.GetResource(), action.GetNamespace(), opts)
			if err != nil {
				return true, nil, err
			}
			mu.Lock()
			watches[action.GetResource().String()] = true
			mu.Unlock()
			return true, wi, nil
		}
	}
	dyn.PrependWatchReactor("*", counting(dyn.Tracker()))
	core.PrependWatchReactor("*", counting(core.Tracker()))

	filter, err := NewNamespaceFilter(o.namespaces)
	if err != nil {
		t.Fatal(err)
	}
	if o.workers == 0 {
		o.workers = 1 // one worker handles keys in order, which the negative checks rely on
	}
	if o.lifecycles == nil {
		o.lifecycles = DefaultLifecycles(LifecycleOptions{IdentityCheckInterval: 10 * time.Minute})
	}
	sig := newFakeSignaller()
	sig.fail = o.fail
	if o.clock != nil {
		sig.now = o.clock.Now
	}
	metrics := NewMetrics(prometheus.NewRegistry())
	w := New(Config{Namespaces: filter, TaskQueue: "odaflow-test", Lifecycles: o.lifecycles, Workers: o.workers, SearchAttributes: o.searchAttributes,
		ChildStatusWindow: o.childStatusWindow, WorkflowTaskTimeout: o.workflowTaskTimeout, Clock: o.clock, StatusKey: o.statusKey, Gateway: o.gateway, Trust: o.trust},
		Clients{Dynamic: dyn, Core: core}, sig, testLogger(), metrics)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(waitTimeout):
			t.Errorf("Run did not return after its context ended")
		}
	})
	h := &harness{t: t, dyn: dyn, core: core, sig: sig, w: w, metrics: metrics}
	h.eventually("every watch is open", func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		return len(watches) == watchedResources, fmt.Sprint(watches)
	})
	return h
}

// eventually polls a condition that no call announces (metrics, caches).
func (h *harness) eventually(what string, cond func() (bool, string)) {
	h.t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for {
		ok, why := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("%s: not true after %s: %s", what, waitTimeout, why)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func counterValue(vec *prometheus.CounterVec, labels ...string) float64 {
	var m dto.Metric
	if err := vec.WithLabelValues(labels...).Write(&m); err != nil {
		return -1
	}
	return m.GetCounter().GetValue()
}

// awaitCounter waits for a counter to reach want.
func (h *harness) awaitCounter(vec *prometheus.CounterVec, want float64, labels ...string) {
	h.t.Helper()
	h.eventually(fmt.Sprintf("counter %v reaches %v", labels, want), func() (bool, string) {
		got := counterValue(vec, labels...)
		return got >= want, fmt.Sprintf("%v", got)
	})
	if got := counterValue(vec, labels...); got != want {
		h.t.Fatalf("counter %v = %v, want %v", labels, got, want)
	}
}

// idle waits until the queue is empty, so that no key is waiting.
func (h *harness) idle() {
	h.t.Helper()
	h.eventually("queue drained", func() (bool, string) {
		n := h.w.queue.Len()
		return n == 0, fmt.Sprintf("%d keys queued", n)
	})
}

func (h *harness) res(kind oda.Kind, ns string) interface {
	Create(context.Context, *unstructured.Unstructured, metav1.CreateOptions, ...string) (*unstructured.Unstructured, error)
	Update(context.Context, *unstructured.Unstructured, metav1.UpdateOptions, ...string) (*unstructured.Unstructured, error)
	Get(context.Context, string, metav1.GetOptions, ...string) (*unstructured.Unstructured, error)
	Delete(context.Context, string, metav1.DeleteOptions, ...string) error
} {
	return h.dyn.Resource(kind.GVR()).Namespace(ns)
}

func (h *harness) create(obj *unstructured.Unstructured) *unstructured.Unstructured {
	h.t.Helper()
	kind, _ := oda.KindByName(obj.GetKind())
	out, err := h.res(kind, obj.GetNamespace()).Create(context.Background(), obj, metav1.CreateOptions{})
	if err != nil {
		h.t.Fatalf("create %s %s/%s: %v", obj.GetKind(), obj.GetNamespace(), obj.GetName(), err)
	}
	return out
}

// update reads the object, changes it and writes it back.
func (h *harness) update(kind oda.Kind, ns, name string, change func(u *unstructured.Unstructured)) *unstructured.Unstructured {
	h.t.Helper()
	u, err := h.res(kind, ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		h.t.Fatalf("get %s %s/%s: %v", kind.Name, ns, name, err)
	}
	change(u)
	out, err := h.res(kind, ns).Update(context.Background(), u, metav1.UpdateOptions{})
	if err != nil {
		h.t.Fatalf("update %s %s/%s: %v", kind.Name, ns, name, err)
	}
	return out
}

func (h *harness) delete(kind oda.Kind, ns, name string) {
	h.t.Helper()
	if err := h.res(kind, ns).Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
		h.t.Fatalf("delete %s %s/%s: %v", kind.Name, ns, name, err)
	}
}

func (h *harness) createSlice(s *discoveryv1.EndpointSlice) {
	h.t.Helper()
	if _, err := h.core.DiscoveryV1().EndpointSlices(s.Namespace).Create(context.Background(), s, metav1.CreateOptions{}); err != nil {
		h.t.Fatalf("create EndpointSlice: %v", err)
	}
}

func (h *harness) updateSlice(s *discoveryv1.EndpointSlice) {
	h.t.Helper()
	if _, err := h.core.DiscoveryV1().EndpointSlices(s.Namespace).Update(context.Background(), s, metav1.UpdateOptions{}); err != nil {
		h.t.Fatalf("update EndpointSlice: %v", err)
	}
}

// object builds an ODA resource as the apiserver would hold it (the fakes
// set no uid or creation time).
func object(kind oda.Kind, ns, name string, spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetAPIVersion(oda.APIVersion)
	u.SetKind(kind.Name)
	u.SetNamespace(ns)
	u.SetName(name)
	u.SetUID(types.UID("uid-" + ns + "-" + name))
	u.SetCreationTimestamp(metav1.NewTime(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)))
	return u
}

func tinySpec(version string) map[string]any {
	return map[string]any{"version": version, "securityFunction": map[string]any{"canvasSystemRole": "Admin"}}
}

func exposedAPI(ns, name, implementation, path string) *unstructured.Unstructured {
	spec := map[string]any{"name": name, "apiType": "openapi"}
	if implementation != "" {
		spec["implementation"] = implementation
	}
	if path != "" {
		spec["path"] = path
	}
	return object(oda.KindExposedAPI, ns, name, spec)
}

func endpointSlice(ns, service string, ready ...*bool) *discoveryv1.EndpointSlice {
	s := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: ns, Name: service + "-x1", Labels: map[string]string{discoveryv1.LabelServiceName: service}},
		AddressType: discoveryv1.AddressTypeIPv4,
	}
	for _, r := range ready {
		s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Addresses: []string{"10.0.0.1"}, Conditions: discoveryv1.EndpointConditions{Ready: r}})
	}
	return s
}

func idsOf(calls []call) []string {
	var out []string
	for _, c := range calls {
		out = append(out, c.Method+" "+c.WorkflowID+" "+c.Signal)
	}
	return out
}

func eventOf(t testing.TB, c call) workflows.ResourceEvent {
	t.Helper()
	ev, ok := c.Arg.(workflows.ResourceEvent)
	if !ok {
		t.Fatalf("signal argument is %T, want workflows.ResourceEvent", c.Arg)
	}
	return ev
}

func TestWatcherComponentSignals(t *testing.T) {
	h := startHarness(t, harnessOptions{namespaces: []string{"odacompns-*"}})
	const ns, name = "odacompns-1", "r1-productcatalog"
	id := "Component/" + ns + "/" + name

	// An add: exactly one signal-with-start, carrying the object.
	created := h.create(object(oda.KindComponent, ns, name, tinySpec("1.0.0")))
	calls := h.sig.awaitCalls(t, 1)
	c := calls[0]
	if c.Method != "SignalWithStart" || c.WorkflowID != id || c.Signal != workflows.SignalResourceEvent {
		t.Fatalf("first call = %s %s %s, want SignalWithStart %s %s", c.Method, c.WorkflowID, c.Signal, id, workflows.SignalResourceEvent)
	}
	if diff := cmp.Diff(ResourceEventOf(created), eventOf(t, c)); diff != "" {
		t.Errorf("signalled event (-want +got):\n%s", diff)
	}
	if c.Options.ID != id || c.Options.TaskQueue != "odaflow-test" || c.Options.WorkflowIDReusePolicy != 1 {
		t.Errorf("start options = %+v, want ID %s, task queue odaflow-test, ALLOW_DUPLICATE", c.Options, id)
	}
	if diff := cmp.Diff([]any{workflows.ComponentInput{Namespace: ns, Name: name, HistoryLimit: HistoryLimit}}, c.Args); diff != "" {
		t.Errorf("workflow arguments (-want +got):\n%s", diff)
	}

	// A status-only write, then the observed-hash annotation the workflow
	// writes with it: decided (dedup counted), never signalled.
	h.update(oda.KindComponent, ns, name, func(u *unstructured.Unstructured) {
		u.Object["status"] = map[string]any{"summary/status": map[string]any{"deployment_status": "In-Progress-CompCon"}}
	})
	h.awaitCounter(h.metrics.Dedup, 1, "Component", "unchanged")
	h.update(oda.KindComponent, ns, name, func(u *unstructured.Unstructured) {
		setAnnotation(u, oda.AnnotationObservedHash, eventOf(t, c).Hash)
	})
	h.awaitCounter(h.metrics.Dedup, 2, "Component", "unchanged")
	if got := h.sig.snapshot(); len(got) != 1 {
		t.Fatalf("status and bookkeeping writes were signalled: %s", describe(got))
	}

	// A spec change: one more signal, with the new hash.
	updated := h.update(oda.KindComponent, ns, name, func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(u.Object, "1.1.0", "spec", "version")
	})
	calls = h.sig.awaitCalls(t, 2)
	if ev := eventOf(t, calls[1]); calls[1].WorkflowID != id || ev.Hash != DesiredStateHash(updated) || ev.Hash == eventOf(t, c).Hash {
		t.Errorf("second call = %s with hash %s, want %s with the new hash %s", calls[1].WorkflowID, ev.Hash, id, DesiredStateHash(updated))
	}

	// A delete: a plain signal with the uid and Deleted.
	h.delete(oda.KindComponent, ns, name)
	calls = h.sig.awaitCalls(t, 3)
	d := calls[2]
	if d.Method != "Signal" || d.WorkflowID != id || d.Signal != workflows.SignalResourceEvent {
		t.Fatalf("deletion call = %s %s %s, want Signal %s %s", d.Method, d.WorkflowID, d.Signal, id, workflows.SignalResourceEvent)
	}
	if diff := cmp.Diff(workflows.ResourceEvent{UID: string(created.GetUID()), Deleted: true}, eventOf(t, d)); diff != "" {
		t.Errorf("deletion event (-want +got):\n%s", diff)
	}
	h.idle()
	if got := h.sig.snapshot(); len(got) != 3 {
		t.Errorf("calls = %s, want exactly 3", describe(got))
	}

	// The same name again is a new object: a new lifecycle.
	again := object(oda.KindComponent, ns, name, tinySpec("1.1.0"))
	again.SetUID("uid-second")
	h.create(again)
	calls = h.sig.awaitCalls(t, 4)
	if ev := eventOf(t, calls[3]); calls[3].Method != "SignalWithStart" || ev.UID != "uid-second" {
		t.Errorf("re-created object: %s with uid %s, want SignalWithStart with uid-second", calls[3].Method, ev.UID)
	}
}

func TestWatcherDeletionTimestampSignals(t *testing.T) {
	c := object(oda.KindComponent, "components", "r1", tinySpec("1"))
	c.SetFinalizers([]string{oda.Finalizer})
	h := startHarness(t, harnessOptions{objects: []*unstructured.Unstructured{c}})
	h.sig.awaitCalls(t, 1)
	h.update(oda.KindComponent, "components", "r1", func(u *unstructured.Unstructured) {
		now := metav1.Now()
		u.SetDeletionTimestamp(&now)
	})
	calls := h.sig.awaitCalls(t, 2)
	if ev := eventOf(t, calls[1]); calls[1].Method != "SignalWithStart" || !ev.Deleting || ev.Deleted {
		t.Errorf("deletion requested: %s %+v, want SignalWithStart with Deleting", calls[1].Method, ev)
	}
}

func TestWatcherRestartStaysSilentForObservedState(t *testing.T) {
	handled := object(oda.KindComponent, "components", "handled", tinySpec("1"))
	setAnnotation(handled, oda.AnnotationObservedHash, DesiredStateHash(handled))
	stale := object(oda.KindComponent, "components", "stale", tinySpec("1"))
	setAnnotation(stale, oda.AnnotationObservedHash, "0000000000000000")
	fresh := object(oda.KindComponent, "components", "fresh", tinySpec("1"))
	// An ExposedAPI's hash folds in its exposure: the workflow records that one.
	api := exposedAPI("components", "handled-api", "svc", "")
	ev := ResourceEventOf(api)
	setAnnotation(api, oda.AnnotationObservedHash, hashWith(ev.Hash, &workflows.Exposure{}))

	h := startHarness(t, harnessOptions{objects: []*unstructured.Unstructured{handled, stale, fresh, api}})
	h.sig.awaitCalls(t, 2)
	h.awaitCounter(h.metrics.Dedup, 1, "Component", "observed")
	h.awaitCounter(h.metrics.Dedup, 1, "ExposedAPI", "observed")
	h.idle()
	calls := h.sig.snapshot()
	want := []string{
		"SignalWithStart Component/components/fresh resource-event",
		"SignalWithStart Component/components/stale resource-event",
	}
	got := idsOf(calls)
	if len(got) == 2 && got[0] > got[1] {
		got[0], got[1] = got[1], got[0]
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("after a restart (-want +got):\n%s", diff)
	}

	// Remembered as handled: the next real change is signalled.
	h.update(oda.KindComponent, "components", "handled", func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(u.Object, "2", "spec", "version")
	})
	calls = h.sig.awaitCalls(t, 3)
	if calls[2].WorkflowID != "Component/components/handled" {
		t.Errorf("change after restart: %s, want Component/components/handled", calls[2].WorkflowID)
	}
}

func TestWatcherNamespaceFilter(t *testing.T) {
	h := startHarness(t, harnessOptions{namespaces: []string{"components", "odacompns-*"}})
	// Unserved first. Each informer hands its events over in order, so once
	// a served object's event is counted the unserved ones before it (of
	// the same kind) were handled too; the counters then prove that they
	// were dropped.
	h.create(object(oda.KindComponent, "other", "c", tinySpec("1")))
	h.create(object(oda.KindComponent, "odacompns", "c", tinySpec("1")))
	h.create(exposedAPI("other", "api", "svc", ""))
	h.createSlice(endpointSlice("other", "svc", ptr.To(true)))
	h.create(object(oda.KindComponent, "components", "c", tinySpec("1")))
	h.create(object(oda.KindComponent, "odacompns-7", "c", tinySpec("1")))
	h.create(exposedAPI("components", "api", "svc", ""))
	h.sig.awaitCalls(t, 3)
	h.createSlice(endpointSlice("components", "svc", ptr.To(true)))
	h.sig.awaitCalls(t, 4)
	h.idle()
	want := []string{
		"SignalWithStart Component/components/c resource-event",
		"SignalWithStart Component/odacompns-7/c resource-event",
		"SignalWithStart ExposedAPI/components/api resource-event",
		"SignalWithStart ExposedAPI/components/api resource-event",
	}
	got := idsOf(h.sig.snapshot())
	slices.Sort(got)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("signals (-want +got):\n%s", diff)
	}
	for kind, want := range map[string]float64{"Component": 2, "ExposedAPI": 1, "EndpointSlice": 1} {
		if got := counterValue(h.metrics.Events, kind); got != want {
			t.Errorf("%s events counted = %v, want %v (the served ones)", kind, got, want)
		}
	}
}

func TestWatcherEndpointSlicesReSignalTheirExposedAPIs(t *testing.T) {
	h := startHarness(t, harnessOptions{objects: []*unstructured.Unstructured{
		exposedAPI("ns1", "e1", "svc-a", "/e1"),
		exposedAPI("ns1", "e2", "svc-b", "/e2"),
		exposedAPI("ns2", "e3", "svc-a", "/e3"), // same Service name, other namespace
		exposedAPI("ns1", "e4", "", "/e4"),      // no implementation
	}})
	calls := h.sig.awaitCalls(t, 4)
	for _, c := range calls {
		if c.Method != "SignalWithStart" {
			t.Fatalf("initial call %s %s", c.Method, c.WorkflowID)
		}
		if ev := eventOf(t, c); ev.Exposure == nil || ev.Exposure.ImplementationReady {
			t.Errorf("%s: exposure %+v, want not ready", c.WorkflowID, ev.Exposure)
		}
	}
	if diff := cmp.Diff([]any{workflows.ExposedAPIInput{Namespace: "ns1", Name: "e1", HistoryLimit: HistoryLimit}}, argsOf(calls, "ExposedAPI/ns1/e1")); diff != "" {
		t.Errorf("workflow arguments (-want +got):\n%s", diff)
	}
	h.idle()

	// svc-a in ns1 gets a ready endpoint: e1, and only e1, is re-signalled.
	slice := endpointSlice("ns1", "svc-a", ptr.To(true))
	h.createSlice(slice)
	calls = h.sig.awaitCalls(t, 5)
	if calls[4].WorkflowID != "ExposedAPI/ns1/e1" || !eventOf(t, calls[4]).Exposure.ImplementationReady {
		t.Fatalf("after the slice: %s %+v, want ExposedAPI/ns1/e1 ready", calls[4].WorkflowID, eventOf(t, calls[4]).Exposure)
	}
	if got := counterValue(h.metrics.Events, "EndpointSlice"); got != 1 {
		t.Errorf("ExposedAPIs enqueued for the slice = %v, want 1 (found by index)", got)
	}

	// The endpoint stops being ready: e1 flips back.
	slice.Endpoints[0].Conditions.Ready = ptr.To(false)
	h.updateSlice(slice)
	calls = h.sig.awaitCalls(t, 6)
	if calls[5].WorkflowID != "ExposedAPI/ns1/e1" || eventOf(t, calls[5]).Exposure.ImplementationReady {
		t.Fatalf("after not ready: %s %+v, want ExposedAPI/ns1/e1 not ready", calls[5].WorkflowID, eventOf(t, calls[5]).Exposure)
	}

	// A second endpoint with readiness unset counts as ready.
	slice.Endpoints = append(slice.Endpoints, discoveryv1.Endpoint{Addresses: []string{"10.0.0.2"}})
	h.updateSlice(slice)
	calls = h.sig.awaitCalls(t, 7)
	if calls[6].WorkflowID != "ExposedAPI/ns1/e1" || !eventOf(t, calls[6]).Exposure.ImplementationReady {
		t.Fatalf("after an unset-ready endpoint: %s %+v, want ExposedAPI/ns1/e1 ready", calls[6].WorkflowID, eventOf(t, calls[6]).Exposure)
	}

	// A slice of svc-b without endpoints changes nothing for e2: enqueued,
	// decided, not signalled. A slice of no Service enqueues nothing.
	h.createSlice(endpointSlice("ns1", "svc-b"))
	h.awaitCounter(h.metrics.Events, 4, "EndpointSlice")
	h.createSlice(&discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "ns1", Name: "orphan"}, AddressType: discoveryv1.AddressTypeIPv4})
	// Its deletion re-evaluates e1 (gone: not ready).
	if err := h.core.DiscoveryV1().EndpointSlices("ns1").Delete(context.Background(), slice.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	h.sig.awaitCalls(t, 8)
	h.idle()
	calls = h.sig.snapshot()
	if len(calls) != 8 || calls[7].WorkflowID != "ExposedAPI/ns1/e1" || eventOf(t, calls[7]).Exposure.ImplementationReady {
		t.Errorf("after svc-b's empty slice and svc-a's slice deleted, calls: %s", describe(calls[6:]))
	}
	if got := counterValue(h.metrics.Events, "EndpointSlice"); got != 5 {
		t.Errorf("ExposedAPIs enqueued for slices = %v, want 5", got)
	}
}

func argsOf(calls []call, id string) []any {
	for _, c := range calls {
		if c.WorkflowID == id {
			return c.Args
		}
	}
	return nil
}

func TestWatcherRetriesFailedSignals(t *testing.T) {
	h := startHarness(t, harnessOptions{fail: func(c call, attempt int) error {
		switch {
		case c.Method == "SignalWithStart" && attempt == 1:
			return serviceerror.NewUnavailable("temporal is restarting")
		case c.Method == "Signal" && c.WorkflowID == "Component/components/gone":
			return serviceerror.NewNotFound("workflow already finished")
		}
		return nil
	}})
	h.create(object(oda.KindComponent, "components", "r1", tinySpec("1")))
	calls := h.sig.awaitCalls(t, 2)
	if calls[0].WorkflowID != calls[1].WorkflowID || eventOf(t, calls[0]).Hash != eventOf(t, calls[1]).Hash {
		t.Errorf("retry differs: %s", describe(calls))
	}
	if gap := calls[1].At.Sub(calls[0].At); gap < 100*time.Millisecond {
		t.Errorf("retried after %s, want a backoff (200ms)", gap)
	}
	h.awaitCounter(h.metrics.Signals, 1, "Component", workflows.SignalResourceEvent, "ok")
	if got := counterValue(h.metrics.Signals, "Component", workflows.SignalResourceEvent, "error"); got != 1 {
		t.Errorf("errors counted = %v, want 1", got)
	}

	// A deletion whose workflow is gone is delivered as far as it can be: no retry.
	h.create(object(oda.KindComponent, "components", "gone", tinySpec("1")))
	h.sig.awaitCalls(t, 3)
	h.delete(oda.KindComponent, "components", "gone")
	h.awaitCounter(h.metrics.Signals, 1, "Component", "deleted", "ok")
	h.idle()
	if got := h.sig.snapshot(); len(got) != 4 {
		t.Errorf("calls: %s, want 4", describe(got))
	}
}

func TestWatcherChildStatusGoesToItsComponent(t *testing.T) {
	const ns = "components"
	parent := object(oda.KindComponent, ns, "r1", tinySpec("1"))
	ic := object(oda.KindIdentityConfig, ns, "r1", map[string]any{"canvasSystemRole": "Admin"})
	ic.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: oda.APIVersion, Kind: "Component", Name: "r1", UID: parent.GetUID(), Controller: ptr.To(true)}})
	h := startHarness(t, harnessOptions{objects: []*unstructured.Unstructured{parent, ic}})
	toParent := func(calls []call) []call {
		var out []call
		for _, c := range calls {
			if c.Signal == workflows.SignalChildStatus {
				out = append(out, c)
			}
		}
		return out
	}
	childCalls := func(n int) []call {
		return toParent(h.sig.await(t, fmt.Sprintf("%d child-status signals", n), func(c []call) bool { return len(toParent(c)) >= n }))
	}
	// A child with no status yet tells its Component nothing it does not
	// know: decided, not signalled.
	h.awaitCounter(h.metrics.Dedup, 1, "IdentityConfig", "child-empty")
	h.sig.awaitCalls(t, 1) // the Component's own lifecycle
	h.idle()
	if got := toParent(h.sig.snapshot()); len(got) != 0 {
		t.Fatalf("a child without status was signalled: %s", describe(got))
	}

	// The identity provider registers it.
	h.update(oda.KindIdentityConfig, ns, "r1", func(u *unstructured.Unstructured) {
		u.Object["status"] = map[string]any{"identityConfig": map[string]any{"identityProvider": "Keycloak", "listenerRegistered": true}}
	})
	cs := childCalls(1)
	want := workflows.ChildStatus{Kind: "IdentityConfig", Name: "r1", UID: string(ic.GetUID()), IdentityProvider: "Keycloak", ListenerRegistered: true}
	if diff := cmp.Diff(want, cs[0].Arg); cs[0].Method != "Signal" || cs[0].WorkflowID != "Component/components/r1" || diff != "" {
		t.Fatalf("registered: %s %s (-want +got):\n%s", cs[0].Method, cs[0].WorkflowID, diff)
	}

	// A label on the child changes nothing its Component reads.
	h.update(oda.KindIdentityConfig, ns, "r1", func(u *unstructured.Unstructured) { u.SetLabels(map[string]string{"x": "y"}) })
	h.awaitCounter(h.metrics.Dedup, 1, "IdentityConfig", "child-unchanged")

	// Deleted: the Component hears of it (and re-creates the child).
	h.delete(oda.KindIdentityConfig, ns, "r1")
	cs = childCalls(2)
	if diff := cmp.Diff(workflows.ChildStatus{Kind: "IdentityConfig", Name: "r1", UID: string(ic.GetUID()), Deleted: true}, cs[1].Arg); diff != "" {
		t.Errorf("deleted (-want +got):\n%s", diff)
	}
	h.idle()
	if got := toParent(h.sig.snapshot()); len(got) != 2 {
		t.Errorf("child-status signals: %s, want 2", describe(got))
	}
}

// timerClock is a fake clock that knows the timers pending on it. The work
// queue arms a timer for its earliest delayed key only once it has taken
// the key in; stepping the clock before that would leave the key waiting
// for a later step, so the test steps only once the timer is there.
type timerClock struct {
	*clocktesting.FakeClock
	mu     sync.Mutex
	timers []*deadlineTimer
}

type deadlineTimer struct {
	clock.Timer
	at      time.Time
	stopped bool
}

func (d *deadlineTimer) Stop() bool {
	d.stopped = true
	return d.Timer.Stop()
}

func (c *timerClock) NewTimer(d time.Duration) clock.Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &deadlineTimer{Timer: c.FakeClock.NewTimer(d), at: c.Now().Add(d)}
	c.timers = append(c.timers, t)
	return t
}

// stepTo moves the clock to at once a pending timer fires by then: the
// work queue has taken in a key that is due by at.
func (c *timerClock) stepTo(h *harness, at time.Time) {
	h.t.Helper()
	h.eventually("a timer due by "+at.Format(time.StampMilli), func() (bool, string) {
		c.mu.Lock()
		defer c.mu.Unlock()
		var pending []string
		for _, t := range c.timers {
			if !t.stopped && t.at.After(c.Now()) {
				if !t.at.After(at) {
					return true, ""
				}
				pending = append(pending, t.at.Format(time.StampMilli))
			}
		}
		return false, fmt.Sprint("pending timers ", pending)
	})
	c.SetTime(at)
}

func TestWatcherGathersAComponentsChildStatuses(t *testing.T) {
	const ns = "components"
	const window = time.Second
	owned := func(kind oda.Kind, name string, parent *unstructured.Unstructured) *unstructured.Unstructured {
		u := object(kind, ns, name, map[string]any{"canvasSystemRole": "Admin"})
		u.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: oda.APIVersion, Kind: "Component", Name: parent.GetName(), UID: parent.GetUID(), Controller: ptr.To(true)}})
		return u
	}
	r1, r2 := object(oda.KindComponent, ns, "r1", tinySpec("1")), object(oda.KindComponent, ns, "r2", tinySpec("1"))
	objs := []*unstructured.Unstructured{r1, r2, owned(oda.KindIdentityConfig, "r1", r1), owned(oda.KindIdentityConfig, "r1-extra", r1), owned(oda.KindIdentityConfig, "r2", r2)}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := &timerClock{FakeClock: clocktesting.NewFakeClock(t0)}
	h := startHarness(t, harnessOptions{objects: objs, childStatusWindow: window, clock: clk})
	h.sig.awaitCalls(t, len(objs)) // every resource's own lifecycle
	windowOf := func(component string) (time.Time, bool) {
		h.w.mu.Lock()
		defer h.w.mu.Unlock()
		until, open := h.w.gatherUntil[ns+"/"+component]
		return until, open
	}
	awaitWindow := func(component string) time.Time {
		t.Helper()
		h.eventually(component+"'s window open", func() (bool, string) {
			_, open := windowOf(component)
			return open, ""
		})
		until, _ := windowOf(component)
		return until
	}
	windowsPassed := func() (bool, string) {
		h.w.mu.Lock()
		defer h.w.mu.Unlock()
		return len(h.w.gatherUntil) == 0, fmt.Sprint(h.w.gatherUntil)
	}
	// The children's arrival opened windows too (their empty statuses are
	// decided, not signalled): let them pass and be forgotten first.
	clk.stepTo(h, awaitWindow("r1"))
	h.eventually("the arrival windows forgotten", windowsPassed)
	h.idle()
	isChild := func(c call) bool { return c.Signal == workflows.SignalChildStatus }
	children := func() []call { return slices.DeleteFunc(h.sig.snapshot(), func(c call) bool { return !isChild(c) }) }
	if got := children(); len(got) != 0 {
		t.Fatalf("child statuses signalled on arrival: %s", describe(got))
	}

	registered := func(u *unstructured.Unstructured) {
		u.Object["status"] = map[string]any{"identityConfig": map[string]any{"identityProvider": "Keycloak", "listenerRegistered": true}}
	}
	began := clk.Now()
	h.update(oda.KindIdentityConfig, ns, "r1", registered)
	r1Until := awaitWindow("r1")
	if r1Until != began.Add(window) {
		t.Fatalf("r1's window closes at %s, want %s after the change", r1Until.Sub(began), window)
	}
	// A sibling changing halfway through joins r1's open window; r2's
	// child opens a window of its own.
	clk.SetTime(began.Add(window / 2))
	h.update(oda.KindIdentityConfig, ns, "r1-extra", registered)
	h.update(oda.KindIdentityConfig, ns, "r2", registered)
	r2Until := awaitWindow("r2")
	if until, _ := windowOf("r1"); until != r1Until {
		t.Errorf("r1's window moved to %s by its sibling's change", until.Sub(began))
	}
	if r2Until != began.Add(window/2+window) {
		t.Errorf("r2's window closes at %s, want %s", r2Until.Sub(began), window/2+window)
	}
	h.idle()
	if got := children(); len(got) != 0 {
		t.Fatalf("child statuses signalled before any window closed: %s", describe(got))
	}

	// r1's window closes: both its children's statuses go out, at that
	// moment, and r2's waits for its own.
	clk.stepTo(h, r1Until)
	calls := h.sig.await(t, "r1's 2 child-status signals", func(c []call) bool {
		n := 0
		for _, x := range c {
			if isChild(x) && x.WorkflowID == "Component/components/r1" {
				n++
			}
		}
		return n >= 2
	})
	h.idle()
	for _, c := range children() {
		if c.WorkflowID != "Component/components/r1" || !c.At.Equal(r1Until) {
			t.Errorf("at r1's window's end: %s at %s, want only r1's at %s; calls: %s", c.WorkflowID, c.At.Sub(began), r1Until.Sub(began), describe(calls))
		}
	}
	clk.stepTo(h, r2Until)
	h.sig.await(t, "r2's child-status signal", func(c []call) bool {
		return slices.ContainsFunc(c, func(x call) bool { return isChild(x) && x.WorkflowID == "Component/components/r2" })
	})
	h.idle()
	at := map[string][]time.Duration{}
	for _, c := range children() {
		at[c.WorkflowID] = append(at[c.WorkflowID], c.At.Sub(began))
	}
	if want := map[string][]time.Duration{"Component/components/r1": {window, window}, "Component/components/r2": {window/2 + window}}; !cmp.Equal(at, want) {
		t.Errorf("child-status signals sent after the first change: %v, want %v", at, want)
	}
	h.eventually("every window forgotten once passed", windowsPassed)
}

func TestWatcherChildStatusKnownAfterRestart(t *testing.T) {
	const ns = "components"
	parent := object(oda.KindComponent, ns, "r1", tinySpec("1"))
	setAnnotation(parent, oda.AnnotationObservedHash, DesiredStateHash(parent))
	parent.Object["status"] = map[string]any{
		"securitySecretsManagement": map[string]any{"name": "r1", "uid": "uid-sm", "ready": true},
	}
	sm := object(oda.KindSecretsManagement, ns, "r1", map[string]any{"type": "sideCar"})
	sm.SetUID("uid-sm")
	sm.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: oda.APIVersion, Kind: "Component", Name: "r1", UID: parent.GetUID(), Controller: ptr.To(true)}})
	sm.Object["status"] = map[string]any{"implementation": map[string]any{"ready": true}}
	// Its own workflow handled it too.
	setAnnotation(sm, oda.AnnotationObservedHash, DesiredStateHash(sm))
	h := startHarness(t, harnessOptions{objects: []*unstructured.Unstructured{parent, sm}})
	h.awaitCounter(h.metrics.Dedup, 1, "SecretsManagement", "parent-knows")
	h.awaitCounter(h.metrics.Dedup, 1, "Component", "observed")
	h.idle()
	if got := h.sig.snapshot(); len(got) != 0 {
		t.Errorf("after a restart with nothing new: %s", describe(got))
	}
}

func TestWatcherPathConflicts(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	older := exposedAPI("ns1", "older", "", "/shared")
	older.SetCreationTimestamp(metav1.NewTime(t0))
	newer := exposedAPI("ns2", "newer", "", "/shared")
	newer.SetCreationTimestamp(metav1.NewTime(t0.Add(time.Minute)))
	h := startHarness(t, harnessOptions{objects: []*unstructured.Unstructured{older, newer}})
	calls := h.sig.awaitCalls(t, 2)
	assertOneLoser(t, calls, "ExposedAPI/ns2/newer", "in another namespace")
	h.idle()
	// The older one goes: the newer one takes the path.
	h.delete(oda.KindExposedAPI, "ns1", "older")
	calls = h.sig.await(t, "the newer one re-signalled", func(c []call) bool {
		for _, x := range c[2:] {
			if x.WorkflowID == "ExposedAPI/ns2/newer" {
				return true
			}
		}
		return false
	})
	for _, c := range calls[2:] {
		if c.WorkflowID == "ExposedAPI/ns2/newer" && eventOf(t, c).Exposure.ConflictsWith != "" {
			t.Errorf("after the winner left: ConflictsWith = %q", eventOf(t, c).Exposure.ConflictsWith)
		}
	}
}

// assertOneLoser checks that of the signalled ExposedAPIs only loser heard
// of a conflict, and that it lost to winner.
func assertOneLoser(t *testing.T, calls []call, loser, winner string) {
	t.Helper()
	for _, c := range calls {
		want := ""
		if c.WorkflowID == loser {
			want = winner
		}
		if got := eventOf(t, c).Exposure.ConflictsWith; got != want {
			t.Errorf("%s: ConflictsWith = %q, want %q", c.WorkflowID, got, want)
		}
	}
}

// TestWatcherPathPrefixTakeover: another Component's ExposedAPI claiming
// a prefix of an existing API's path (its route would take that API's
// requests) loses to the older claim, while a Component nesting its own
// APIs is left alone; when the older claim goes, the prefix is free.
func TestWatcherPathPrefixTakeover(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	victim := exposedAPI("ns1", "pc-api", "", "/pc/tmf-api/productCatalogManagement/v4")
	victim.SetLabels(map[string]string{oda.LabelComponentName: "pc"})
	victim.SetCreationTimestamp(metav1.NewTime(t0))
	nested := exposedAPI("ns1", "pc-root", "", "/pc")
	nested.SetLabels(map[string]string{oda.LabelComponentName: "pc"})
	nested.SetCreationTimestamp(metav1.NewTime(t0.Add(time.Second)))
	h := startHarness(t, harnessOptions{objects: []*unstructured.Unstructured{victim, nested}})
	for _, c := range h.sig.awaitCalls(t, 2) {
		if got := eventOf(t, c).Exposure.ConflictsWith; got != "" {
			t.Errorf("%s, one Component's nested paths: ConflictsWith = %q", c.WorkflowID, got)
		}
	}
	h.idle()
	hostile := exposedAPI("ns2", "grab", "", "/pc/tmf-api/")
	hostile.SetLabels(map[string]string{oda.LabelComponentName: "other"})
	hostile.SetCreationTimestamp(metav1.NewTime(t0.Add(time.Minute)))
	h.create(hostile)
	calls := h.sig.await(t, "the hostile claim signalled", func(c []call) bool {
		return slices.ContainsFunc(c[2:], func(x call) bool { return x.WorkflowID == "ExposedAPI/ns2/grab" })
	})
	assertOneLoser(t, calls[2:], "ExposedAPI/ns2/grab", "in another namespace")
	h.idle()
	// The Component goes: the prefix is free and the hostile claim hears it.
	n := len(h.sig.snapshot())
	h.delete(oda.KindExposedAPI, "ns1", "pc-api")
	h.delete(oda.KindExposedAPI, "ns1", "pc-root")
	h.sig.await(t, "the hostile claim re-signalled without a conflict", func(c []call) bool {
		return slices.ContainsFunc(c[n:], func(x call) bool {
			return x.WorkflowID == "ExposedAPI/ns2/grab" && eventOf(t, x).Exposure.ConflictsWith == ""
		})
	})
}

// TestWatcherStringPrefixHijack: a VirtualService matches uri.prefix as a
// string, so a claim on "/vic" would take every request for "/victim/...":
// it conflicts with the victim's path, and loses to it, although no path
// segment is shared. A held path is kept even against an older claim.
func TestWatcherStringPrefixHijack(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	victim := exposedAPI("victim", "api", "", "/victim/tmf-api/v4")
	victim.SetCreationTimestamp(metav1.NewTime(t0.Add(time.Hour)))
	victim.Object["status"] = map[string]any{"apiStatus": map[string]any{"path": "/victim/tmf-api/v4"}}
	attacker := exposedAPI("attacker", "api", "", "/vic")
	attacker.SetCreationTimestamp(metav1.NewTime(t0))
	h := startHarness(t, harnessOptions{objects: []*unstructured.Unstructured{victim, attacker}})
	assertOneLoser(t, h.sig.awaitCalls(t, 2), "ExposedAPI/attacker/api", "in another namespace")
}

// TestWatcherSameSecondClaimKeepsTheHolder: a claim on a held path made in
// the same second, from a namespace that sorts first and with a smaller
// uid, loses: the holder is never evicted.
func TestWatcherSameSecondClaimKeepsTheHolder(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	victim := exposedAPI("victim", "api", "", "/victim/api")
	victim.SetCreationTimestamp(metav1.NewTime(t0))
	victim.SetUID("zzz")
	victim.Object["status"] = map[string]any{"apiStatus": map[string]any{"path": "/victim/api"}}
	attacker := exposedAPI("aaa", "api", "", "/victim/api")
	attacker.SetCreationTimestamp(metav1.NewTime(t0))
	attacker.SetUID("aaa")
	h := startHarness(t, harnessOptions{objects: []*unstructured.Unstructured{victim, attacker}})
	assertOneLoser(t, h.sig.awaitCalls(t, 2), "ExposedAPI/aaa/api", "in another namespace")
}

// TestWatcherPathSiblingsRespectTheNamespaceFilter: an ExposedAPI in a
// namespace this watcher does not serve must never get a signal from it,
// even when a served one claims the same path.
func TestWatcherPathSiblingsRespectTheNamespaceFilter(t *testing.T) {
	h := startHarness(t, harnessOptions{
		namespaces: []string{"served"},
		objects:    []*unstructured.Unstructured{exposedAPI("unserved", "theirs", "", "/shared")},
	})
	h.create(exposedAPI("served", "ours", "", "/shared"))
	h.sig.awaitCalls(t, 1)
	// A second change of ours: with one worker, its signal comes after
	// every key the first event enqueued.
	h.update(oda.KindExposedAPI, "served", "ours", func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(u.Object, "v2", "spec", "version")
	})
	h.sig.await(t, "ours signalled twice", func(c []call) bool { return len(c) >= 2 && c[len(c)-1].WorkflowID == "ExposedAPI/served/ours" })
	h.idle()
	want := []string{"SignalWithStart ExposedAPI/served/ours resource-event", "SignalWithStart ExposedAPI/served/ours resource-event"}
	if diff := cmp.Diff(want, idsOf(h.sig.snapshot())); diff != "" {
		t.Errorf("signals (-want +got):\n%s", diff)
	}
}

// TestWatcherPathChangeReleasesTheOldPath: when the winner of a path moves
// to another path, the loser on the old path must hear that it won.
func TestWatcherPathChangeReleasesTheOldPath(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	older := exposedAPI("ns1", "older", "", "/shared")
	older.SetCreationTimestamp(metav1.NewTime(t0))
	newer := exposedAPI("ns2", "newer", "", "/shared")
	newer.SetCreationTimestamp(metav1.NewTime(t0.Add(time.Minute)))
	h := startHarness(t, harnessOptions{objects: []*unstructured.Unstructured{older, newer}})
	h.sig.awaitCalls(t, 2)
	h.idle()
	h.update(oda.KindExposedAPI, "ns1", "older", func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(u.Object, "/elsewhere", "spec", "path")
	})
	h.sig.await(t, "the newer one re-signalled without a conflict", func(c []call) bool {
		for _, x := range c[2:] {
			if x.WorkflowID == "ExposedAPI/ns2/newer" && eventOf(t, x).Exposure.ConflictsWith == "" {
				return true
			}
		}
		return false
	})
}

// TestWatcherExposedAPIDeletionReachesItsComponent: an ExposedAPI has its
// own lifecycle and a Component; its deletion goes to both.
func TestWatcherExposedAPIDeletionReachesItsComponent(t *testing.T) {
	const ns = "components"
	parent := object(oda.KindComponent, ns, "r1", tinySpec("1"))
	api := exposedAPI(ns, "r1-tmf620", "", "/r1/tmf620")
	api.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: oda.APIVersion, Kind: "Component", Name: "r1", UID: parent.GetUID(), Controller: ptr.To(true)}})
	h := startHarness(t, harnessOptions{objects: []*unstructured.Unstructured{parent, api}})
	h.sig.awaitCalls(t, 2) // two lifecycles started
	h.awaitCounter(h.metrics.Dedup, 1, "ExposedAPI", "child-empty")
	h.idle()
	h.delete(oda.KindExposedAPI, ns, "r1-tmf620")
	want := workflows.ChildStatus{Kind: "ExposedAPI", Name: "r1-tmf620", UID: string(api.GetUID()), Deleted: true}
	h.sig.await(t, "the Component hears of the deletion", func(calls []call) bool {
		for _, c := range calls {
			if c.WorkflowID == "Component/components/r1" && cmp.Equal(c.Arg, want) {
				return true
			}
		}
		return false
	})
}

// TestWatcherChildImplementationChangeReachesItsComponent: the Component
// lists each ExposedAPI's implementation (and path, port...) in its status,
// so a change of one of them alone must reach it.
func TestWatcherChildImplementationChangeReachesItsComponent(t *testing.T) {
	const ns = "components"
	parent := object(oda.KindComponent, ns, "r1", tinySpec("1"))
	api := exposedAPI(ns, "r1-tmf620", "svc-a", "/r1/tmf620")
	api.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: oda.APIVersion, Kind: "Component", Name: "r1", UID: parent.GetUID(), Controller: ptr.To(true)}})
	api.Object["status"] = map[string]any{"apiStatus": map[string]any{"implementation": "svc-a", "path": "/r1/tmf620"}}
	h := startHarness(t, harnessOptions{objects: []*unstructured.Unstructured{parent, api}})
	h.sig.awaitCalls(t, 3)
	h.idle()
	h.update(oda.KindExposedAPI, ns, "r1-tmf620", func(u *unstructured.Unstructured) {
		u.Object["status"] = map[string]any{"apiStatus": map[string]any{"implementation": "svc-b", "path": "/r1/tmf620"}}
	})
	h.sig.await(t, "the Component hears of the new implementation", func(calls []call) bool {
		for _, c := range calls {
			if cs, ok := c.Arg.(workflows.ChildStatus); ok && cs.Implementation == "svc-b" {
				return true
			}
		}
		return false
	})
}

// testLogger discards the watcher's logs unless ODAFLOW_TEST_LOG=1.
func testLogger() *slog.Logger {
	if os.Getenv("ODAFLOW_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

// TestWatcherUnchangedChildWithPortIsNotReSignalled: an ExposedAPI's status
// carries a port; an event that changes nothing its Component reads (a
// label, the observed-hash annotation) must not re-signal the Component.
func TestWatcherUnchangedChildWithPortIsNotReSignalled(t *testing.T) {
	const ns = "components"
	parent := object(oda.KindComponent, ns, "r1", tinySpec("1"))
	api := exposedAPI(ns, "r1-tmf620", "", "/r1/tmf620")
	api.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: oda.APIVersion, Kind: "Component", Name: "r1", UID: parent.GetUID(), Controller: ptr.To(true)}})
	api.Object["status"] = map[string]any{
		"implementation": map[string]any{"ready": true},
		"apiStatus":      map[string]any{"url": "http://gw/r1/tmf620", "path": "/r1/tmf620", "port": int64(8080)},
	}
	h := startHarness(t, harnessOptions{objects: []*unstructured.Unstructured{parent, api}})
	h.sig.awaitCalls(t, 3) // two lifecycles, one child status
	h.idle()
	h.update(oda.KindExposedAPI, ns, "r1-tmf620", func(u *unstructured.Unstructured) { u.SetLabels(map[string]string{"x": "y"}) })
	h.awaitCounter(h.metrics.Events, 2, "ExposedAPI")
	h.idle()
	var childSignals []call
	for _, c := range h.sig.snapshot() {
		if c.Signal == workflows.SignalChildStatus {
			childSignals = append(childSignals, c)
		}
	}
	if len(childSignals) != 1 {
		t.Errorf("child-status signals: %s, want 1", describe(childSignals))
	}
}

func TestWatcherUpgradeAcceptsTheLegacyObservedHash(t *testing.T) {
	const ns = "components"
	// Annotated by watchers that hashed odaflow's finalizer differently
	// (counted it; or left it out but hashed the emptied list as []): the
	// workflow handled this state, so the upgraded watcher stays silent.
	// No ingress, no endpoints, no rival: the exposure the watcher reads.
	var objects []*unstructured.Unstructured
	for i, variant := range []hashVariant{hashWithOwnFinalizer, hashEmptiedFinalizers} {
		api := exposedAPI(ns, fmt.Sprintf("api-%d", i), "", fmt.Sprintf("/a%d", i))
		api.SetFinalizers([]string{oda.Finalizer})
		setAnnotation(api, oda.AnnotationObservedHash, hashWith(desiredStateHash(api, variant), &workflows.Exposure{}))
		objects = append(objects, api)
	}
	h := startHarness(t, harnessOptions{objects: objects})
	h.awaitCounter(h.metrics.Dedup, float64(len(objects)), "ExposedAPI", "observed")
	h.idle()
	if got := h.sig.snapshot(); len(got) != 0 {
		t.Errorf("after an upgrade with nothing new: %s", describe(got))
	}
}

// TestWatcherRepairsAForgedStatusOnly: with a status key, odaflow's own
// sealed status writes are no news (no signal), a status or fence someone
// else wrote is sent to the workflow with a hash it has not handled (so it
// writes its status again), once per forged version, and the sealed repair
// write after it is silent again.
func TestWatcherRepairsAForgedStatusOnly(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	h := startHarness(t, harnessOptions{statusKey: key})
	const ns, name = "components", "r1-productcatalog"
	created := h.create(object(oda.KindComponent, ns, name, tinySpec("1.0.0")))
	first := eventOf(t, h.sig.awaitCalls(t, 1)[0])
	uid := string(created.GetUID())
	writeSealed := func(fence, phase string) {
		status := map[string]any{"summary/status": map[string]any{"deployment_status": phase}}
		h.update(oda.KindComponent, ns, name, func(u *unstructured.Unstructured) {
			u.Object["status"] = status
			setAnnotation(u, oda.AnnotationStatusFence, fence)
			setAnnotation(u, oda.AnnotationStatusSeal, oda.Seal(key, uid, fence, status))
		})
	}

	writeSealed("1.5", "In-Progress-CompCon")
	h.awaitCounter(h.metrics.Dedup, 1, "Component", "unchanged")
	if got := h.sig.snapshot(); len(got) != 1 {
		t.Fatalf("odaflow's sealed status write was signalled: %s", describe(got))
	}

	h.update(oda.KindComponent, ns, name, func(u *unstructured.Unstructured) {
		u.Object["status"] = map[string]any{"summary/status": map[string]any{"deployment_status": "Complete"}}
		setAnnotation(u, oda.AnnotationStatusFence, "9223372036854775807.9223372036854775807")
	})
	calls := h.sig.awaitCalls(t, 2)
	repair := eventOf(t, calls[1])
	if repair.Hash == first.Hash {
		t.Errorf("the repair carries the handled hash %s: the workflow would not write again", repair.Hash)
	}

	writeSealed("1.9", "In-Progress-CompCon")
	h.awaitCounter(h.metrics.Dedup, 2, "Component", "unchanged")
	h.idle()
	if got := h.sig.snapshot(); len(got) != 2 {
		t.Errorf("after the sealed repair write: %s, want no more signals", describe(got))
	}
}
