package workflows

import (
	"errors"
	"fmt"

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
	Resource ResourceState `json:"resource"`
	// Exposure is the cluster state around the API, as the watcher last
	// reported it.
	Exposure *Exposure `json:"exposure,omitempty"`
	// SpecHash is the spec whose gateway objects are applied ("" when
	// none are, or the last attempt failed).
	SpecHash string `json:"specHash,omitempty"`
	// Applied are the gateway objects odaflow created for this API.
	Applied []activities.ObjectRef `json:"applied,omitempty"`
	// APIStatus is status.apiStatus as the gateway serves the API;
	// APIStatusFor identifies what it was made from (spec, objects and
	// ingress), so a readiness change alone needs no new one.
	APIStatus    map[string]any `json:"apiStatus,omitempty"`
	Addressed    bool           `json:"addressed,omitempty"`
	APIStatusFor string         `json:"apiStatusFor,omitempty"`
}

// The phases of an ExposedAPI.
const (
	PhaseExposed        = "Exposed"
	PhaseWaiting        = "WaitingForAddress"
	PhaseNotReady       = "ImplementationNotReady"
	PhaseExposureFailed = "Failed"
)

// ExposedAPIWorkflow publishes one ExposedAPI through the configured API
// gateway and keeps its url and ready flag true: the watcher re-drives it
// when the spec, the ingress address or the implementation's endpoints
// change. While the load balancer has no address it simply waits for the
// next event (no polling). It ends when the ExposedAPI is deleted, after
// removing what owner references cannot (gateway objects in another
// namespace, Kong entities).
func ExposedAPIWorkflow(ctx workflow.Context, in ExposedAPIInput) error {
	x := &exposedAPI{ns: in.Namespace, name: in.Name, historyLimit: in.HistoryLimit, searchAttributes: in.SearchAttributes}
	if in.State != nil {
		x.st = *in.State
	}
	x.loop = newResourceLoop(x.ref(), &x.st.Resource, in.HistoryLimit)
	if err := workflow.SetQueryHandler(ctx, QueryExplain, x.explain); err != nil {
		return fmt.Errorf("register query: %w", err)
	}
	x.loop.vis = newVisibility(ctx, in.SearchAttributes)
	return x.loop.run(ctx, x, in.Pending)
}

type exposedAPI struct {
	ns, name     string
	st           ExposedAPIState
	loop         *resourceLoop
	historyLimit int
	// searchAttributes is carried through Continue-As-New.
	searchAttributes bool
}

func (x *exposedAPI) ref() oda.Ref {
	return oda.Ref{Kind: oda.KindExposedAPI.Name, Namespace: x.ns, Name: x.name}
}

func (x *exposedAPI) observe(ev ResourceEvent, _ bool) { x.st.Exposure = ev.Exposure }

func (x *exposedAPI) waits(workflow.Context, *resourceLoop, workflow.Selector) {}

func (x *exposedAPI) continueAsNew(ctx workflow.Context, _ *resourceLoop, pending *ResourceEvent) error {
	in := ExposedAPIInput{Namespace: x.ns, Name: x.name, Pending: pending, HistoryLimit: x.historyLimit, SearchAttributes: x.searchAttributes}
	if pending == nil {
		st := x.st
		in.State = &st
	}
	return workflow.NewContinueAsNewError(ctx, ExposedAPIWorkflow, in)
}

// changeMetricsPodAnnotations is the workflow.GetVersion change that calls
// Expose again when a metrics API's implementation becomes ready or not, so
// that its pods get the scrape annotations (version 1).
const changeMetricsPodAnnotations = "metrics-pod-annotations"

func (x *exposedAPI) reconcile(ctx workflow.Context, r *resourceLoop) {
	if r.st.Deleting {
		r.finishDeletion(ctx, "the gateway objects", x.unexpose)
		return
	}
	var exp Exposure
	if x.st.Exposure != nil {
		exp = *x.st.Exposure
	}
	failure := exposureProblem(r.st.Spec, exp)
	api := gateway.API{Name: x.name, Namespace: x.ns, UID: r.st.UID, Labels: r.st.Labels, Spec: r.st.Spec}
	// The gateway objects depend only on the spec: a readiness or address
	// change needs a status write, not another apply.
	specHash := hashOf(r.st.Spec, r.st.Labels)
	in := activities.ExposeInput{
		API: api, Ingress: exp.Ingress, Applied: x.st.Applied, Remove: failure != nil,
		SkipApply: failure == nil && specHash == x.st.SpecHash,
	}
	// What the last Expose call was for: the spec, the objects and the
	// address, and, for a metrics API, the implementation's readiness: its
	// pods appear with it, and Expose annotates them in the annotation
	// metrics modes (v0.1.0 histories have no version marker and keep the
	// old key).
	statusKey := func(applied []activities.ObjectRef) string { return hashOf(specHash, applied, exp.Ingress) }
	if apiType, _ := r.st.Spec["apiType"].(string); gateway.IsMetrics(apiType) &&
		workflow.GetVersion(ctx, changeMetricsPodAnnotations, workflow.DefaultVersion, 1) >= 1 {
		statusKey = func(applied []activities.ObjectRef) string {
			return hashOf(specHash, applied, exp.Ingress, exp.ImplementationReady)
		}
	}
	if statusFor := statusKey(x.st.Applied); failure != nil || !in.SkipApply || statusFor != x.st.APIStatusFor {
		summary := "expose through the gateway"
		switch {
		case failure != nil:
			summary = "remove gateway objects: " + failure.Reason
		case in.SkipApply:
			summary = "update the url"
		}
		var res activities.ExposeResult
		var exposure *activities.Exposure
		if err := kubeCall(ctx, summary, exposure.Expose, in).Get(ctx, &res); err != nil {
			x.st.SpecHash, x.st.APIStatusFor = "", ""
			r.retryAfterBackoff(ctx)
			r.report(ctx, PhaseExposureFailed, false, exposeFailure(err), exposureStatus(nil, false))
			return
		}
		x.st.Applied, x.st.APIStatus, x.st.Addressed = res.Applied, res.APIStatus, res.Addressed
		x.st.SpecHash, x.st.APIStatusFor = "", ""
		if failure == nil {
			x.st.SpecHash, x.st.APIStatusFor = specHash, statusKey(res.Applied)
		}
		if res.ResourceVersion != "" && r.st.Phase == "" {
			// Adding the finalizer changed the object: the first status
			// write is guarded by the version it made.
			r.st.ResourceVersion = res.ResourceVersion
		}
	}
	r.succeeded()
	phase, ready := exposurePhase(failure, x.st.Addressed, exp.ImplementationReady)
	apiStatus := x.st.APIStatus
	if failure != nil {
		apiStatus = nil
	}
	r.report(ctx, phase, ready, failure, exposureStatus(apiStatus, failure == nil && exp.ImplementationReady))
}

// unexpose is the deletion's cleanup: the gateway objects owner references
// cannot remove (another namespace, Kong entities).
func (x *exposedAPI) unexpose(ctx workflow.Context) error {
	var exposure *activities.Exposure
	err := kubeCall(ctx, "remove gateway objects", exposure.Unexpose, activities.UnexposeInput{
		Ref: x.ref(), UID: x.st.Resource.UID, Applied: x.st.Applied,
	}).Get(ctx, nil)
	if err != nil {
		return err
	}
	x.st.Applied = nil
	return nil
}

// exposeFailure names a failed expose attempt: the gateway refusing the
// objects for good, or anything that may pass.
func exposeFailure(err error) *oda.Failure {
	reason := "ExposeFailed"
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) && appErr.Type() == ErrTypeInvalid {
		reason = "GatewayRejected"
	}
	return &oda.Failure{Reason: reason, Message: "could not expose the API: " + rootMessage(err)}
}

// exposureProblem is why an ExposedAPI cannot be exposed as it stands (nil
// when it can): a spec the gateway cannot serve, a host name the Canvas
// does not allow, or a path prefix another ExposedAPI claimed first.
func exposureProblem(spec map[string]any, exp Exposure) *oda.Failure {
	path, _ := spec["path"].(string)
	if _, err := gateway.ParseSpec(spec); err != nil {
		return &oda.Failure{Reason: "InvalidSpec", Message: "the ExposedAPI spec is invalid: " + err.Error()}
	}
	if problem := oda.ExposedPathProblem(path); problem != "" {
		// An ExposedAPI made by hand gets the same path rule as one made
		// from a Component.
		return &oda.Failure{Reason: "InvalidSpec", Message: "the ExposedAPI spec is invalid: spec.path: " + problem}
	}
	if exp.HostnameRefused {
		// Only the watcher sets it, from the Canvas's allow-list: a
		// history recorded before the allow-list never carries it, so it
		// replays as it ran without a workflow version.
		hostname, _ := spec["hostname"].(string)
		return &oda.Failure{Reason: "HostnameNotAllowed", Message: fmt.Sprintf(
			"spec.hostname %q is not a host name this Canvas allows in API URLs; leave it out to use the Canvas's address, or ask the Canvas operator to allow it (--allowed-hostnames)", hostname)}
	}
	if exp.ConflictsWith != "" {
		return &oda.Failure{Reason: "PathConflict", Message: fmt.Sprintf("path prefix %s is already exposed by ExposedAPI %s", path, exp.ConflictsWith)}
	}
	return nil
}

// exposurePhase is an ExposedAPI's phase, and whether it is Ready: Failed
// with a failure; otherwise waiting for the gateway's address, then for a
// ready implementation.
func exposurePhase(failure *oda.Failure, addressed, implementationReady bool) (string, bool) {
	switch {
	case failure != nil:
		return PhaseExposureFailed, false
	case !addressed:
		return PhaseWaiting, false
	case !implementationReady:
		return PhaseNotReady, false
	default:
		return PhaseExposed, true
	}
}

// exposureStatus is an ExposedAPI's status besides its conditions:
// apiStatus (none while it fails) and implementation.ready, which the
// Component reads.
func exposureStatus(apiStatus map[string]any, implementationReady bool) map[string]any {
	status := map[string]any{"implementation": map[string]any{"ready": implementationReady}}
	if apiStatus != nil {
		status["apiStatus"] = apiStatus
	}
	return status
}

func (x *exposedAPI) explain() (Explanation, error) {
	st := x.st.Resource
	return Explanation{Resource: x.ref().String(), UID: st.UID, DeploymentStatus: st.Phase, Failure: st.Failure}, nil
}
