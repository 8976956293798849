package workflows

import (
	"strconv"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/odaflow/odaflow/activities"
	"github.com/odaflow/odaflow/oda"
)

// ResourceState is the memory every per-resource workflow shares: the
// resource's desired state as the watcher last reported it, what has been
// handled, and the failure streak. It travels through Continue-As-New inside
// each workflow's own state.
type ResourceState struct {
	UID string `json:"uid"`
	// ResourceVersion is the object's version in the latest event.
	ResourceVersion string            `json:"resourceVersion,omitempty"`
	Generation      int64             `json:"generation"`
	Labels          map[string]string `json:"labels,omitempty"`
	Annotations     map[string]string `json:"annotations,omitempty"`
	Spec            map[string]any    `json:"spec,omitempty"`
	Finalizers      []string          `json:"finalizers,omitempty"`
	Deleting        bool              `json:"deleting,omitempty"`
	// Hash is the desired state last received, DoneHash the one last
	// handled: equal hashes mean nothing to do.
	Hash     string `json:"hash"`
	DoneHash string `json:"doneHash"`
	// Phase and Condition are what the status says now; Failure why the
	// last attempt failed, Failures how many attempts failed in a row.
	Phase     string         `json:"phase,omitempty"`
	Condition *oda.Condition `json:"condition,omitempty"`
	Failure   *oda.Failure   `json:"failure,omitempty"`
	Failures  int            `json:"failures,omitempty"`
	// StatusFence is the fence of the last status written (statusFence).
	StatusFence string `json:"statusFence,omitempty"`
}

// resourceKind is what one kind of resource adds to the shared loop.
type resourceKind interface {
	// reconcile acts on the current state (r.st.Deleting included) and
	// arranges any later wake-up through r.retryAfter or its own waits.
	reconcile(ctx workflow.Context, r *resourceLoop)
	// waits adds the kind's own wake-ups (a drift-check timer, another
	// signal channel) to the selector the loop blocks on; a callback that
	// needs work done calls r.wake().
	waits(ctx workflow.Context, r *resourceLoop, sel workflow.Selector)
	// continueAsNew returns the error that restarts the workflow with the
	// kind's input: with pending set (a new object under the same name)
	// nothing of the old state is carried, otherwise all of it.
	continueAsNew(ctx workflow.Context, r *resourceLoop, pending *ResourceEvent) error
}

// resourceLoop runs the lifecycle every child kind shares: the watcher's
// events drive it, a new uid under the same name starts a fresh lifecycle,
// a failed attempt waits for a backoff timer (never a busy loop), the object
// disappearing ends it, and Continue-As-New bounds the history.
type resourceLoop struct {
	kind  resourceKind
	ref   oda.Ref
	st    *ResourceState
	limit int

	next     *ResourceEvent
	succ     successor
	gone     bool
	due      bool
	retry    workflow.Future
	retryDue bool
	// retrying is true in a reconcile the retry timer brought.
	retrying bool
	// released is set once the finalizers are off: what remains is the
	// object's disappearance (a Deleted event ends the workflow).
	released bool
	// vis keeps the DeploymentStatus search attribute equal to the phase;
	// nil for a kind that does not ask for it.
	vis *visibility
}

func newResourceLoop(ref oda.Ref, st *ResourceState, historyLimit int) *resourceLoop {
	if historyLimit == 0 {
		historyLimit = defaultHistoryLimit
	}
	return &resourceLoop{ref: ref, st: st, limit: historyLimit}
}

// run is the loop; pending is the event a Continue-As-New carried over.
func (r *resourceLoop) run(ctx workflow.Context, kind resourceKind, pending *ResourceEvent) error {
	r.kind = kind
	events := workflow.GetSignalChannel(ctx, SignalResourceEvent)
	if pending != nil {
		r.onEvent(*pending)
	}
	for {
		if r.next == nil && !r.gone && !r.dirty() {
			sel := workflow.NewSelector(ctx)
			sel.AddReceive(events, func(ch workflow.ReceiveChannel, _ bool) {
				var ev ResourceEvent
				ch.Receive(ctx, &ev)
				r.onEvent(ev)
			})
			if r.retry != nil {
				sel.AddFuture(r.retry, func(workflow.Future) {
					r.retry = nil
					r.retryDue = true
				})
			}
			kind.waits(ctx, r, sel)
			sel.Select(ctx)
		}
		r.drain(ctx, events)
		switch {
		case r.next != nil:
			return kind.continueAsNew(ctx, r, r.next)
		case r.gone:
			if e, ok := kind.(ender); ok {
				e.ended(ctx, r)
			}
			return nil
		case !r.dirty():
			continue
		}
		r.retrying = r.retryDue
		r.retryDue, r.due = false, false
		r.st.DoneHash = r.st.Hash
		kind.reconcile(ctx, r)
		r.vis.publish(ctx, r.st.Phase)
		if info := workflow.GetInfo(ctx); info.GetContinueAsNewSuggested() || info.GetCurrentHistoryLength() > r.limit {
			r.drain(ctx, events)
			if r.next == nil && !r.gone && !r.dirty() && !holdsContinueAsNew(kind) {
				return kind.continueAsNew(ctx, r, nil)
			}
		}
	}
}

// dirty reports whether there is work: a new desired state, a retry whose
// backoff ran out, or a wake-up from the kind's own waits.
func (r *resourceLoop) dirty() bool {
	return r.st.UID != "" && (r.st.Hash != r.st.DoneHash || r.retryDue || r.due)
}

// wake asks for another reconcile (from a kind's own wait callbacks).
func (r *resourceLoop) wake() { r.due = true }

func (r *resourceLoop) drain(ctx workflow.Context, events workflow.ReceiveChannel) {
	var ev ResourceEvent
	for events.ReceiveAsync(&ev) {
		r.onEvent(ev)
		ev = ResourceEvent{}
	}
	r.next = r.succ.resolve(r.next)
	if d, ok := r.kind.(drainer); ok {
		d.drain(ctx, r)
	}
}

// The optional parts of a resourceKind.
type (
	// drainer takes the kind's own signals already delivered, with the
	// resource's events, so that a burst of them costs one reconcile.
	drainer interface {
		drain(ctx workflow.Context, r *resourceLoop)
	}
	// continueAsNewHolder holds Continue-As-New back while it has work in
	// flight that a new run would not carry (a deferred write).
	continueAsNewHolder interface {
		holdsContinueAsNew() bool
	}
	// ender acts when the object is gone, before the workflow ends.
	ender interface {
		ended(ctx workflow.Context, r *resourceLoop)
	}
)

func holdsContinueAsNew(kind resourceKind) bool {
	h, ok := kind.(continueAsNewHolder)
	return ok && h.holdsContinueAsNew()
}

func (r *resourceLoop) onEvent(ev ResourceEvent) {
	if r.next != nil || r.gone {
		r.succ.observe(ev, r.st.UID)
		return
	}
	if r.st.UID != "" && ev.UID != r.st.UID {
		if !ev.Deleted {
			next := ev
			r.next = &next
		}
		return
	}
	if ev.Deleted {
		r.gone = true
		return
	}
	first := r.st.UID == ""
	r.st.UID = ev.UID
	r.st.ResourceVersion = ev.ResourceVersion
	r.st.Finalizers = ev.Finalizers
	r.st.Deleting = ev.Deleting
	if ev.Hash == r.st.Hash {
		return
	}
	r.st.Hash = ev.Hash
	r.st.Generation = ev.Generation
	r.st.Labels = ev.Labels
	r.st.Annotations = ev.Annotations
	r.st.Spec = ev.Spec
	if o, ok := r.kind.(eventObserver); ok {
		o.observe(ev, first)
	}
}

// eventObserver is a kind that reads more of an event than the shared
// state (the cluster state the watcher attaches, the status an earlier
// lifecycle left); first is true for the lifecycle's first event.
type eventObserver interface {
	observe(ev ResourceEvent, first bool)
}

// retryAfterBackoff schedules the next attempt after a failure: one minute,
// doubling, at most ten. Until the timer fires the workflow waits, so an
// external system that keeps failing costs one attempt per backoff step.
func (r *resourceLoop) retryAfterBackoff(ctx workflow.Context) {
	r.st.Failures++
	r.retry = workflow.NewTimer(ctx, retryBackoff(r.st.Failures))
}

// retryAfter schedules a wake-up after d (a re-check while waiting for
// something that sends no event, such as pods restarting).
func (r *resourceLoop) retryAfter(ctx workflow.Context, d time.Duration, summary string) {
	r.retry = workflow.NewTimerWithOptions(ctx, d, workflow.TimerOptions{Summary: summary})
}

// succeeded ends the failure streak. The failure itself stays until the
// next report replaces it, so that report can tell a recovery (and record
// an Event for it) from a steady state.
func (r *resourceLoop) succeeded() {
	r.st.Failures = 0
}

// quietFirstReport is true for the first status a resource that belongs to
// a Component reports: its Component's
// DeploymentStatus Event already tells that the step is done, as it does
// for ExposedAPIs, which never recorded one. Later phase changes, a
// recovery and every failure still record an Event.
func (r *resourceLoop) quietFirstReport() bool {
	return r.st.Phase == "" && r.st.Failure == nil && r.st.Labels[oda.LabelComponentName] != ""
}

// report writes the resource's status with a Ready condition for phase and
// records an Event when the phase changes (and on every failure). status
// holds the kind's own keys; the condition is added here. A failed write is
// left to the next attempt: the state keeps the previous phase so the Event
// is not lost.
func (r *resourceLoop) report(ctx workflow.Context, phase string, ready bool, failure *oda.Failure, status map[string]any) {
	now := workflow.Now(ctx).UTC().Format(time.RFC3339)
	cond := oda.Transition(r.st.Condition, readyCondition(phase, ready, failure, r.st.Generation), now)
	if status == nil {
		status = map[string]any{}
	}
	// A kind may add conditions of its own; Ready comes first.
	extra, _ := status["conditions"].([]any)
	status["conditions"] = append([]any{oda.ConditionMap(cond)}, extra...)
	event := reportEvent(r.st.Phase, r.st.Failure, phase, failure, cond.Message, r.quietFirstReport())
	var kube *activities.Kube
	fence := statusFence(ctx, r.st.StatusFence)
	err := kubeCall(ctx, "report "+phase, kube.WriteStatus, activities.WriteStatusInput{
		Ref: r.ref, UID: r.st.UID, Status: status, ObservedHash: r.st.Hash, Event: event, Replace: r.st.Phase != "", Fence: fence,
		ResourceVersion: firstWriteVersion(r.st.Phase == "", r.st.ResourceVersion),
	}).Get(ctx, nil)
	if err != nil {
		// The apiserver refused for minutes; try the whole step again later.
		r.retryAfterBackoff(ctx)
		return
	}
	r.st.Phase, r.st.Condition, r.st.Failure = phase, &cond, failure
	r.st.StatusFence = fence.String()
}

// phaseMessages explain the phases whose name alone says little; any other
// phase is its own message.
var phaseMessages = map[string]string{
	PhaseExposed:  "exposed through the gateway with a ready implementation",
	PhaseWaiting:  "the gateway's ingress has no address yet; the url follows when it has one",
	PhaseNotReady: "the implementation Service has no ready endpoint",
}

// readyCondition is the Ready condition for a phase: True when ready, with
// the failure's reason and message when there is one, the phase's
// otherwise. Its lastTransitionTime is oda.Transition's to set.
func readyCondition(phase string, ready bool, failure *oda.Failure, generation int64) oda.Condition {
	c := oda.Condition{Type: "Ready", Status: "False", Reason: phase, Message: phase, ObservedGeneration: generation}
	if m, ok := phaseMessages[phase]; ok {
		c.Message = m
	}
	if ready {
		c.Status = "True"
	}
	if failure != nil {
		c.Reason, c.Message = failure.Reason, failure.Message
	}
	return c
}

// reportEvent is the Event a status report records, nil for none: a
// Warning for a failure of a new reason (or in a new phase), a Normal one
// for a new phase or a recovery, except for a first report that quiet says
// someone else tells (the resource's Component). The same failure with a
// new message (a count, an attempt number) updates the status, not the
// Events.
func reportEvent(prevPhase string, prevFailure *oda.Failure, phase string, failure *oda.Failure, message string, quiet bool) *activities.Event {
	switch {
	case failure != nil && (prevFailure == nil || prevFailure.Reason != failure.Reason || prevPhase != phase):
		return &activities.Event{Type: "Warning", Reason: failure.Reason, Message: failure.Message}
	case failure == nil && (phase != prevPhase || prevFailure != nil) && !quiet:
		return &activities.Event{Type: "Normal", Reason: phase, Message: message}
	}
	return nil
}

// firstWriteVersion is the resourceVersion that guards a lifecycle's first
// status write (empty for any later one, which its fence guards).
func firstWriteVersion(first bool, resourceVersion string) string {
	if !first {
		return ""
	}
	return resourceVersion
}

// statusFence is the fence of a status write this workflow task makes,
// after the write last recorded (previous): see activities.StatusFence.
// Both parts come from the workflow's history, so replay computes the same.
func statusFence(ctx workflow.Context, previous string) *activities.StatusFence {
	info := workflow.GetInfo(ctx)
	return &activities.StatusFence{RunStart: info.WorkflowStartTime.UnixNano(), Seq: int64(info.GetCurrentHistoryLength()), Previous: previous}
}

// ensureFinalizer puts odaflow's finalizer on the resource before the first
// external side effect, so that deleting it waits for the cleanup.
func (r *resourceLoop) ensureFinalizer(ctx workflow.Context) error {
	for _, f := range r.st.Finalizers {
		if f == oda.Finalizer {
			return nil
		}
	}
	var kube *activities.Kube
	return kubeCall(ctx, "add finalizer", kube.EnsureFinalizer, activities.EnsureFinalizerInput{Ref: r.ref, UID: r.st.UID}).Get(ctx, nil)
}

// maxCleanupFailures is how many failed cleanup attempts (about 45 minutes
// of backoff) pass before a deletion is reported as blocked.
const maxCleanupFailures = 6

// finishDeletion runs cleanup (the kind's external side effects; nil for a
// kind with none), then releases the finalizers. Cleanup that keeps
// failing is retried with backoff; after maxCleanupFailures attempts the
// resource says so (CleanupBlocked, with an Event naming the way out), and
// the skip-cleanup annotation releases it without cleaning up.
func (r *resourceLoop) finishDeletion(ctx workflow.Context, what string, cleanup func(workflow.Context) error) {
	if r.released {
		return
	}
	skip := cleanup != nil && r.st.Annotations[oda.AnnotationSkipCleanup] == "true"
	if cleanup != nil && !skip {
		if err := cleanup(ctx); err != nil {
			r.retryAfterBackoff(ctx)
			if r.st.Failures >= maxCleanupFailures {
				r.report(ctx, "CleanupBlocked", false, &oda.Failure{
					Reason: "CleanupBlocked",
					Message: "could not remove " + what + " after " + strconv.Itoa(r.st.Failures) + " attempts: " + rootMessage(err) +
						"; to release the resource without cleaning up, annotate it " + oda.AnnotationSkipCleanup + "=true",
				}, nil)
			}
			return
		}
	}
	finalizers := []string{oda.Finalizer, oda.KopfFinalizer}
	var kube *activities.Kube
	if skip {
		// Say what was left behind, on the object's Events, before it goes.
		_ = kubeCall(ctx, "record skipped cleanup", kube.WriteStatus, activities.WriteStatusInput{
			Ref: r.ref, UID: r.st.UID, Status: map[string]any{},
			Event: &activities.Event{Type: "Warning", Reason: "CleanupSkipped", Message: what + " left in place on request (" + oda.AnnotationSkipCleanup + ")"},
		}).Get(ctx, nil)
	}
	if err := kubeCall(ctx, "release finalizers", kube.RemoveFinalizers, activities.RemoveFinalizersInput{
		Ref: r.ref, UID: r.st.UID, Finalizers: finalizers,
	}).Get(ctx, nil); err != nil {
		r.retryAfterBackoff(ctx)
		return
	}
	r.released = true
}

// driftCheck is the periodic re-check of a resource whose external side
// (Keycloak, Vault) can change behind odaflow's back: a durable timer with a
// summary, so the Web UI shows what the workflow waits for.
type driftCheck struct {
	timer workflow.Future
	due   bool
}

// arm adds the pending timer (started if none is) to the selector the loop
// blocks on; when it fires, the check is due and the loop reconciles.
func (d *driftCheck) arm(ctx workflow.Context, r *resourceLoop, sel workflow.Selector, interval time.Duration, summary string) {
	if d.timer == nil {
		d.timer = workflow.NewTimerWithOptions(ctx, interval, workflow.TimerOptions{Summary: summary})
	}
	sel.AddFuture(d.timer, func(workflow.Future) {
		d.timer = nil
		d.due = true
		r.wake()
	})
}

// take reports whether a check is due, and clears it.
func (d *driftCheck) take() bool {
	due := d.due
	d.due = false
	return due
}

// stop forgets the pending timer (it still fires, unheard): no check while
// the resource is failing or going away.
func (d *driftCheck) stop() { d.timer = nil }
