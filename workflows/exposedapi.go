package workflows

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/odaflow/odaflow/activities"
	"github.com/odaflow/odaflow/gateway"
	"github.com/odaflow/odaflow/oda"
)

// ExposedAPIInput starts (or continues) one ExposedAPI's lifecycle.
type ExposedAPIInput struct {
	Namespace    string           `json:"namespace"`
	Name         string           `json:"name"`
	State        *ExposedAPIState `json:"state,omitempty"`
	Pending      *ResourceEvent   `json:"pending,omitempty"`
	HistoryLimit int              `json:"historyLimit,omitempty"`
	// SearchAttributes keeps the DeploymentStatus search attribute equal to
	// the phase.
	SearchAttributes bool `json:"searchAttributes,omitempty"`
}

// WithSearchAttributes implements SearchAttributesInput.
func (in ExposedAPIInput) WithSearchAttributes(on bool) any {
	in.SearchAttributes = on
	return in
}

// ExposedAPIState is the ExposedAPI workflow's whole memory.
type ExposedAPIState struct {
	UID string `json:"uid"`
	// ResourceVersion is the object's version in the latest event.
	ResourceVersion string            `json:"resourceVersion,omitempty"`
	Generation      int64             `json:"generation"`
	Labels          map[string]string `json:"labels,omitempty"`
	Spec            map[string]any    `json:"spec,omitempty"`
	Exposure        *Exposure         `json:"exposure,omitempty"`
	// Hash is the input last received (spec and surroundings), DoneHash the
	// one last handled; SpecHash the spec whose gateway objects are applied.
	Hash     string `json:"hash"`
	DoneHash string `json:"doneHash"`
	SpecHash string `json:"specHash"`
	// Applied are the gateway objects odaflow created for this API.
	Applied   []activities.ObjectRef `json:"applied,omitempty"`
	Failure   *oda.Failure           `json:"failure,omitempty"`
	Failures  int                    `json:"failures,omitempty"`
	Phase     string                 `json:"phase,omitempty"`
	Condition *oda.Condition         `json:"condition,omitempty"`
	// StatusFence is the fence of the last status written (statusFence).
	StatusFence string   `json:"statusFence,omitempty"`
	Finalizers  []string `json:"finalizers,omitempty"`
	Deleting    bool     `json:"deleting,omitempty"`
	// Annotations are odaflow's own (skip-cleanup).
	Annotations map[string]string `json:"annotations,omitempty"`
}

// ExposedAPIWorkflow publishes one ExposedAPI through the configured API
// gateway and keeps its url and ready flag true: the watcher re-drives it
// when the spec, the ingress address or the implementation's endpoints
// change. While the load balancer has no address it simply waits for the
// next event (no polling). It ends when the ExposedAPI is deleted, after
// removing what owner references cannot (gateway objects in another
// namespace).
func ExposedAPIWorkflow(ctx workflow.Context, in ExposedAPIInput) error {
	x := &exposedAPI{ns: in.Namespace, name: in.Name}
	if in.State != nil {
		x.st = *in.State
	}
	limit := in.HistoryLimit
	if limit == 0 {
		limit = defaultHistoryLimit
	}
	if err := workflow.SetQueryHandler(ctx, QueryExplain, x.explain); err != nil {
		return fmt.Errorf("register query: %w", err)
	}
	vis := newVisibility(ctx, in.SearchAttributes)
	events := workflow.GetSignalChannel(ctx, SignalResourceEvent)
	if in.Pending != nil {
		x.onEvent(*in.Pending)
	}
	for {
		if x.next == nil && !x.gone && !x.dirty() {
			x.wait(ctx, events)
		}
		x.drain(ctx, events)
		switch {
		case x.next != nil:
			return workflow.NewContinueAsNewError(ctx, ExposedAPIWorkflow, ExposedAPIInput{
				Namespace: x.ns, Name: x.name, Pending: x.next, HistoryLimit: in.HistoryLimit, SearchAttributes: in.SearchAttributes,
			})
		case x.gone:
			return nil
		}
		x.reconcile(ctx)
		vis.publish(ctx, x.st.Phase)
		if info := workflow.GetInfo(ctx); info.GetContinueAsNewSuggested() || info.GetCurrentHistoryLength() > limit {
			x.drain(ctx, events)
			if x.next == nil && !x.gone && !x.dirty() {
				st := x.st
				return workflow.NewContinueAsNewError(ctx, ExposedAPIWorkflow, ExposedAPIInput{
					Namespace: x.ns, Name: x.name, State: &st, HistoryLimit: in.HistoryLimit, SearchAttributes: in.SearchAttributes,
				})
			}
		}
	}
}

type exposedAPI struct {
	ns, name   string
	st         ExposedAPIState
	next       *ResourceEvent
	succ       successor
	gone       bool
	retryTimer workflow.Future
	retryDue   bool
	// released is set once the finalizers are off.
	released bool
}

func (x *exposedAPI) ref() oda.Ref {
	return oda.Ref{Kind: oda.KindExposedAPI.Name, Namespace: x.ns, Name: x.name}
}

func (x *exposedAPI) dirty() bool {
	return x.st.UID != "" && (x.st.Hash != x.st.DoneHash || x.retryDue)
}

func (x *exposedAPI) wait(ctx workflow.Context, events workflow.ReceiveChannel) {
	sel := workflow.NewSelector(ctx)
	sel.AddReceive(events, func(ch workflow.ReceiveChannel, _ bool) {
		var ev ResourceEvent
		ch.Receive(ctx, &ev)
		x.onEvent(ev)
	})
	if x.retryTimer != nil {
		sel.AddFuture(x.retryTimer, func(workflow.Future) {
			x.retryTimer = nil
			x.retryDue = true
		})
	}
	sel.Select(ctx)
}

func (x *exposedAPI) drain(ctx workflow.Context, events workflow.ReceiveChannel) {
	var ev ResourceEvent
	for events.ReceiveAsync(&ev) {
		x.onEvent(ev)
		ev = ResourceEvent{}
	}
	x.next = x.succ.resolve(x.next)
}

func (x *exposedAPI) onEvent(ev ResourceEvent) {
	if x.next != nil || x.gone {
		x.succ.observe(ev, x.st.UID)
		return
	}
	if x.st.UID != "" && ev.UID != x.st.UID {
		if !ev.Deleted {
			next := ev
			x.next = &next
		}
		return
	}
	if ev.Deleted {
		x.gone = true
		return
	}
	x.st.UID = ev.UID
	x.st.ResourceVersion = ev.ResourceVersion
	x.st.Finalizers = ev.Finalizers
	x.st.Deleting = ev.Deleting
	if ev.Hash == x.st.Hash {
		return
	}
	x.st.Hash = ev.Hash
	x.st.Generation = ev.Generation
	x.st.Labels = ev.Labels
	x.st.Annotations = ev.Annotations
	x.st.Spec = ev.Spec
	x.st.Exposure = ev.Exposure
}

func (x *exposedAPI) reconcile(ctx workflow.Context) {
	x.retryDue = false
	if x.st.Deleting {
		x.st.DoneHash = x.st.Hash
		x.unexpose(ctx)
		return
	}
	x.st.DoneHash = x.st.Hash
	api := gateway.API{Name: x.name, Namespace: x.ns, UID: x.st.UID, Labels: x.st.Labels, Spec: x.st.Spec}
	in := activities.ExposeInput{
		API: api, ObservedHash: x.st.Hash, Applied: x.st.Applied, Generation: x.st.Generation,
		PreviousCondition: x.st.Condition, PreviousPhase: x.st.Phase,
		ResourceVersion: firstWriteVersion(x.st.Phase == "", x.st.ResourceVersion),
	}
	var exp Exposure
	if x.st.Exposure != nil {
		exp = *x.st.Exposure
	}
	in.Ingress, in.ImplementationReady = exp.Ingress, exp.ImplementationReady
	path, _ := x.st.Spec["path"].(string)
	if _, err := gateway.ParseSpec(x.st.Spec); err != nil {
		in.Failure = &oda.Failure{Reason: "InvalidSpec", Message: "the ExposedAPI spec is invalid: " + err.Error()}
	} else if problem := oda.ExposedPathProblem(path); problem != "" {
		// An ExposedAPI made by hand gets the same path rule as one made
		// from a Component.
		in.Failure = &oda.Failure{Reason: "InvalidSpec", Message: "the ExposedAPI spec is invalid: spec.path: " + problem}
	} else if exp.ConflictsWith != "" {
		in.Failure = &oda.Failure{Reason: "PathConflict", Message: fmt.Sprintf("path prefix %s is already exposed by ExposedAPI %s", path, exp.ConflictsWith)}
	}
	// The gateway objects depend only on the spec: a readiness or address
	// change needs a status write, not another apply.
	specHash := hashOf(x.st.Spec, x.st.Labels)
	in.SkipApply = in.Failure == nil && specHash == x.st.SpecHash && x.st.Failure == nil
	summary := "expose through the gateway"
	if in.SkipApply {
		summary = "update url and readiness"
	}
	var res activities.ExposeResult
	var exposure *activities.Exposure
	in.StatusFence = statusFence(ctx, x.st.StatusFence)
	err := kubeCall(ctx, summary, exposure.Expose, in).Get(ctx, &res)
	if err != nil {
		x.st.Failures++
		reason := "ExposeFailed"
		var appErr *temporal.ApplicationError
		if errors.As(err, &appErr) && appErr.Type() == ErrTypeInvalid {
			reason = "GatewayRejected"
		}
		x.st.Failure = &oda.Failure{Reason: reason, Message: "could not expose the API: " + rootMessage(err)}
		x.st.SpecHash = ""
		// Try again after a backoff; the status says why meanwhile.
		// The timer brings the next attempt (retryDue); until then the
		// workflow waits, so a gateway that keeps failing costs one attempt
		// per backoff step, not a busy loop.
		x.retryTimer = workflow.NewTimer(ctx, retryBackoff(x.st.Failures))
		x.reportFailure(ctx)
		return
	}
	x.st.Failures = 0
	x.st.Failure = in.Failure
	x.st.Applied = res.Applied
	if in.Failure == nil {
		x.st.SpecHash = specHash
	} else {
		x.st.SpecHash = ""
	}
	x.st.Phase = res.Phase
	x.st.Condition = res.Condition
	x.st.StatusFence = in.StatusFence.String()
}

// reportFailure writes a Failed status after the expose activity itself
// failed (apiserver unreachable or refusing the gateway object).
func (x *exposedAPI) reportFailure(ctx workflow.Context) {
	now := workflow.Now(ctx).UTC().Format(time.RFC3339)
	cond := oda.Condition{Type: "Ready", Status: "False", Reason: x.st.Failure.Reason, Message: x.st.Failure.Message, LastTransitionTime: now, ObservedGeneration: x.st.Generation}
	var ev *activities.Event
	if x.st.Phase != activities.PhaseFailed {
		ev = &activities.Event{Type: "Warning", Reason: x.st.Failure.Reason, Message: x.st.Failure.Message}
	}
	var kube *activities.Kube
	fence := statusFence(ctx, x.st.StatusFence)
	err := kubeCall(ctx, "report failure", kube.WriteStatus, activities.WriteStatusInput{
		Ref: x.ref(), UID: x.st.UID, Event: ev, Fence: fence,
		Replace: x.st.Phase != "", ResourceVersion: firstWriteVersion(x.st.Phase == "", x.st.ResourceVersion),
		Status: map[string]any{"implementation": map[string]any{"ready": false}, "conditions": []any{oda.ConditionMap(cond)}},
	}).Get(ctx, nil)
	if err == nil {
		x.st.Phase = activities.PhaseFailed
		x.st.Condition = &cond
		x.st.StatusFence = fence.String()
	}
}

// unexpose removes what owner references cannot, then releases the
// finalizers (odaflow's and a Python Canvas's kopf finalizer).
func (x *exposedAPI) unexpose(ctx workflow.Context) {
	// A deletion the gateway keeps refusing is reported on the object after
	// maxCleanupFailures attempts, and the skip-cleanup annotation releases
	// it without cleaning up.
	if x.released {
		return // a backoff timer from before the release fired; nothing left to do
	}
	skip := x.st.Annotations[oda.AnnotationSkipCleanup] == "true"
	summary := "remove gateway objects"
	if skip {
		summary = "release finalizers, gateway objects left in place on request"
	}
	var exposure *activities.Exposure
	err := kubeCall(ctx, summary, exposure.Unexpose, activities.UnexposeInput{
		Ref: x.ref(), UID: x.st.UID, Applied: x.st.Applied, Finalizers: x.st.Finalizers, SkipCleanup: skip,
	}).Get(ctx, nil)
	if err != nil {
		// The reason is in the activity's failure (visible in the Web UI and
		// the explain query); try again later rather than hang silently.
		x.st.Failure = &oda.Failure{Reason: "CleanupFailed", Message: "could not remove gateway objects: " + rootMessage(err)}
		x.st.Failures++
		x.retryTimer = workflow.NewTimer(ctx, retryBackoff(x.st.Failures))
		if x.st.Failures >= maxCleanupFailures {
			x.st.Failure = &oda.Failure{Reason: "CleanupBlocked", Message: "could not remove gateway objects after " + strconv.Itoa(x.st.Failures) +
				" attempts: " + rootMessage(err) + "; to release the ExposedAPI without cleaning up, annotate it " + oda.AnnotationSkipCleanup + "=true"}
			x.reportFailure(ctx)
		}
		return
	}
	x.st.Applied = nil
	x.released = true
}

func (x *exposedAPI) explain() (Explanation, error) {
	e := Explanation{Resource: x.ref().String(), UID: x.st.UID, DeploymentStatus: x.st.Phase, Failure: x.st.Failure}
	return e, nil
}
