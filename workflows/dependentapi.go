package workflows

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/odaflow/odaflow/activities"
	"github.com/odaflow/odaflow/dependency"
	"github.com/odaflow/odaflow/oda"
)

// DependentAPIInput starts (or continues) one DependentAPI's lifecycle.
type DependentAPIInput struct {
	Namespace    string             `json:"namespace"`
	Name         string             `json:"name"`
	State        *DependentAPIState `json:"state,omitempty"`
	Pending      *ResourceEvent     `json:"pending,omitempty"`
	HistoryLimit int                `json:"historyLimit,omitempty"`
	// SearchAttributes keeps the DeploymentStatus search attribute equal to
	// the phase.
	SearchAttributes bool `json:"searchAttributes,omitempty"`
}

// WithSearchAttributes implements SearchAttributesInput.
func (in DependentAPIInput) WithSearchAttributes(on bool) any {
	in.SearchAttributes = on
	return in
}

// DependentAPIState is the DependentAPI workflow's whole memory.
type DependentAPIState struct {
	Resource ResourceState `json:"resource"`
	// Providers are the ExposedAPIs serving the specification, as the
	// watcher last reported them.
	Providers []dependency.Provider `json:"providers,omitempty"`
	// Resolved is the provider the status names ("" when none).
	Resolved string `json:"resolved,omitempty"`
	URL      string `json:"url,omitempty"`
	// ServiceID is the Service Inventory record; Registered the hash of
	// the registration it holds.
	ServiceID  string `json:"serviceID,omitempty"`
	Registered string `json:"registered,omitempty"`
}

// The phases of a DependentAPI.
const (
	PhaseResolved           = "Resolved"
	PhaseWaitingForProvider = "WaitingForProvider"
	PhaseDependencyFailed   = "Failed"
)

// DependentAPIWorkflow resolves one DependentAPI to the ExposedAPI that
// provides it and keeps that answer true for the DependentAPI's life. It
// never polls: the watcher signals it, through an index on specification
// URL, whenever a matching ExposedAPI appears, changes its url or
// readiness, or goes away; a DependentAPI waiting for its provider costs no
// history events. When a Service Inventory is configured, each resolution
// is recorded there too; the inventory being down delays only that step.
func DependentAPIWorkflow(ctx workflow.Context, in DependentAPIInput) error {
	d := &dependentAPI{ns: in.Namespace, name: in.Name}
	if in.State != nil {
		d.st = *in.State
	}
	d.loop = newResourceLoop(oda.Ref{Kind: oda.KindDependentAPI.Name, Namespace: in.Namespace, Name: in.Name}, &d.st.Resource, in.HistoryLimit)
	d.historyLimit = in.HistoryLimit
	d.searchAttributes = in.SearchAttributes
	if err := workflow.SetQueryHandler(ctx, QueryExplain, d.explain); err != nil {
		return fmt.Errorf("register query: %w", err)
	}
	d.loop.vis = newVisibility(ctx, in.SearchAttributes)
	return d.loop.run(ctx, d, in.Pending)
}

type dependentAPI struct {
	ns, name     string
	st           DependentAPIState
	loop         *resourceLoop
	historyLimit int
	// searchAttributes is carried through Continue-As-New.
	searchAttributes bool
}

func (d *dependentAPI) observe(ev ResourceEvent, _ bool) {
	d.st.Providers = nil
	if ev.Dependency != nil {
		d.st.Providers = ev.Dependency.Providers
	}
}

func (d *dependentAPI) waits(workflow.Context, *resourceLoop, workflow.Selector) {}

func (d *dependentAPI) continueAsNew(ctx workflow.Context, r *resourceLoop, pending *ResourceEvent) error {
	in := DependentAPIInput{Namespace: d.ns, Name: d.name, Pending: pending, HistoryLimit: d.historyLimit, SearchAttributes: d.searchAttributes}
	if pending == nil {
		st := d.st
		in.State = &st
	}
	return workflow.NewContinueAsNewError(ctx, DependentAPIWorkflow, in)
}

func (d *dependentAPI) reconcile(ctx workflow.Context, r *resourceLoop) {
	spec := r.st.Spec
	reg := dependency.Registration{
		ComponentName: r.st.Labels[oda.LabelComponentName],
		DependencyName: func() string {
			s, _ := spec["name"].(string)
			return s
		}(),
	}
	if r.st.Deleting {
		r.finishDeletion(ctx, "the Service Inventory record", func(ctx workflow.Context) error {
			// odaflow's finalizer goes on before the first record is made,
			// so it marks a DependentAPI that may have one.
			if d.st.ServiceID == "" && !hasFinalizer(r.st.Finalizers) {
				return nil
			}
			// Ref and UID say whose record to remove: the activity deletes
			// only records carrying them. (Input only: the commands, and so
			// replay of earlier histories, are unchanged.)
			var inv *activities.ServiceInventory
			if err := workflow.ExecuteActivity(inventoryOptions(ctx, "remove the Service Inventory record"), inv.UnregisterDependency,
				activities.RegisterDependencyInput{Registration: reg, Ref: r.ref, UID: r.st.UID}).Get(ctx, nil); err != nil {
				return err
			}
			d.st.ServiceID = ""
			return nil
		})
		return
	}
	req, ok := dependency.RequestOf(d.ns, reg.ComponentName, spec)
	if !ok {
		r.succeeded()
		r.report(ctx, PhaseDependencyFailed, false, &oda.Failure{
			Reason: "InvalidSpec", Message: "spec.specification.url is required: it is what a providing ExposedAPI is matched on",
		}, map[string]any{"depapiStatus": map[string]any{}, "implementation": map[string]any{"ready": false}})
		return
	}
	match := dependency.Match
	if workflow.GetVersion(ctx, changeSameNamespaceFirst, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		match = dependency.MatchV0
	}
	provider, found := match(req, d.st.Providers)
	reg.URL, reg.SpecURL, reg.Active = provider.URL, req.SpecURL, found

	// The Service Inventory first, so that the one status write says how
	// the registration went. Nothing is recorded for a dependency that was
	// never resolved.
	var invFailure *oda.Failure
	if regHash := hashOf(reg); (found || d.st.ServiceID != "") && regHash != d.st.Registered {
		var res activities.RegisterDependencyResult
		var inv *activities.ServiceInventory
		err := workflow.ExecuteActivity(inventoryOptions(ctx, "record in the Service Inventory"), inv.RegisterDependency,
			activities.RegisterDependencyInput{Registration: reg, Ref: r.ref, UID: r.st.UID, HasFinalizer: hasFinalizer(r.st.Finalizers)}).Get(ctx, &res)
		if err != nil {
			invFailure = &oda.Failure{Reason: "ServiceInventoryUnavailable", Message: "the resolution is not recorded in the Service Inventory yet: " + rootMessage(err)}
			r.retryAfterBackoff(ctx)
		} else {
			d.st.ServiceID, d.st.Registered = res.ID, regHash
		}
	}
	if invFailure == nil {
		r.succeeded()
	}

	depapiStatus := map[string]any{}
	if found {
		depapiStatus["url"] = provider.URL
	}
	if d.st.ServiceID != "" {
		depapiStatus["svcInvID"] = d.st.ServiceID
	}
	status := map[string]any{"depapiStatus": depapiStatus, "implementation": map[string]any{"ready": found}}
	phase, failure := PhaseResolved, invFailure
	if !found {
		phase = PhaseWaitingForProvider
		failure = &oda.Failure{Reason: "NoProvider", Message: "no ready openapi ExposedAPI serves specification " + req.SpecURL + selectorText(req.Selector)}
	}
	r.report(ctx, phase, found, failure, status)
	d.st.Resolved, d.st.URL = provider.Key(), provider.URL
	if !found {
		d.st.Resolved = ""
	}
}

// changeSameNamespaceFirst marks the runs that rank a provider in the
// DependentAPI's own namespace first (dependency.Match); runs recorded
// before it keep dependency.MatchV0's ranking to the end of the run.
const changeSameNamespaceFirst = "dependency-same-namespace-first"

func selectorText(s dependency.Selector) string {
	out := ""
	if s.Namespace != "" {
		out += " in namespace " + s.Namespace
	}
	if s.ReleaseName != "" {
		out += " from release " + s.ReleaseName
	}
	return out
}

func hasFinalizer(finalizers []string) bool {
	for _, f := range finalizers {
		if f == oda.Finalizer {
			return true
		}
	}
	return false
}

// inventoryOptions: the Service Inventory is another service on the
// network; a few quick attempts, then the workflow's own backoff timer
// (with the reason in status) takes over.
func inventoryOptions(ctx workflow.Context, summary string) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 20 * time.Second,
		HeartbeatTimeout:    lostActivityTimeout,
		Summary:             summary,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:        time.Second,
			BackoffCoefficient:     2,
			MaximumInterval:        10 * time.Second,
			MaximumAttempts:        3,
			NonRetryableErrorTypes: []string{activities.ErrTypeInventoryRejected},
		},
	})
}

func (d *dependentAPI) explain() (Explanation, error) {
	st := d.st.Resource
	return Explanation{
		Resource: d.loop.ref.String(), UID: st.UID, DeploymentStatus: st.Phase, Failure: st.Failure,
	}, nil
}
