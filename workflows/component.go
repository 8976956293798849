package workflows

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/odaflow/odaflow/activities"
	"github.com/odaflow/odaflow/oda"
)

// ComponentInput starts (or continues) one Component's lifecycle.
type ComponentInput struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// State is carried across continue-as-new; nil on a fresh lifecycle.
	State *ComponentState `json:"state,omitempty"`
	// Pending is an event received by the previous run that belongs to this
	// one (a new uid under the same name starts a fresh lifecycle).
	Pending *ResourceEvent `json:"pending,omitempty"`
	// HistoryLimit continues-as-new after this many events, before the
	// server's own suggestion; 0 uses the default.
	HistoryLimit int `json:"historyLimit,omitempty"`
	// SearchAttributes keeps the DeploymentStatus search attribute equal to
	// deployment_status (the watcher sets it when the attributes are
	// registered on the Temporal namespace).
	SearchAttributes bool `json:"searchAttributes,omitempty"`
}

// WithSearchAttributes implements SearchAttributesInput.
func (in ComponentInput) WithSearchAttributes(on bool) any {
	in.SearchAttributes = on
	return in
}

// ComponentState is the Component workflow's whole memory.
type ComponentState struct {
	UID string `json:"uid"`
	// ResourceVersion is the object's version in the latest event.
	ResourceVersion string            `json:"resourceVersion,omitempty"`
	Generation      int64             `json:"generation"`
	Labels          map[string]string `json:"labels,omitempty"`
	Spec            map[string]any    `json:"spec,omitempty"`
	// SpecHash is the desired state last received; AppliedHash the one whose
	// children were last applied successfully (or found invalid).
	SpecHash    string `json:"specHash"`
	AppliedHash string `json:"appliedHash"`
	// Children are the children odaflow manages, in declaration order.
	Children []ChildRecord `json:"children,omitempty"`
	// SecretsManagementSpec is copied into status as the Canvas does.
	SecretsManagementSpec map[string]any `json:"secretsManagementSpec,omitempty"`
	Failure               *oda.Failure   `json:"failure,omitempty"`
	Failures              int            `json:"failures,omitempty"`
	// WrittenStatus is the hash of the last status written, so an unchanged
	// status is never written twice.
	WrittenStatus    string `json:"writtenStatus,omitempty"`
	DeploymentStatus string `json:"deploymentStatus,omitempty"`
	// StatusFence is the fence of the last status written (statusFence).
	StatusFence string         `json:"statusFence,omitempty"`
	Condition   *oda.Condition `json:"condition,omitempty"`
	// Finalizers seen on the object, and whether it is being deleted.
	Finalizers []string `json:"finalizers,omitempty"`
	Deleting   bool     `json:"deleting,omitempty"`
}

// ChildRecord is what the Component knows of one child.
type ChildRecord struct {
	Kind    string      `json:"kind"`
	Name    string      `json:"name"`
	Segment oda.Segment `json:"segment,omitempty"`
	Status  ChildStatus `json:"status"`
}

const defaultHistoryLimit = 10000

// ComponentWorkflow is the lifecycle of one ODA Component: it turns the spec
// into children, follows their status to Complete, follows every upgrade and
// ends when the Component is deleted. Children are garbage-collected through
// their owner references.
func ComponentWorkflow(ctx workflow.Context, in ComponentInput) error {
	c := &component{ns: in.Namespace, name: in.Name, historyLimit: in.HistoryLimit}
	if c.historyLimit == 0 {
		c.historyLimit = defaultHistoryLimit
	}
	if in.State != nil {
		c.st = *in.State
	}
	if err := workflow.SetQueryHandler(ctx, QueryExplain, c.explain); err != nil {
		return fmt.Errorf("register query: %w", err)
	}
	vis := newVisibility(ctx, in.SearchAttributes)
	events := workflow.GetSignalChannel(ctx, SignalResourceEvent)
	childCh := workflow.GetSignalChannel(ctx, SignalChildStatus)
	c.adoptCh = workflow.GetSignalChannel(ctx, SignalAdopt)
	if in.Pending != nil {
		c.onEvent(*in.Pending)
	}
	for {
		if c.next == nil && !c.gone && !c.dirty() {
			c.wait(ctx, events, childCh)
		}
		c.drain(ctx, events, childCh)
		switch {
		case c.next != nil:
			// A new object under the same name: a new lifecycle, never the
			// old one's state. The old one's children lose their kopf
			// finalizers first if it is gone (see successor).
			if c.gone {
				c.releaseChildFinalizers(ctx)
			}
			return workflow.NewContinueAsNewError(ctx, ComponentWorkflow, ComponentInput{
				Namespace: c.ns, Name: c.name, Pending: c.next, HistoryLimit: in.HistoryLimit, SearchAttributes: in.SearchAttributes,
			})
		case c.gone:
			c.releaseChildFinalizers(ctx)
			workflow.GetLogger(ctx).Info("component deleted; lifecycle ends", "component", c.ref().String())
			return nil
		}
		if err := c.reconcile(ctx); err != nil {
			return err
		}
		vis.publish(ctx, c.st.DeploymentStatus)
		if info := workflow.GetInfo(ctx); info.GetContinueAsNewSuggested() || info.GetCurrentHistoryLength() > c.historyLimit {
			c.drain(ctx, events, childCh)
			// A deferred write is not carried across: wait for it.
			if c.next == nil && !c.gone && !c.dirty() && !c.progress.pending() {
				st := c.st
				return workflow.NewContinueAsNewError(ctx, ComponentWorkflow, ComponentInput{
					Namespace: c.ns, Name: c.name, State: &st, HistoryLimit: in.HistoryLimit, SearchAttributes: in.SearchAttributes,
				})
			}
		}
	}
}

type component struct {
	ns, name     string
	st           ComponentState
	historyLimit int
	next         *ResourceEvent
	succ         successor
	gone         bool
	retryTimer   workflow.Future
	retryDue     bool
	statusDirty  bool
	adoptCh      workflow.ReceiveChannel
	adopt        []oda.WorkloadRef
	// progress holds back the write of an In-Progress phase, so that child
	// updates arriving meanwhile share one status write (deferProgress).
	progress progressTimer
	// deferredEvent is a Normal Event held back with a deferred write.
	deferredEvent *activities.Event
}

// progressTimer is a deferred status write's timer: how long it was set
// for, and whether it fired since the last reconcile.
type progressTimer struct {
	timer  workflow.Future
	cancel workflow.CancelFunc
	delay  time.Duration
	fired  bool
}

// pending reports whether a write is being held back.
func (p *progressTimer) pending() bool { return p.timer != nil }

// start sets the timer for d unless one is pending for no longer than d.
func (p *progressTimer) start(ctx workflow.Context, d time.Duration) {
	if p.timer != nil && d < p.delay {
		// A new phase does not wait for a refresh's longer delay.
		p.stop()
	}
	if p.timer == nil {
		timerCtx, cancel := workflow.WithCancel(ctx)
		p.timer, p.cancel, p.delay = workflow.NewTimer(timerCtx, d), cancel, d
	}
}

// stop cancels a pending timer: the write it held back is going out now,
// and a timer left running would cost a workflow task that writes nothing.
func (p *progressTimer) stop() {
	if p.timer == nil {
		return
	}
	p.cancel()
	p.timer, p.cancel = nil, nil
}

func (c *component) ref() oda.Ref {
	return oda.Ref{Kind: oda.KindComponent.Name, Namespace: c.ns, Name: c.name}
}

// dirty reports work that is due without waiting for a signal.
func (c *component) dirty() bool {
	return c.st.UID != "" && (c.st.SpecHash != c.st.AppliedHash && c.st.Failure == nil || c.retryDue || (c.statusDirty && !c.progress.pending()) || len(c.adopt) > 0)
}

// wait blocks until a signal or the retry timer.
func (c *component) wait(ctx workflow.Context, events, childCh workflow.ReceiveChannel) {
	sel := workflow.NewSelector(ctx)
	sel.AddReceive(events, func(ch workflow.ReceiveChannel, _ bool) {
		var ev ResourceEvent
		ch.Receive(ctx, &ev)
		c.onEvent(ev)
	})
	sel.AddReceive(childCh, func(ch workflow.ReceiveChannel, _ bool) {
		var cs ChildStatus
		ch.Receive(ctx, &cs)
		c.onChild(cs)
	})
	sel.AddReceive(c.adoptCh, func(ch workflow.ReceiveChannel, _ bool) {
		var a Adopt
		ch.Receive(ctx, &a)
		c.adopt = append(c.adopt, a.Workloads...)
	})
	if c.retryTimer != nil {
		sel.AddFuture(c.retryTimer, func(workflow.Future) {
			c.retryTimer = nil
			c.retryDue = true
		})
	}
	if c.progress.pending() {
		sel.AddFuture(c.progress.timer, func(workflow.Future) {
			c.progress.timer, c.progress.cancel = nil, nil
			c.progress.fired = true
		})
	}
	sel.Select(ctx)
}

// drain takes every signal already delivered, so a burst of child updates
// costs one status write.
func (c *component) drain(ctx workflow.Context, events, childCh workflow.ReceiveChannel) {
	for {
		var ev ResourceEvent
		if !events.ReceiveAsync(&ev) {
			break
		}
		c.onEvent(ev)
	}
	c.next = c.succ.resolve(c.next)
	for {
		var cs ChildStatus
		if !childCh.ReceiveAsync(&cs) {
			break
		}
		c.onChild(cs)
	}
	for {
		var a Adopt
		if !c.adoptCh.ReceiveAsync(&a) {
			break
		}
		c.adopt = append(c.adopt, a.Workloads...)
	}
}

func (c *component) onEvent(ev ResourceEvent) {
	if c.next != nil || c.gone {
		c.succ.observe(ev, c.st.UID)
		return
	}
	if c.st.UID != "" && ev.UID != c.st.UID {
		if ev.Deleted {
			return // the deletion of an older object: nothing of ours
		}
		next := ev
		c.next = &next
		return
	}
	if ev.Deleted {
		c.gone = true
		return
	}
	first := c.st.UID == ""
	c.st.UID = ev.UID
	c.st.ResourceVersion = ev.ResourceVersion
	c.st.Finalizers = ev.Finalizers
	c.st.Deleting = ev.Deleting
	if ev.Hash == c.st.SpecHash {
		return
	}
	c.st.SpecHash = ev.Hash
	c.st.Generation = ev.Generation
	c.st.Labels = ev.Labels
	c.st.Spec = ev.Spec
	c.st.Failure = nil
	c.st.Failures = 0
	if first {
		c.st.Children = childrenFromStatus(ev.Status)
	}
}

func (c *component) onChild(cs ChildStatus) {
	for i := range c.st.Children {
		ch := &c.st.Children[i]
		if ch.Kind != cs.Kind || ch.Name != cs.Name {
			continue
		}
		if cs.Deleted {
			if cs.UID == ch.Status.UID {
				// Someone deleted a child we want: apply again.
				ch.Status = ChildStatus{Kind: ch.Kind, Name: ch.Name}
				c.st.AppliedHash = ""
			}
			return
		}
		if ch.Status != cs {
			ch.Status = cs
			c.statusDirty = true
		}
		return
	}
}

// reconcile applies children when the desired state changed, then writes
// the status if it changed.
func (c *component) reconcile(ctx workflow.Context) error {
	if c.retryDue && c.st.Failure != nil && c.st.AppliedHash != c.st.SpecHash {
		// A failed apply's backoff is over: try again.
		c.st.Failure = nil
	}
	c.retryDue = false
	var event *activities.Event
	if c.st.Deleting {
		// Nothing to apply to a Component on its way out.
		c.st.AppliedHash = c.st.SpecHash
		return c.releaseFinalizers(ctx)
	}
	if c.st.SpecHash != c.st.AppliedHash && c.st.Failure == nil {
		event = c.applyChildren(ctx)
	}
	if len(c.adopt) > 0 {
		c.adoptWorkloads(ctx)
	}
	if c.deferProgress(ctx, event) {
		return nil
	}
	if event == nil {
		event = c.deferredEvent
	}
	c.deferredEvent = nil
	c.progress.stop()
	c.statusDirty = false
	return c.writeStatus(ctx, event)
}

// progressDelay is how long a Component must have been in progress before
// its In-Progress phase is written. A phase that ends sooner is never
// written: the write, its Event and the watch notifications it causes buy
// nothing when the next phase is a moment away (an install whose
// implementations are up already goes straight to Complete). A long phase
// (pods starting, an identity provider down) shows within this delay, and
// Complete and Failed are written at once.
const progressDelay = time.Second

// refreshDelay is how long a change that only refreshes the child entries
// of an In-Progress phase already written waits:
// under load each child is a second or more behind the previous one, and
// writing every url as it comes costs a Component write (the largest
// object, sent to every watcher) and a workflow task each; the phase shown
// stays true meanwhile, and Complete brings every entry at once.
const refreshDelay = 5 * time.Second

// deferProgress defers a write whose phase is In-Progress until
// progressDelay after the first write it deferred (refreshDelay when the
// phase is already written and only child entries changed), gathering
// every change meanwhile into one write; a Warning Event or a phase out of
// progress goes out at once and takes the deferred changes with it.
func (c *component) deferProgress(ctx workflow.Context, event *activities.Event) bool {
	fired := c.progress.fired
	c.progress.fired = false
	if event == nil && !c.statusDirty {
		return false // nothing new: writeStatus finds nothing to write
	}
	if fired {
		return false
	}
	if event != nil && event.Type != "Normal" {
		return false
	}
	phase := oda.DeploymentStatus(c.status())
	if !oda.InProgress(phase) {
		return false
	}
	if event != nil {
		c.deferredEvent = event
	}
	delay := progressDelay
	if phase == c.st.DeploymentStatus && c.deferredEvent == nil {
		delay = refreshDelay
	}
	c.statusDirty = true
	c.progress.start(ctx, delay)
	return true
}

// releaseFinalizers removes the kopf finalizer left by a Python Canvas (and
// odaflow's own) when the Component is being deleted: a Component needs no
// cleanup of its own, its children go with it through owner references.
func (c *component) releaseFinalizers(ctx workflow.Context) error {
	var ours []string
	for _, f := range c.st.Finalizers {
		if f == oda.KopfFinalizer || f == oda.Finalizer {
			ours = append(ours, f)
		}
	}
	if len(ours) == 0 {
		return nil
	}
	summary := "release finalizers"
	var kube *activities.Kube
	err := kubeCall(ctx, summary, kube.RemoveFinalizers, activities.RemoveFinalizersInput{Ref: c.ref(), UID: c.st.UID, Finalizers: ours}).Get(ctx, nil)
	if err != nil {
		workflow.GetLogger(ctx).Warn("releasing finalizers failed; retrying later", "component", c.ref().String(), "err", err)
		c.retryTimer = workflow.NewTimer(ctx, retryBackoff(1))
		return nil
	}
	c.st.Finalizers = nil
	return nil
}

// applyChildren applies the children the spec asks for and deletes the
// ones it no longer does. A spec whose ExposedAPIs a gateway cannot serve
// safely (a name too long for the gateway objects, a path such as "/" that
// takes other components' traffic) fails up front with InvalidSpec instead
// of creating the children.
func (c *component) applyChildren(ctx workflow.Context) *activities.Event {
	desired, errs := oda.DesiredChildren(c.name, c.st.Spec)
	if len(errs) == 0 {
		errs = oda.GatewayProblems(desired)
	}
	if len(errs) > 0 {
		c.st.Failure = &oda.Failure{Reason: "InvalidSpec", Message: "the Component spec is invalid: " + errs.Error()}
		c.st.AppliedHash = c.st.SpecHash
		return &activities.Event{Type: "Warning", Reason: "InvalidSpec", Message: c.st.Failure.Message}
	}
	c.st.SecretsManagementSpec = desired.SecretsManagement
	// The children whose workflows clean up outside the cluster are created
	// with odaflow's finalizer on, so their workflows need no request of
	// their own to add it.
	desired.Children = oda.WithCleanupFinalizers(desired.Children)
	wanted := map[string]bool{}
	for _, ch := range desired.Children {
		wanted[ch.Kind+"/"+ch.Name] = true
	}
	var del []oda.Ref
	for _, ch := range c.st.Children {
		if !wanted[ch.Kind+"/"+ch.Name] {
			del = append(del, oda.Ref{Kind: ch.Kind, Namespace: c.ns, Name: ch.Name})
		}
	}
	owner := oda.Owner{Name: c.name, Namespace: c.ns, UID: c.st.UID, Labels: c.st.Labels}
	summary := fmt.Sprintf("apply %d children, delete %d", len(desired.Children), len(del))
	var kube *activities.Kube
	var res activities.ApplyChildrenResult
	err := kubeCall(ctx, summary, kube.ApplyChildren, activities.ApplyChildrenInput{Owner: owner, Children: desired.Children, Delete: del}).Get(ctx, &res)
	if err != nil {
		c.st.Failures++
		reason := "ApplyFailed"
		var appErr *temporal.ApplicationError
		if errors.As(err, &appErr) && appErr.Type() == ErrTypeInvalid {
			reason = "ChildRejected"
		}
		c.st.Failure = &oda.Failure{Reason: reason, Message: "children could not be applied: " + rootMessage(err)}
		// Recover by itself: try again after a backoff, or at the next change.
		c.retryTimer = workflow.NewTimer(ctx, retryBackoff(c.st.Failures))
		return &activities.Event{Type: "Warning", Reason: reason, Message: c.st.Failure.Message}
	}
	previous := map[string]ChildStatus{}
	for _, ch := range c.st.Children {
		previous[ch.Kind+"/"+ch.Name] = ch.Status
	}
	records := make([]ChildRecord, 0, len(desired.Children))
	for i, ch := range desired.Children {
		applied := res.Children[i]
		st := ChildStatusFromObject(ch.Kind, ch.Name, applied.UID, applied.Status)
		if prev, ok := previous[ch.Kind+"/"+ch.Name]; ok && prev.UID == applied.UID && st == (ChildStatus{Kind: ch.Kind, Name: ch.Name, UID: applied.UID}) {
			// The apply answer has no status yet but a signal already told us more.
			st = prev
		}
		records = append(records, ChildRecord{Kind: ch.Kind, Name: ch.Name, Segment: ch.Segment, Status: st})
	}
	c.st.Children = records
	c.st.AppliedHash = c.st.SpecHash
	c.st.Failures = 0
	return &activities.Event{Type: "Normal", Reason: "ChildrenApplied", Message: fmt.Sprintf("%d children applied, %d removed", len(records), len(del))}
}

// releaseChildFinalizers takes the kopf finalizer off the Component's
// children whose kinds have no odaflow lifecycle of their own (a Python
// Canvas put it there for its delete handlers). Without this, the garbage
// collector's deletion of those children would hang once the Python
// operators are gone. Children with their own workflow release it there.
func (c *component) releaseChildFinalizers(ctx workflow.Context) {
	var kube *activities.Kube
	futures := make([]workflow.Future, 0, len(c.st.Children))
	for _, ch := range c.st.Children {
		if ch.Kind == oda.KindExposedAPI.Name || ch.Status.UID == "" {
			continue
		}
		futures = append(futures, kubeCall(ctx, "release the kopf finalizer of "+ch.Kind+" "+ch.Name, kube.RemoveFinalizers, activities.RemoveFinalizersInput{
			Ref: oda.Ref{Kind: ch.Kind, Namespace: c.ns, Name: ch.Name}, UID: ch.Status.UID, Finalizers: []string{oda.KopfFinalizer},
		}))
	}
	for _, f := range futures {
		if err := f.Get(ctx, nil); err != nil {
			workflow.GetLogger(ctx).Warn("could not release a child's kopf finalizer", "component", c.ref().String(), "err", err)
		}
	}
}

// adoptWorkloads makes the Component the owner of workloads carrying its
// label, so that uninstalling the Component removes them (§2.1.8).
func (c *component) adoptWorkloads(ctx workflow.Context) {
	refs := c.adopt
	c.adopt = nil
	owner := oda.Owner{Name: c.name, Namespace: c.ns, UID: c.st.UID}
	var kube *activities.Kube
	err := kubeCall(ctx, fmt.Sprintf("adopt %d workloads", len(refs)), kube.AdoptWorkloads,
		activities.AdoptInput{Owner: owner, Workloads: refs}).Get(ctx, nil)
	if err != nil {
		// The watcher asks again on the workloads' next change; the failure
		// is visible on the activity in the Web UI.
		workflow.GetLogger(ctx).Warn("adoption failed", "component", c.ref().String(), "err", err)
	}
}

// status derives the Canvas status from the children.
func (c *component) status() oda.ComponentStatus {
	s := oda.ComponentStatus{
		APIs:                  map[oda.Segment][]oda.APIEntry{},
		DependentAPIs:         map[oda.Segment][]oda.APIEntry{},
		SecretsManagementSpec: c.st.SecretsManagementSpec,
		Failure:               c.st.Failure,
	}
	for _, ch := range c.st.Children {
		entry := oda.APIEntry{
			Name: ch.Name, UID: ch.Status.UID, Ready: ch.Status.Ready, URL: ch.Status.URL,
			DeveloperUI: ch.Status.DeveloperUI, IP: ch.Status.IP, Path: ch.Status.Path,
			Port: ch.Status.Port, Implementation: ch.Status.Implementation,
		}
		switch ch.Kind {
		case oda.KindExposedAPI.Name:
			s.APIs[ch.Segment] = append(s.APIs[ch.Segment], entry)
		case oda.KindDependentAPI.Name:
			s.DependentAPIs[ch.Segment] = append(s.DependentAPIs[ch.Segment], entry)
		case oda.KindSecretsManagement.Name:
			s.SecretsManagement = &oda.SecretsEntry{Name: ch.Name, UID: ch.Status.UID, Ready: ch.Status.Ready}
		case oda.KindIdentityConfig.Name:
			if ch.Status.IdentityProvider != "" {
				s.Identity = &oda.IdentityStatus{IdentityProvider: ch.Status.IdentityProvider, ListenerRegistered: ch.Status.ListenerRegistered}
			}
		case oda.KindPublishedNotification.Name:
			s.PublishedEvents = append(s.PublishedEvents, oda.EventEntry{Name: ch.Name, UID: ch.Status.UID})
		case oda.KindSubscribedNotification.Name:
			s.SubscribedEvents = append(s.SubscribedEvents, oda.EventEntry{Name: ch.Name, UID: ch.Status.UID})
		}
	}
	return s
}

func (c *component) writeStatus(ctx workflow.Context, event *activities.Event) error {
	s := c.status()
	now := workflow.Now(ctx).UTC().Format(time.RFC3339)
	cond := oda.ReadyCondition(s, c.st.Generation, c.st.Condition, now)
	status := oda.StatusObject(s, cond)
	hash := hashOf(status, c.st.SpecHash)
	if hash == c.st.WrittenStatus && event == nil {
		return nil
	}
	phase := oda.DeploymentStatus(s)
	if phase != c.st.DeploymentStatus && (event == nil || event.Type == "Normal") {
		typ := "Normal"
		if phase == oda.StatusFailed {
			typ = "Warning"
		}
		event = &activities.Event{Type: typ, Reason: "DeploymentStatus", Message: "deployment_status is now " + phase}
		if phase == oda.StatusFailed && c.st.Failure != nil {
			event.Message += ": " + c.st.Failure.Message
		}
	}
	summary := "write status: " + phase
	var kube *activities.Kube
	fence := statusFence(ctx, c.st.StatusFence)
	err := kubeCall(ctx, summary, kube.WriteStatus, activities.WriteStatusInput{
		Ref: c.ref(), UID: c.st.UID, Status: status, ObservedHash: c.st.AppliedHash, Event: event,
		Replace: c.st.WrittenStatus != "", Fence: fence, ResourceVersion: firstWriteVersion(c.st.WrittenStatus == "", c.st.ResourceVersion),
	}).Get(ctx, nil)
	if err != nil {
		// The apiserver stayed unreachable past the retry budget; try again
		// later. The workflow's state is intact.
		workflow.GetLogger(ctx).Warn("status write failed; retrying later", "component", c.ref().String(), "err", err)
		c.retryTimer = workflow.NewTimer(ctx, retryBackoff(1))
		return nil
	}
	c.st.WrittenStatus = hash
	c.st.StatusFence = fence.String()
	c.st.DeploymentStatus = phase
	c.st.Condition = &cond
	return nil
}

func (c *component) explain() (Explanation, error) {
	s := c.status()
	e := Explanation{Resource: c.ref().String(), UID: c.st.UID, DeploymentStatus: oda.DeploymentStatus(s), Failure: c.st.Failure}
	for _, ch := range c.st.Children {
		e.Children = append(e.Children, ch.Status)
	}
	return e, nil
}

// Explanation answers the explain query.
type Explanation struct {
	Resource         string        `json:"resource"`
	UID              string        `json:"uid"`
	DeploymentStatus string        `json:"deploymentStatus"`
	Failure          *oda.Failure  `json:"failure,omitempty"`
	Children         []ChildStatus `json:"children,omitempty"`
}

// childrenFromStatus recovers the children recorded in a Component's status
// by an earlier lifecycle or by the Python Canvas, so that children removed
// from the spec while odaflow was not running are still deleted.
func childrenFromStatus(status map[string]any) []ChildRecord {
	var out []ChildRecord
	type list struct {
		key, kind string
		seg       oda.Segment
	}
	var lists []list
	for _, seg := range oda.Segments {
		lists = append(lists, list{seg.ExposedStatusKey(), oda.KindExposedAPI.Name, seg}, list{seg.DependentStatusKey(), oda.KindDependentAPI.Name, seg})
	}
	for _, l := range lists {
		items, _ := status[l.key].([]any)
		for _, it := range items {
			m, _ := it.(map[string]any)
			name, _ := m["name"].(string)
			if name == "" {
				continue
			}
			out = append(out, ChildRecord{Kind: l.kind, Name: name, Segment: l.seg, Status: ChildStatus{Kind: l.kind, Name: name}})
		}
	}
	if m, _ := status["securitySecretsManagement"].(map[string]any); m != nil {
		if name, _ := m["name"].(string); name != "" {
			out = append(out, ChildRecord{Kind: oda.KindSecretsManagement.Name, Name: name, Status: ChildStatus{Kind: oda.KindSecretsManagement.Name, Name: name}})
		}
	}
	return out
}

// ChildStatusFromObject reads what the Component needs from a child's
// status; the watcher digests children with it too, so both agree.
func ChildStatusFromObject(kind, name, uid string, status map[string]any) ChildStatus {
	cs := ChildStatus{Kind: kind, Name: name, UID: uid}
	str := func(m map[string]any, k string) string { s, _ := m[k].(string); return s }
	impl, _ := status["implementation"].(map[string]any)
	cs.Ready, _ = impl["ready"].(bool)
	switch kind {
	case oda.KindExposedAPI.Name:
		api, _ := status["apiStatus"].(map[string]any)
		cs.URL, cs.DeveloperUI, cs.IP = str(api, "url"), str(api, "developerUI"), str(api, "ip")
		cs.Path, cs.Implementation = str(api, "path"), str(api, "implementation")
		cs.Port = portOf(api["port"])
	case oda.KindDependentAPI.Name:
		dep, _ := status["depapiStatus"].(map[string]any)
		cs.URL = str(dep, "url")
	case oda.KindIdentityConfig.Name:
		id, _ := status["identityConfig"].(map[string]any)
		cs.IdentityProvider = str(id, "identityProvider")
		cs.ListenerRegistered, _ = id["listenerRegistered"].(bool)
	case oda.KindPublishedNotification.Name, oda.KindSubscribedNotification.Name:
		cs.Ready = str(status, "status") != ""
	}
	return cs
}

func portOf(v any) *int64 {
	switch p := v.(type) {
	case int64:
		return &p
	case float64:
		n := int64(p)
		return &n
	case json.Number:
		if n, err := p.Int64(); err == nil {
			return &n
		}
	}
	return nil
}

func hashOf(parts ...any) string {
	h := sha256.New()
	for _, p := range parts {
		b, _ := json.Marshal(p)
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

func rootMessage(err error) string {
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		return appErr.Error()
	}
	return err.Error()
}
