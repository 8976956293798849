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

// ComponentState is the Component workflow's whole memory. Its resource
// state's Phase is deployment_status, and its Failure the failure the
// status reports (an invalid spec, children that could not be applied).
type ComponentState struct {
	Resource ResourceState `json:"resource"`
	// AppliedHash is the desired state whose children were last applied
	// successfully (or found invalid).
	AppliedHash string `json:"appliedHash,omitempty"`
	// Children are the children odaflow manages, in declaration order.
	Children []ChildRecord `json:"children,omitempty"`
	// SecretsManagementSpec is copied into status as the Canvas does.
	SecretsManagementSpec map[string]any `json:"secretsManagementSpec,omitempty"`
	// WrittenStatus is the hash of the last status written, so an unchanged
	// status is never written twice.
	WrittenStatus string `json:"writtenStatus,omitempty"`
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
	c := &component{ns: in.Namespace, name: in.Name, historyLimit: in.HistoryLimit, searchAttributes: in.SearchAttributes}
	if in.State != nil {
		c.st = *in.State
	}
	c.loop = newResourceLoop(c.ref(), &c.st.Resource, in.HistoryLimit)
	if err := workflow.SetQueryHandler(ctx, QueryExplain, c.explain); err != nil {
		return fmt.Errorf("register query: %w", err)
	}
	c.childCh = workflow.GetSignalChannel(ctx, SignalChildStatus)
	c.adoptCh = workflow.GetSignalChannel(ctx, SignalAdopt)
	c.loop.vis = newVisibility(ctx, in.SearchAttributes)
	return c.loop.run(ctx, c, in.Pending)
}

type component struct {
	ns, name     string
	st           ComponentState
	loop         *resourceLoop
	historyLimit int
	// searchAttributes is carried through Continue-As-New.
	searchAttributes bool
	childCh, adoptCh workflow.ReceiveChannel
	adopt            []oda.WorkloadRef
	// statusDirty is set when a child's status changed since the last write.
	statusDirty bool
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

// waits adds the Component's own signals (its children's status, workloads
// to adopt) and the deferred write's timer.
func (c *component) waits(ctx workflow.Context, r *resourceLoop, sel workflow.Selector) {
	sel.AddReceive(c.childCh, func(ch workflow.ReceiveChannel, _ bool) {
		var cs ChildStatus
		ch.Receive(ctx, &cs)
		c.onChild(r, cs)
	})
	sel.AddReceive(c.adoptCh, func(ch workflow.ReceiveChannel, _ bool) {
		var a Adopt
		ch.Receive(ctx, &a)
		c.onAdopt(r, a)
	})
	if c.progress.pending() {
		sel.AddFuture(c.progress.timer, func(workflow.Future) {
			c.progress.timer, c.progress.cancel = nil, nil
			c.progress.fired = true
			r.wake()
		})
	}
}

// drain takes every child update already delivered, so a burst of them
// costs one status write.
func (c *component) drain(_ workflow.Context, r *resourceLoop) {
	var cs ChildStatus
	for c.childCh.ReceiveAsync(&cs) {
		c.onChild(r, cs)
		cs = ChildStatus{}
	}
	var a Adopt
	for c.adoptCh.ReceiveAsync(&a) {
		c.onAdopt(r, a)
		a = Adopt{}
	}
}

// holdsContinueAsNew is true while a write is deferred: it is not carried
// across, so the run waits for it.
func (c *component) holdsContinueAsNew() bool { return c.progress.pending() }

func (c *component) continueAsNew(ctx workflow.Context, r *resourceLoop, pending *ResourceEvent) error {
	in := ComponentInput{Namespace: c.ns, Name: c.name, Pending: pending, HistoryLimit: c.historyLimit, SearchAttributes: c.searchAttributes}
	if pending == nil {
		st := c.st
		in.State = &st
	} else if r.gone {
		// A new object under the same name: a new lifecycle, never the old
		// one's state. The old one's children lose their kopf finalizers
		// first (see successor).
		c.releaseChildFinalizers(ctx)
	}
	return workflow.NewContinueAsNewError(ctx, ComponentWorkflow, in)
}

// ended runs when the Component is gone.
func (c *component) ended(ctx workflow.Context, _ *resourceLoop) {
	c.releaseChildFinalizers(ctx)
	workflow.GetLogger(ctx).Info("component deleted; lifecycle ends", "component", c.ref().String())
}

// observe starts over on a new desired state: a failure is the old
// spec's. The lifecycle's first event brings the children an earlier
// lifecycle (or the Python Canvas) recorded in the status.
func (c *component) observe(ev ResourceEvent, first bool) {
	c.st.Resource.Failure = nil
	c.st.Resource.Failures = 0
	if first {
		c.st.Children = childrenFromStatus(ev.Status)
	}
}

func (c *component) onAdopt(r *resourceLoop, a Adopt) {
	c.adopt = append(c.adopt, a.Workloads...)
	if len(c.adopt) > 0 {
		r.wake()
	}
}

func (c *component) onChild(r *resourceLoop, cs ChildStatus) {
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
				r.wake()
			}
			return
		}
		if ch.Status != cs {
			// Even while a write is deferred: the change may end the
			// In-Progress phase, which is written at once.
			ch.Status = cs
			c.statusDirty = true
			r.wake()
		}
		return
	}
}

// reconcile applies children when the desired state changed, then writes
// the status if it changed.
func (c *component) reconcile(ctx workflow.Context, r *resourceLoop) {
	if r.retrying && r.st.Failure != nil && c.st.AppliedHash != r.st.Hash {
		// A failed apply's backoff is over: try again.
		r.st.Failure = nil
	}
	if r.st.Deleting {
		// Nothing to apply to a Component on its way out, nor to clean up:
		// its children go with it through owner references.
		c.st.AppliedHash = r.st.Hash
		r.finishDeletion(ctx, "", nil)
		return
	}
	var event *activities.Event
	if r.st.Hash != c.st.AppliedHash && r.st.Failure == nil {
		event = c.applyChildren(ctx, r)
	}
	if len(c.adopt) > 0 {
		c.adoptWorkloads(ctx)
	}
	if c.deferProgress(ctx, event) {
		return
	}
	if event == nil {
		event = c.deferredEvent
	}
	c.deferredEvent = nil
	c.progress.stop()
	c.statusDirty = false
	c.writeStatus(ctx, r, event)
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
// of an In-Progress phase already written waits: under load each child is
// a second or more behind the previous one, and writing every url as it
// comes costs a Component write (the largest object, sent to every
// watcher) and a workflow task each; the phase shown stays true meanwhile,
// and Complete brings every entry at once.
const refreshDelay = 5 * time.Second

// deferProgress defers a write whose phase is In-Progress until
// progressDelay after the first write it deferred (refreshDelay when the
// phase is already written and only child entries changed), gathering
// every change meanwhile into one write; a Warning Event or a phase out of
// progress goes out at once and takes the deferred changes with it.
func (c *component) deferProgress(ctx workflow.Context, event *activities.Event) bool {
	fired := c.progress.fired
	c.progress.fired = false
	delay, ok := progressDeferral(fired, c.statusDirty, event, oda.DeploymentStatus(c.status()), c.st.Resource.Phase, c.deferredEvent != nil)
	if !ok {
		return false
	}
	if event != nil {
		c.deferredEvent = event
	}
	c.statusDirty = true
	c.progress.start(ctx, delay)
	return true
}

// progressDeferral decides whether a Component's status write waits, and
// for how long: nothing new to write, a timer that already fired, a
// Warning Event and a phase out of progress go at once; a new In-Progress
// phase (or a Normal Event, held back with it) waits progressDelay, a
// refresh of the phase already written refreshDelay.
func progressDeferral(fired, statusDirty bool, event *activities.Event, phase, written string, eventHeld bool) (time.Duration, bool) {
	switch {
	case event == nil && !statusDirty, fired, event != nil && event.Type != "Normal", !oda.InProgress(phase):
		return 0, false
	case phase == written && event == nil && !eventHeld:
		return refreshDelay, true
	default:
		return progressDelay, true
	}
}

// applyChildren applies the children the spec asks for and deletes the
// ones it no longer does. A spec whose ExposedAPIs a gateway cannot serve
// safely (a name too long for the gateway objects, a path such as "/" that
// takes other components' traffic) fails up front with InvalidSpec instead
// of creating the children.
func (c *component) applyChildren(ctx workflow.Context, r *resourceLoop) *activities.Event {
	desired, errs := oda.DesiredChildren(c.name, r.st.Spec)
	if len(errs) == 0 {
		errs = oda.GatewayProblems(desired)
	}
	if len(errs) > 0 {
		r.st.Failure = &oda.Failure{Reason: "InvalidSpec", Message: "the Component spec is invalid: " + errs.Error()}
		c.st.AppliedHash = r.st.Hash
		return &activities.Event{Type: "Warning", Reason: "InvalidSpec", Message: r.st.Failure.Message}
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
	owner := oda.Owner{Name: c.name, Namespace: c.ns, UID: r.st.UID, Labels: r.st.Labels}
	summary := fmt.Sprintf("apply %d children, delete %d", len(desired.Children), len(del))
	var kube *activities.Kube
	var res activities.ApplyChildrenResult
	err := kubeCall(ctx, summary, kube.ApplyChildren, activities.ApplyChildrenInput{Owner: owner, Children: desired.Children, Delete: del}).Get(ctx, &res)
	if err != nil {
		reason := "ApplyFailed"
		var appErr *temporal.ApplicationError
		if errors.As(err, &appErr) && appErr.Type() == ErrTypeInvalid {
			reason = "ChildRejected"
		}
		r.st.Failure = &oda.Failure{Reason: reason, Message: "children could not be applied: " + rootMessage(err)}
		// Recover by itself: try again after a backoff, or at the next change.
		r.retryAfterBackoff(ctx)
		return &activities.Event{Type: "Warning", Reason: reason, Message: r.st.Failure.Message}
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
	c.st.AppliedHash = r.st.Hash
	r.succeeded()
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
	owner := oda.Owner{Name: c.name, Namespace: c.ns, UID: c.st.Resource.UID}
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
		Failure:               c.st.Resource.Failure,
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

func (c *component) writeStatus(ctx workflow.Context, r *resourceLoop, event *activities.Event) {
	s := c.status()
	now := workflow.Now(ctx).UTC().Format(time.RFC3339)
	cond := oda.ReadyCondition(s, r.st.Generation, r.st.Condition, now)
	status := oda.StatusObject(s, cond)
	hash := hashOf(status, r.st.Hash)
	if hash == c.st.WrittenStatus && event == nil {
		return
	}
	phase := oda.DeploymentStatus(s)
	event = deploymentEvent(r.st.Phase, phase, r.st.Failure, event)
	var kube *activities.Kube
	fence := statusFence(ctx, r.st.StatusFence)
	err := kubeCall(ctx, "write status: "+phase, kube.WriteStatus, activities.WriteStatusInput{
		Ref: c.ref(), UID: r.st.UID, Status: status, ObservedHash: c.st.AppliedHash, Event: event,
		Replace: c.st.WrittenStatus != "", Fence: fence, ResourceVersion: firstWriteVersion(c.st.WrittenStatus == "", r.st.ResourceVersion),
	}).Get(ctx, nil)
	if err != nil {
		// The apiserver stayed unreachable past the retry budget; try again
		// later. The workflow's state is intact.
		workflow.GetLogger(ctx).Warn("status write failed; retrying later", "component", c.ref().String(), "err", err)
		r.retryAfter(ctx, retryBackoff(1), "write the status again")
		return
	}
	c.st.WrittenStatus = hash
	r.st.StatusFence = fence.String()
	r.st.Phase = phase
	r.st.Condition = &cond
}

// deploymentEvent is the Event a Component's status write records: a
// change of deployment_status replaces a Normal Event (or none) with one
// that names the new phase, a Warning for Failed with the failure's
// message; a Warning Event stays as it is.
func deploymentEvent(written, phase string, failure *oda.Failure, event *activities.Event) *activities.Event {
	if phase == written || (event != nil && event.Type != "Normal") {
		return event
	}
	ev := &activities.Event{Type: "Normal", Reason: "DeploymentStatus", Message: "deployment_status is now " + phase}
	if phase == oda.StatusFailed {
		ev.Type = "Warning"
		if failure != nil {
			ev.Message += ": " + failure.Message
		}
	}
	return ev
}

func (c *component) explain() (Explanation, error) {
	s := c.status()
	e := Explanation{Resource: c.ref().String(), UID: c.st.Resource.UID, DeploymentStatus: oda.DeploymentStatus(s), Failure: c.st.Resource.Failure}
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
