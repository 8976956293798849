// Package watcher turns Kubernetes events on ODA resources into Temporal
// signals: one workflow per resource (signal-with-start), and child status
// changes to the owning Component's workflow. It decides on hashes of what
// matters, so its own status writes and restarts re-drive nothing.
package watcher

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	"github.com/odaflow/odaflow/dependency"
	"github.com/odaflow/odaflow/gateway"
	"github.com/odaflow/odaflow/internal/config"
	"github.com/odaflow/odaflow/oda"
	"github.com/odaflow/odaflow/workflows"
)

// Signaller is the part of the Temporal client the watcher uses.
type Signaller interface {
	SignalWithStartWorkflow(ctx context.Context, workflowID string, signalName string, signalArg any,
		options client.StartWorkflowOptions, workflow any, workflowArgs ...any) (client.WorkflowRun, error)
	SignalWorkflow(ctx context.Context, workflowID string, runID string, signalName string, arg any) error
}

// Lifecycle says how a kind's own workflow is started.
type Lifecycle struct {
	Workflow any
	// Input builds the workflow's start argument.
	Input func(namespace, name string) any
}

// Config configures a Watcher.
type Config struct {
	Namespaces NamespaceFilter
	TaskQueue  string
	// Lifecycles maps a Kind name to its workflow. Kinds without one are
	// watched only to tell their Component about status changes.
	Lifecycles map[string]Lifecycle
	// Workers is the number of goroutines sending signals.
	Workers int
	// IngressSelector and IngressNamespace find the gateway's ingress
	// Service; "" is config.DefaultIngressNamespace, never every namespace
	// (where any tenant could publish a Service with the selector's labels).
	IngressSelector  labels.Selector
	IngressNamespace string
	// Gateway holds the settings that make an ExposedAPI's URL (the
	// gateway, for its scheme, the public host name and the allowed host
	// names): the worker's, so that a provider's URL computed here is the
	// one its lifecycle publishes.
	Gateway gateway.Config
	// Trust says which namespaces' ExposedAPIs a DependentAPI may resolve
	// to.
	Trust dependency.Trust
	// SearchAttributes starts workflows with OdaComponent, K8sNamespace and
	// OdaKind and asks them to keep DeploymentStatus current; on only when
	// the attributes are registered on the Temporal namespace.
	SearchAttributes bool
	// ChildStatusWindow gathers a Component's child-status signals: a
	// change waits until this long after the first one its Component has
	// pending, so that siblings changing together (a Component's APIs
	// exposed one after another) reach its workflow back to back and
	// Temporal hands them to one workflow task, not one task each. 0 sends
	// every change at once.
	ChildStatusWindow time.Duration
	// WorkflowTaskTimeout is the workflow-task timeout every workflow
	// starts with (and keeps when it continues as new); 0 leaves
	// Temporal's default (config.DefaultWorkflowTaskTimeout says why
	// odaflow's is longer).
	WorkflowTaskTimeout time.Duration
	// StatusKey checks the seal of each ODA resource's status
	// (oda.AnnotationStatusSeal): a status odaflow did not write is sent
	// to its workflow to be written again (needsStatusRepair). nil checks
	// nothing.
	StatusKey []byte
	// Clock is the watcher's time: the child-status windows, the work
	// queue's delays and retries, and the latencies it measures. nil is
	// the real clock; tests pass a fake one.
	Clock clock.WithTicker
}

// Watcher is the event → signal bridge.
type Watcher struct {
	cfg     Config
	dyn     dynamic.Interface
	temp    Signaller
	log     *slog.Logger
	metrics *Metrics

	factory      dynamicinformer.DynamicSharedInformerFactory
	coreFactory  informers.SharedInformerFactory
	ingressF     informers.SharedInformerFactory
	listers      map[string]cache.GenericLister
	exposedIndex cache.Indexer
	// dependentIndex finds the DependentAPIs waiting for a specification.
	dependentIndex cache.Indexer
	adopt          *adoption
	sliceLister    discoverylisters.EndpointSliceLister
	svcLister      corelisters.ServiceLister
	queue          workqueue.TypedRateLimitingInterface[key]
	lanes          *twoLaneQueue
	// synced is set once every informer has listed: before that the
	// watcher has not seen the cluster and sends nothing.
	synced atomic.Bool

	mu sync.Mutex
	// sent remembers what was last signalled per resource (own workflow) or
	// per child (to its Component); deleted remembers the uid of an object
	// that left the cache until its deletion is delivered.
	sent map[key]string
	// repairs follows the status repairs in a row per resource
	// (repairDelay).
	repairs map[key]repairState
	uids    map[key]string
	parents map[key]string
	firstAt map[key]time.Time
	// failed are the resources whose status says Failed now; reached the
	// uids seen at their goal (so a lifecycle duration is observed once).
	failed  map[key]bool
	reached map[string]bool
	// gatherUntil is, per Component ("namespace/name"), when its pending
	// child statuses go out (ChildStatusWindow).
	gatherUntil map[string]time.Time
}

type key struct {
	Kind, Namespace, Name string
	ToParent              bool
}

// Clients are the Kubernetes clients the watcher reads through.
type Clients struct {
	Dynamic  dynamic.Interface
	Core     kubernetes.Interface
	Metadata metadata.Interface
}

// New builds a Watcher. Run runs it.
func New(cfg Config, clients Clients, temp Signaller, log *slog.Logger, metrics *Metrics) *Watcher {
	dyn, core := clients.Dynamic, clients.Core
	if cfg.Workers == 0 {
		// Signals are network round trips to Temporal (tens of ms under
		// load): enough of them in flight keeps a burst of 1,000 applies
		// from queueing behind each other.
		cfg.Workers = 32
	}
	if cfg.IngressSelector == nil {
		cfg.IngressSelector = labels.SelectorFromSet(labels.Set{"istio": "ingressgateway"})
	}
	if cfg.IngressNamespace == "" {
		cfg.IngressNamespace = config.DefaultIngressNamespace
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	lanes := newTwoLaneQueue()
	w := &Watcher{
		cfg: cfg, dyn: dyn, temp: temp, log: log, metrics: metrics,
		factory: dynamicinformer.NewDynamicSharedInformerFactory(dyn, 0),
		listers: map[string]cache.GenericLister{},
		lanes:   lanes,
		queue:   newWorkQueue(lanes, workqueue.NewTypedItemExponentialFailureRateLimiter[key](200*time.Millisecond, 2*time.Minute), cfg.Clock),
		sent:    map[key]string{},
		repairs: map[key]repairState{},
		uids:    map[key]string{},
		parents: map[key]string{},
		firstAt: map[key]time.Time{},
		failed:  map[key]bool{},
		reached: map[string]bool{},

		gatherUntil: map[string]time.Time{},
	}
	for _, kind := range oda.Kinds {
		if kind == oda.KindPublishedNotification || kind == oda.KindSubscribedNotification {
			continue // no workflow and nothing a Component waits for
		}
		inf := w.factory.ForResource(kind.GVR())
		w.listers[kind.Name] = inf.Lister()
		if kind == oda.KindExposedAPI {
			_ = inf.Informer().AddIndexers(exposedAPIIndexers())
			_ = inf.Informer().AddIndexers(specURLIndexers())
			w.exposedIndex = inf.Informer().GetIndexer()
		}
		if kind == oda.KindDependentAPI {
			_ = inf.Informer().AddIndexers(specURLIndexers())
			w.dependentIndex = inf.Informer().GetIndexer()
		}
		_, _ = inf.Informer().AddEventHandler(w.handler(kind.Name))
	}
	// EndpointSlices tell ExposedAPIs whether their implementation is up;
	// the ingress Service tells them their address.
	w.coreFactory = informers.NewSharedInformerFactory(core, 0)
	slices := w.coreFactory.Discovery().V1().EndpointSlices()
	w.sliceLister = slices.Lister()
	_, _ = slices.Informer().AddEventHandler(cache.ResourceEventHandlerDetailedFuncs{
		AddFunc:    func(obj any, initial bool) { w.onEndpointSlice(obj, initial) },
		UpdateFunc: func(_, obj any) { w.onEndpointSlice(obj, false) },
		DeleteFunc: func(obj any) { w.onEndpointSlice(obj, false) },
	})
	w.ingressF = informers.NewSharedInformerFactoryWithOptions(core, 0,
		informers.WithNamespace(cfg.IngressNamespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = cfg.IngressSelector.String() }))
	if clients.Metadata != nil {
		w.adopt = newAdoption(clients.Metadata, w)
	}
	svcs := w.ingressF.Core().V1().Services()
	w.svcLister = svcs.Lister()
	_, _ = svcs.Informer().AddEventHandler(cache.ResourceEventHandlerDetailedFuncs{
		AddFunc:    func(_ any, initial bool) { w.enqueueAllExposed(initial) },
		UpdateFunc: func(any, any) { w.enqueueAllExposed(false) },
		DeleteFunc: func(any) { w.enqueueAllExposed(false) },
	})
	return w
}

func (w *Watcher) ingressLister() ([]*corev1.Service, error) {
	return w.svcLister.List(labels.Everything())
}

// onEndpointSlice re-evaluates the ExposedAPIs implemented by the slice's
// Service, found through an index rather than by listing them all. A slice
// in the initial list is no news: its ExposedAPIs are only re-checked.
func (w *Watcher) onEndpointSlice(obj any, initial bool) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	slice, ok := obj.(*discoveryv1.EndpointSlice)
	if !ok || !w.cfg.Namespaces.Matches(slice.Namespace) {
		return
	}
	svc := slice.Labels[discoveryv1.LabelServiceName]
	if svc == "" {
		return
	}
	w.enqueueExposedBy(byImplementation, slice.Namespace+"/"+svc, initial)
}

func (w *Watcher) enqueueExposedBy(index, value string, recheck bool) {
	objs, err := w.exposedIndex.ByIndex(index, value)
	if err != nil {
		return
	}
	for _, o := range objs {
		if u, ok := o.(*unstructured.Unstructured); ok && w.cfg.Namespaces.Matches(u.GetNamespace()) {
			w.metrics.Events.WithLabelValues("EndpointSlice").Inc()
			w.enqueue(key{Kind: oda.KindExposedAPI.Name, Namespace: u.GetNamespace(), Name: u.GetName()}, recheck)
		}
	}
}

// enqueueAllExposed follows an ingress address change; those are rare.
func (w *Watcher) enqueueAllExposed(recheck bool) {
	for _, o := range w.exposedIndex.List() {
		if u, ok := o.(*unstructured.Unstructured); ok && w.cfg.Namespaces.Matches(u.GetNamespace()) {
			w.enqueue(key{Kind: oda.KindExposedAPI.Name, Namespace: u.GetNamespace(), Name: u.GetName()}, recheck)
		}
	}
}

func (w *Watcher) handler(kind string) cache.ResourceEventHandler {
	onEvent := func(oldObj, obj any, deleted, initial bool) {
		if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = tomb.Obj
		}
		old, _ := oldObj.(*unstructured.Unstructured)
		u, ok := obj.(*unstructured.Unstructured)
		if !ok || !w.cfg.Namespaces.Matches(u.GetNamespace()) {
			return
		}
		w.metrics.Events.WithLabelValues(kind).Inc()
		// An object in the initial list that odaflow has handled before is
		// most likely unchanged since: re-checked after the news.
		recheck := initial && u.GetAnnotations()[oda.AnnotationObservedHash] != ""
		own := key{Kind: kind, Namespace: u.GetNamespace(), Name: u.GetName()}
		now := w.cfg.Clock.Now()
		w.observeLifecycle(kind, old, u, deleted, now)
		w.mu.Lock()
		if deleted {
			w.uids[own] = string(u.GetUID())
			if parent, ok := ParentComponent(u); ok {
				// Under the child-status key too: the resource's own key
				// forgets its uid once its workflow has the deletion.
				toParent := key{Kind: kind, Namespace: u.GetNamespace(), Name: u.GetName(), ToParent: true}
				w.uids[toParent] = string(u.GetUID())
				w.parents[toParent] = parent
			}
		}
		if _, ok := w.firstAt[own]; !ok {
			w.firstAt[own] = now
		}
		w.mu.Unlock()
		if _, ok := w.cfg.Lifecycles[kind]; ok {
			w.enqueue(own, recheck)
		}
		if kind == oda.KindExposedAPI.Name {
			// A claim on a path prefix came or went: the others on it (and
			// on the path it left) may win or lose.
			path, _, _ := unstructured.NestedString(u.Object, "spec", "path")
			w.enqueuePathSiblings(u, path, recheck)
			if old != nil && old.GetUID() == u.GetUID() {
				if oldPath, _, _ := unstructured.NestedString(old.Object, "spec", "path"); oldPath != path {
					w.enqueuePathSiblings(u, oldPath, recheck)
				}
			}
			// A provider came, went or changed its url or readiness.
			w.enqueueDependants(recheck, u, old)
		}
		if kind == oda.KindComponent.Name && w.adopt != nil && !deleted && (old == nil || old.GetUID() != u.GetUID()) {
			// Workloads created before their Component were waiting for it.
			// Only its arrival: on its updates (every status write) the
			// workloads whose adoption is still in flight looked like
			// orphans again and were adopted a second time.
			w.enqueue(key{Kind: adoptionKind, Namespace: u.GetNamespace(), Name: u.GetName()}, recheck)
		}
		if kind != oda.KindComponent.Name {
			if parent, ok := ParentComponent(u); ok {
				w.enqueueChildStatus(key{Kind: kind, Namespace: u.GetNamespace(), Name: u.GetName(), ToParent: true}, parent, recheck)
			}
		}
	}
	return cache.ResourceEventHandlerDetailedFuncs{
		AddFunc:    func(obj any, initial bool) { onEvent(nil, obj, false, initial) },
		UpdateFunc: func(oldObj, obj any) { onEvent(oldObj, obj, false, false) },
		DeleteFunc: func(obj any) { onEvent(nil, obj, true, false) },
	}
}

// enqueue queues k in the news lane, or when recheck in the lane served
// after it (see twoLaneQueue).
func (w *Watcher) enqueue(k key, recheck bool) {
	if recheck {
		w.lanes.markRecheck(k)
	} else {
		w.lanes.markNews(k)
	}
	w.queue.Add(k)
}

// enqueueChildStatus queues a child's status for its Component at the end
// of the Component's gathering window (Config.ChildStatusWindow), opened by
// the first child change that finds none open. A re-check after a restart
// goes at once: it is almost always found known and sends nothing.
func (w *Watcher) enqueueChildStatus(k key, parent string, recheck bool) {
	if recheck || w.cfg.ChildStatusWindow <= 0 {
		w.enqueue(k, recheck)
		return
	}
	now := w.cfg.Clock.Now()
	component := k.Namespace + "/" + parent
	w.mu.Lock()
	until, open := w.gatherUntil[component]
	if !open || !until.After(now) {
		until = now.Add(w.cfg.ChildStatusWindow)
		w.gatherUntil[component] = until
	}
	w.mu.Unlock()
	w.lanes.markNews(k)
	w.queue.AddAfter(k, until.Sub(now))
}

// closeGathering forgets a Component's window once it has passed, so the
// map holds only the Components with child statuses on their way.
func (w *Watcher) closeGathering(namespace, parent string) {
	component := namespace + "/" + parent
	w.mu.Lock()
	if until, open := w.gatherUntil[component]; open && !until.After(w.cfg.Clock.Now()) {
		delete(w.gatherUntil, component)
	}
	w.mu.Unlock()
}

// enqueuePathSiblings re-evaluates the other served ExposedAPIs whose
// claims overlap u's claim on path.
func (w *Watcher) enqueuePathSiblings(u *unstructured.Unstructured, path string, recheck bool) {
	for _, other := range w.pathRivals(u, path) {
		w.enqueue(key{Kind: oda.KindExposedAPI.Name, Namespace: other.GetNamespace(), Name: other.GetName()}, recheck)
	}
}

// Run starts the informers and the signal workers and blocks until ctx ends.
func (w *Watcher) Run(ctx context.Context) error {
	defer w.queue.ShutDown()
	began := w.cfg.Clock.Now()
	w.factory.Start(ctx.Done())
	w.coreFactory.Start(ctx.Done())
	w.ingressF.Start(ctx.Done())
	if w.adopt != nil {
		w.adopt.factory.Start(ctx.Done())
		for gvr, ok := range w.adopt.factory.WaitForCacheSync(ctx.Done()) {
			if !ok {
				if ctx.Err() != nil {
					return nil
				}
				return fmt.Errorf("cache of %s did not sync", gvr.Resource)
			}
		}
	}
	for gvr, ok := range w.factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			if ctx.Err() != nil {
				return nil // stopped while starting
			}
			return fmt.Errorf("cache of %s did not sync", gvr.Resource)
		}
	}
	for _, f := range []informers.SharedInformerFactory{w.coreFactory, w.ingressF} {
		for typ, ok := range f.WaitForCacheSync(ctx.Done()) {
			if !ok {
				if ctx.Err() != nil {
					return nil
				}
				return fmt.Errorf("cache of %v did not sync", typ)
			}
		}
	}
	listed := w.cfg.Clock.Since(began)
	w.synced.Store(true)
	w.metrics.CacheSync.Set(listed.Seconds())
	w.metrics.QueueDepth.Set(float64(w.queue.Len()))
	w.log.Info("watcher caches synced", "namespaces", w.cfg.Namespaces.patterns, "took", listed.Round(time.Millisecond), "queued", w.queue.Len())
	var wg sync.WaitGroup
	for range w.cfg.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for w.processNext(ctx) {
			}
		}()
	}
	<-ctx.Done()
	w.queue.ShutDown()
	wg.Wait()
	w.factory.Shutdown()
	w.coreFactory.Shutdown()
	w.ingressF.Shutdown()
	if w.adopt != nil {
		w.adopt.factory.Shutdown()
	}
	return nil
}

// Synced reports whether every informer has listed (readiness).
func (w *Watcher) Synced() bool { return w.synced.Load() }

func (w *Watcher) processNext(ctx context.Context) bool {
	k, quit := w.queue.Get()
	if quit {
		return false
	}
	defer w.queue.Done(k)
	w.metrics.QueueDepth.Set(float64(w.queue.Len()))
	var err error
	if k.Kind == adoptionKind {
		err = w.syncAdoption(ctx, k)
	} else if k.ToParent {
		err = w.syncParent(ctx, k)
	} else {
		err = w.syncOwn(ctx, k)
	}
	if err != nil {
		if w.queue.NumRequeues(k) == 0 {
			// One clear line per failure streak, not one per retry.
			w.log.Warn("signal failed; retrying with backoff", "resource", oda.WorkflowID(k.Kind, k.Namespace, k.Name), "toParent", k.ToParent, "err", err)
		}
		w.queue.AddRateLimited(k)
		return true
	}
	w.queue.Forget(k)
	return true
}

func (w *Watcher) get(kind, ns, name string) (*unstructured.Unstructured, error) {
	obj, err := w.listers[kind].ByNamespace(ns).Get(name)
	if err != nil {
		return nil, err
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, fmt.Errorf("unexpected object type %T", obj)
	}
	return u, nil
}

// syncOwn signals a resource's own workflow when its desired state changed.
func (w *Watcher) syncOwn(ctx context.Context, k key) error {
	id := oda.WorkflowID(k.Kind, k.Namespace, k.Name)
	obj, err := w.get(k.Kind, k.Namespace, k.Name)
	if apierrors.IsNotFound(err) {
		return w.sendDeleted(ctx, k, id)
	}
	if err != nil {
		return err
	}
	ev := ResourceEventOf(obj)
	earlier := earlierDesiredStateHashes(obj)
	var surroundings any
	if k.Kind == oda.KindExposedAPI.Name {
		exp, err := w.exposureOf(obj)
		if err != nil {
			return err
		}
		ev.Exposure, surroundings = exp, exp
	}
	if k.Kind == oda.KindDependentAPI.Name {
		dep, err := w.dependencyOf(obj)
		if err != nil {
			return err
		}
		ev.Dependency, surroundings = dep, dep
	}
	if surroundings != nil {
		ev.Hash = hashWith(ev.Hash, surroundings)
		for i := range earlier {
			earlier[i] = hashWith(earlier[i], surroundings)
		}
	}
	observed := obj.GetAnnotations()[oda.AnnotationObservedHash]
	w.mu.Lock()
	last, seen := w.sent[k]
	forged := statusForged(w.cfg.StatusKey, obj)
	rs := w.repairs[k]
	if !forged {
		delete(w.repairs, k)
	}
	w.mu.Unlock()
	// What the workflow has handled once it writes: the state itself, also
	// after a repair, so that the repair's own write (sealed, the same
	// state) is no news.
	handled := ev.UID + "/" + ev.Hash
	// Once per forged version: other news about the resource (a sibling's
	// path, a provider) brings it here again before the repair lands.
	repair := forged && (rs.Streak == 0 || rs.ResourceVersion != obj.GetResourceVersion())
	if repair {
		now := w.cfg.Clock.Now()
		if d := repairDelay(rs.Streak, now.Sub(rs.At)); d > 0 {
			w.queue.AddAfter(k, d)
			return nil
		}
		if rs.Streak+1 == repairsAtOnce {
			w.log.Error("status still not sealed after odaflow wrote it again and again: is the worker given the watcher's --status-key-file? Repairs of it back off",
				"kind", k.Kind, "namespace", k.Namespace, "name", k.Name)
		}
		w.log.Info("status not written by odaflow; having it written again", "kind", k.Kind, "namespace", k.Namespace, "name", k.Name)
		ev.Hash = repairHash(ev.Hash, obj.GetResourceVersion())
		w.mu.Lock()
		w.repairs[k] = repairState{ResourceVersion: obj.GetResourceVersion(), Streak: rs.Streak + 1, At: now}
		w.mu.Unlock()
	}
	switch {
	case repair:
	case seen && last == handled:
		w.metrics.Dedup.WithLabelValues(k.Kind, "unchanged").Inc()
		w.done(k)
		return nil
	case !seen && (observed == ev.Hash || slices.Contains(earlier, observed)):
		// Restart: the workflow already handled exactly this state.
		w.metrics.Dedup.WithLabelValues(k.Kind, "observed").Inc()
		w.remember(k, ev.UID+"/"+ev.Hash)
		return nil
	}
	lc := w.cfg.Lifecycles[k.Kind]
	opts := w.startOptions(k.Kind, obj)
	input := lc.Input(k.Namespace, k.Name)
	if in, ok := input.(workflows.SearchAttributesInput); ok && w.cfg.SearchAttributes {
		input = in.WithSearchAttributes(true)
	}
	if _, err := w.temp.SignalWithStartWorkflow(ctx, id, workflows.SignalResourceEvent, ev, opts, lc.Workflow, input); err != nil {
		w.metrics.Signals.WithLabelValues(k.Kind, workflows.SignalResourceEvent, "error").Inc()
		return fmt.Errorf("signal-with-start %s: %w", id, err)
	}
	w.metrics.Signals.WithLabelValues(k.Kind, workflows.SignalResourceEvent, "ok").Inc()
	w.remember(k, handled)
	return nil
}

func (w *Watcher) sendDeleted(ctx context.Context, k key, id string) error {
	w.mu.Lock()
	uid := w.uids[k]
	w.mu.Unlock()
	if uid == "" {
		w.done(k)
		return nil
	}
	err := w.temp.SignalWorkflow(ctx, id, "", workflows.SignalResourceEvent, workflows.ResourceEvent{UID: uid, Deleted: true})
	var notFound *serviceerror.NotFound
	if err != nil && !errors.As(err, &notFound) {
		w.metrics.Signals.WithLabelValues(k.Kind, "deleted", "error").Inc()
		return fmt.Errorf("signal deletion to %s: %w", id, err)
	}
	w.metrics.Signals.WithLabelValues(k.Kind, "deleted", "ok").Inc()
	w.mu.Lock()
	delete(w.sent, k)
	delete(w.uids, k)
	w.mu.Unlock()
	w.done(k)
	return nil
}

// syncParent tells a child's Component about the child's status.
func (w *Watcher) syncParent(ctx context.Context, k key) error {
	obj, err := w.get(k.Kind, k.Namespace, k.Name)
	switch {
	case apierrors.IsNotFound(err):
		return w.sendChildDeleted(ctx, k)
	case err != nil:
		return err
	}
	parent, _ := ParentComponent(obj)
	w.closeGathering(k.Namespace, parent)
	if _, ok := w.cfg.Lifecycles[k.Kind]; ok && statusForged(w.cfg.StatusKey, obj) {
		// A status odaflow did not write is no news for the Component: its
		// own workflow writes it again (syncOwn), and that write is.
		w.metrics.Dedup.WithLabelValues(k.Kind, "child-forged").Inc()
		w.done(k)
		return nil
	}
	cs := ChildStatusOf(k.Kind, obj)
	digest := hashChild(cs)
	w.mu.Lock()
	last, seen := w.sent[k]
	w.mu.Unlock()
	if seen && last == digest {
		w.metrics.Dedup.WithLabelValues(k.Kind, "child-unchanged").Inc()
		w.done(k)
		return nil
	}
	if !seen && cs == (workflows.ChildStatus{Kind: cs.Kind, Name: cs.Name, UID: cs.UID}) {
		// A child with no status yet tells its Component nothing new: the
		// Component learnt the uid when it applied the child.
		w.metrics.Dedup.WithLabelValues(k.Kind, "child-empty").Inc()
		w.remember(k, digest)
		return nil
	}
	if !seen {
		if p, err := w.get(oda.KindComponent.Name, k.Namespace, parent); err == nil && ParentKnows(p, cs) {
			w.metrics.Dedup.WithLabelValues(k.Kind, "parent-knows").Inc()
			w.remember(k, digest)
			return nil
		}
	}
	id := oda.WorkflowID(oda.KindComponent.Name, k.Namespace, parent)
	err = w.temp.SignalWorkflow(ctx, id, "", workflows.SignalChildStatus, cs)
	var notFound *serviceerror.NotFound
	if errors.As(err, &notFound) {
		// No lifecycle yet: the Component's workflow reads its children's
		// status when it applies them.
		w.metrics.Signals.WithLabelValues(k.Kind, workflows.SignalChildStatus, "no-parent").Inc()
		w.remember(k, digest)
		return nil
	}
	if err != nil {
		w.metrics.Signals.WithLabelValues(k.Kind, workflows.SignalChildStatus, "error").Inc()
		return fmt.Errorf("signal child status to %s: %w", id, err)
	}
	w.metrics.Signals.WithLabelValues(k.Kind, workflows.SignalChildStatus, "ok").Inc()
	w.remember(k, digest)
	return nil
}

// sendChildDeleted tells a Component that one of its children disappeared,
// so that it re-creates a child it still wants.
func (w *Watcher) sendChildDeleted(ctx context.Context, k key) error {
	w.mu.Lock()
	uid, parent := w.uids[k], w.parents[k]
	w.mu.Unlock()
	w.closeGathering(k.Namespace, parent)
	if uid != "" && parent != "" {
		id := oda.WorkflowID(oda.KindComponent.Name, k.Namespace, parent)
		err := w.temp.SignalWorkflow(ctx, id, "", workflows.SignalChildStatus, workflows.ChildStatus{Kind: k.Kind, Name: k.Name, UID: uid, Deleted: true})
		var notFound *serviceerror.NotFound
		if err != nil && !errors.As(err, &notFound) {
			return fmt.Errorf("signal child deletion to %s: %w", id, err)
		}
	}
	w.mu.Lock()
	delete(w.sent, k)
	delete(w.uids, k)
	delete(w.parents, k)
	w.mu.Unlock()
	w.done(k)
	return nil
}

func (w *Watcher) remember(k key, v string) {
	w.mu.Lock()
	w.sent[k] = v
	w.mu.Unlock()
	w.done(k)
}

// done observes the event → signal latency of the oldest unhandled event.
func (w *Watcher) done(k key) {
	own := key{Kind: k.Kind, Namespace: k.Namespace, Name: k.Name}
	w.mu.Lock()
	at, ok := w.firstAt[own]
	delete(w.firstAt, own)
	w.mu.Unlock()
	if ok {
		w.metrics.Latency.WithLabelValues(k.Kind).Observe(w.cfg.Clock.Since(at).Seconds())
	}
}

// repairState is where a resource's status repairs stand: the version
// last repaired (asked for once), how many in a row, the last when.
type repairState struct {
	ResourceVersion string
	Streak          int
	At              time.Time
}

// hashWith folds the surroundings a workflow depends on into its hash, so a
// change of readiness or address re-drives it like a spec change.
func hashWith(base string, extra any) string {
	b, _ := json.Marshal(extra)
	sum := sha256.Sum256(append([]byte(base), b...))
	return hex.EncodeToString(sum[:])[:16]
}

func hashChild(cs workflows.ChildStatus) string {
	b, _ := json.Marshal(cs)
	return string(b)
}

// Metrics are the watcher's Prometheus metrics.
type Metrics struct {
	Events  *prometheus.CounterVec
	Signals *prometheus.CounterVec
	Dedup   *prometheus.CounterVec
	Latency *prometheus.HistogramVec
	// Lifecycle is the time from a resource's creation to its first
	// arrival at its goal; Failed the resources Failed now, FailedTotal
	// the transitions into Failed.
	Lifecycle   *prometheus.HistogramVec
	Failed      *prometheus.GaugeVec
	FailedTotal *prometheus.CounterVec
	// CacheSync is how long the informers took to list the cluster (0
	// until they have); QueueDepth the keys waiting for a decision.
	CacheSync  prometheus.Gauge
	QueueDepth prometheus.Gauge
}

// NewMetrics registers the watcher's metrics.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "odaflow_watcher_events_total", Help: "Kubernetes watch events seen, by kind.",
		}, []string{"kind"}),
		Signals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "odaflow_watcher_signals_total", Help: "Temporal signals sent, by kind, signal and result.",
		}, []string{"kind", "signal", "result"}),
		Dedup: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "odaflow_watcher_dedup_total", Help: "Events that needed no signal, by kind and reason.",
		}, []string{"kind", "reason"}),
		Latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "odaflow_watcher_event_to_signal_seconds", Help: "Time from a watch event to its signal (or the decision that none is needed).",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}, []string{"kind"}),
		Lifecycle: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "odaflow_lifecycle_duration_seconds",
			Help: "Time from a resource's creation to its first arrival at its goal (Component Complete, ExposedAPI Exposed, DependentAPI Resolved, IdentityConfig Ready), by kind.",
			// From a fraction of a second (everything simulated) to an hour
			// (a provider that came late).
			Buckets: prometheus.ExponentialBuckets(0.25, 2, 15),
		}, []string{"kind"}),
		Failed: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "odaflow_resources_failed", Help: "Resources whose status says Failed now, by kind.",
		}, []string{"kind"}),
		FailedTotal: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "odaflow_resources_failed_total", Help: "Resources seen turning Failed, by kind.",
		}, []string{"kind"}),
		CacheSync: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "odaflow_watcher_cache_sync_seconds", Help: "How long the informers took to list the cluster at start; 0 while they are listing.",
		}),
		QueueDepth: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "odaflow_watcher_queue_depth", Help: "Keys waiting for a signal decision.",
		}),
	}
	if reg != nil {
		reg.MustRegister(m.Events, m.Signals, m.Dedup, m.Latency, m.Lifecycle, m.Failed, m.FailedTotal, m.CacheSync, m.QueueDepth)
	}
	return m
}
