package workflows

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/odaflow/odaflow/activities"
	"github.com/odaflow/odaflow/identity"
	"github.com/odaflow/odaflow/oda"
)

// IdentityConfigInput starts (or continues) one IdentityConfig's lifecycle.
type IdentityConfigInput struct {
	Namespace    string               `json:"namespace"`
	Name         string               `json:"name"`
	State        *IdentityConfigState `json:"state,omitempty"`
	Pending      *ResourceEvent       `json:"pending,omitempty"`
	HistoryLimit int                  `json:"historyLimit,omitempty"`
	// CheckInterval is how often Keycloak is compared with the spec and
	// repaired (default DefaultIdentityCheckInterval).
	CheckInterval time.Duration `json:"checkInterval,omitempty"`
	// SearchAttributes keeps the DeploymentStatus search attribute equal to
	// the phase.
	SearchAttributes bool `json:"searchAttributes,omitempty"`
}

// WithSearchAttributes implements SearchAttributesInput.
func (in IdentityConfigInput) WithSearchAttributes(on bool) any {
	in.SearchAttributes = on
	return in
}

// DefaultIdentityCheckInterval is the drift check's default period.
const DefaultIdentityCheckInterval = 10 * time.Minute

// IdentityConfigState is the IdentityConfig workflow's whole memory. It
// holds names only: client secrets stay in Keycloak and the Secret.
type IdentityConfigState struct {
	Resource ResourceState `json:"resource"`
	// Roles are the roles the last successful run declared, so that a role
	// dropped from the spec is deleted even if it lacks odaflow's marker.
	Roles []string `json:"roles,omitempty"`
	// Provisioned is true once a Keycloak client may exist for this
	// IdentityConfig: deletion then has something to clean up.
	Provisioned bool `json:"provisioned,omitempty"`
	// ReportedHash is the desired state the last Ready status answered; a
	// drift check that changes nothing writes no status.
	ReportedHash string `json:"reportedHash,omitempty"`
	// Hubs are the hub subscriptions in place, one per API. They are the
	// reason a hub is never registered twice: retries, updates and
	// Continue-As-New all see them. Callbacks are kept without their token.
	Hubs []activities.HubSubscription `json:"hubs,omitempty"`
	// RoleEvents are listener events received and not yet applied (Keycloak
	// down, identity not Ready): they survive Continue-As-New.
	RoleEvents []identity.RoleEvent `json:"roleEvents,omitempty"`
	// RoleEventsDropped counts events refused because the queue was full,
	// since it last drained.
	RoleEventsDropped int `json:"roleEventsDropped,omitempty"`
	// ReportedListener is the listenerRegistered value last reported.
	ReportedListener bool `json:"reportedListener,omitempty"`
}

// Phases of an IdentityConfig.
const (
	PhaseIdentityReady  = "Ready"
	PhaseIdentityFailed = "Failed"
)

// IdentityConfigWorkflow gives one component its Keycloak identity
// (oda-behaviour §2.3, §2.4): the client with its roles, the canvassystem
// role and grant, and the credentials Secret. It re-checks Keycloak on a
// timer and repairs drift, rotates the credentials when the
// rotate-credentials annotation changes, and on deletion removes the client
// before releasing the finalizer, with skip-cleanup as the way out when
// Keycloak stays unreachable.
func IdentityConfigWorkflow(ctx workflow.Context, in IdentityConfigInput) error {
	x := &identityConfig{ns: in.Namespace, name: in.Name, historyLimit: in.HistoryLimit, interval: in.CheckInterval, searchAttributes: in.SearchAttributes}
	if x.interval <= 0 {
		x.interval = DefaultIdentityCheckInterval
	}
	if in.State != nil {
		x.st = *in.State
	}
	x.loop = newResourceLoop(x.ref(), &x.st.Resource, in.HistoryLimit)
	if err := workflow.SetQueryHandler(ctx, QueryExplain, x.explain); err != nil {
		return fmt.Errorf("register query: %w", err)
	}
	x.roleEvents = workflow.GetSignalChannel(ctx, identity.SignalRoleEvent)
	x.loop.vis = newVisibility(ctx, in.SearchAttributes)
	return x.loop.run(ctx, x, in.Pending)
}

type identityConfig struct {
	ns, name     string
	st           IdentityConfigState
	loop         *resourceLoop
	historyLimit int
	interval     time.Duration
	// searchAttributes is carried through Continue-As-New.
	searchAttributes bool
	// drift is the periodic comparison of Keycloak with the spec.
	drift driftCheck
	// roleEvents are the dynamic-role listener's signals.
	roleEvents workflow.ReceiveChannel
}

func (x *identityConfig) ref() oda.Ref {
	return oda.Ref{Kind: oda.KindIdentityConfig.Name, Namespace: x.ns, Name: x.name}
}

// waits adds the drift-check timer while the identity is in place. It is
// a durable Temporal timer with a summary, so the Web UI shows what the
// workflow waits for.
func (x *identityConfig) waits(ctx workflow.Context, r *resourceLoop, sel workflow.Selector) {
	if !r.st.Deleting {
		// Received in every phase so none is lost; applied at once when
		// Ready, otherwise after the next successful reconcile.
		sel.AddReceive(x.roleEvents, func(ch workflow.ReceiveChannel, _ bool) {
			var ev identity.RoleEvent
			ch.Receive(ctx, &ev)
			x.queueRoleEvent(ctx, r, ev)
			x.applyRoleEvents(ctx, r)
			// Role events are handled outside reconcile, where the loop
			// checks the history size: ask for a reconcile when it grew.
			if info := workflow.GetInfo(ctx); info.GetContinueAsNewSuggested() || info.GetCurrentHistoryLength() > r.limit {
				r.wake()
			}
		})
	}
	if r.st.Deleting || r.st.Phase != PhaseIdentityReady {
		return
	}
	x.drift.arm(ctx, r, sel, x.interval, "drift check: compare Keycloak client "+x.name+" with the spec")
}

func (x *identityConfig) continueAsNew(ctx workflow.Context, r *resourceLoop, pending *ResourceEvent) error {
	in := IdentityConfigInput{Namespace: x.ns, Name: x.name, Pending: pending, HistoryLimit: x.historyLimit, CheckInterval: x.interval, SearchAttributes: x.searchAttributes}
	if pending == nil {
		// Signals still in the channel would be lost with this run.
		var ev identity.RoleEvent
		for x.roleEvents.ReceiveAsync(&ev) {
			x.queueRoleEvent(ctx, r, ev)
			ev = identity.RoleEvent{}
		}
		st := x.st
		in.State = &st
	}
	return workflow.NewContinueAsNewError(ctx, IdentityConfigWorkflow, in)
}

// keycloakOptions: Keycloak is a service on the network. A few attempts
// ride out a restart; then the workflow's backoff timer takes over with the
// reason in the status. Refusals (wrong admin credentials, a missing realm)
// are not retried at all: repeating a wrong password only risks locking
// the admin account.
func keycloakOptions(summary string) workflow.ActivityOptions {
	return identityActivityOptions(summary, 4)
}

func identityActivityOptions(summary string, attempts int32) workflow.ActivityOptions {
	return workflow.ActivityOptions{
		StartToCloseTimeout: time.Minute,
		HeartbeatTimeout:    lostActivityTimeout,
		Summary:             summary,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:    2 * time.Second,
			BackoffCoefficient: 2,
			MaximumInterval:    30 * time.Second,
			MaximumAttempts:    attempts,
			NonRetryableErrorTypes: []string{
				activities.ErrTypeKeycloakUnauthorized, activities.ErrTypeKeycloakMisconfigured,
				activities.ErrTypeKeycloakRejected, ErrTypeInvalid,
			},
		},
	}
}

// identityCall runs one identity activity (Keycloak, the credentials
// Secret, the hubs) as a local activity with the timeouts and retry policy
// of opts. Each is an HTTP call or two that answers in milliseconds; as a
// remote activity it would cost three history events, an activity task and
// a workflow task of its own. A local activity retries within the workflow
// task while the backoff is shorter than the task's timeout, and on a
// timer after that.
func identityCall(ctx workflow.Context, opts workflow.ActivityOptions, activity any, args ...any) workflow.Future {
	return workflow.ExecuteLocalActivity(workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout: opts.StartToCloseTimeout,
		Summary:             opts.Summary,
		RetryPolicy:         opts.RetryPolicy,
	}), activity, args...)
}

func (x *identityConfig) reconcile(ctx workflow.Context, r *resourceLoop) {
	drift := x.drift.take()
	if r.st.Deleting {
		x.drift.stop()
		r.finishDeletion(ctx, "the Keycloak client "+x.name, func(ctx workflow.Context) error {
			// odaflow's finalizer goes on before the client is created, so
			// an IdentityConfig without it never had a client from odaflow;
			// the Python operator's (kopf) finalizer means it may have one.
			if !x.st.Provisioned && !hasFinalizer(r.st.Finalizers) && !containsString(r.st.Finalizers, oda.KopfFinalizer) {
				return nil
			}
			// Before the client goes, so no event is applied to a client
			// being deleted; best effort (see unregisterHubs).
			x.st.RoleEvents = nil
			x.unregisterHubs(ctx, r, append([]activities.HubSubscription(nil), x.st.Hubs...))
			var id *activities.Identity
			return identityCall(ctx, keycloakOptions("delete Keycloak client "+x.name), id.DeleteIdentity,
				activities.DeleteIdentityInput{Ref: x.ref(), ClientID: x.name, UID: r.st.UID, Adopt: oda.AdoptRequested(r.st.Annotations, r.st.Finalizers)}).Get(ctx, nil)
		})
		return
	}
	d, err := identity.FromSpec(x.name, r.st.Spec)
	if err != nil {
		// Nothing to retry until the spec changes.
		r.succeeded()
		r.report(ctx, PhaseIdentityFailed, false, &oda.Failure{Reason: "InvalidSpec", Message: err.Error()}, identityNotReady())
		return
	}
	if err := r.ensureFinalizer(ctx); err != nil {
		x.fail(ctx, r, &oda.Failure{Reason: "FinalizerFailed", Message: "could not add the finalizer: " + rootMessage(err)})
		return
	}
	fresh := !x.st.Provisioned
	x.st.Provisioned = true
	summary := fmt.Sprintf("ensure Keycloak client %s: %d roles", x.name, len(d.Roles))
	if drift {
		summary = "drift check of Keycloak client " + x.name
	}
	var id *activities.Identity
	var res activities.EnsureIdentityResult
	err = identityCall(ctx, keycloakOptions(summary), id.EnsureIdentity, activities.EnsureIdentityInput{
		Ref: x.ref(), Desired: d, PreviousRoles: x.st.Roles, UID: r.st.UID, Adopt: oda.AdoptRequested(r.st.Annotations, r.st.Finalizers),
	}).Get(ctx, &res)
	if err != nil {
		x.fail(ctx, r, keycloakFailure("could not set up the Keycloak client", err))
		return
	}
	x.st.Roles = identity.RoleNames(d.Roles)
	rotate := r.st.Annotations[oda.AnnotationRotateCredentials]
	var creds activities.EnsureCredentialsResult
	err = identityCall(ctx, keycloakOptions("credentials Secret "+identity.SecretName(x.name)), id.EnsureCredentials, activities.EnsureCredentialsInput{
		Ref: x.ref(), UID: r.st.UID, ClientID: d.ClientID, Rotate: rotate, Fresh: fresh, Adopt: oda.AdoptRequested(r.st.Annotations, r.st.Finalizers),
	}).Get(ctx, &creds)
	if err != nil {
		x.fail(ctx, r, keycloakFailure("could not write the credentials Secret", err))
		return
	}
	hubs := identity.Hubs(x.ns, d)
	// The client, its roles and credentials are what the component needs
	// to run; the hub subscriptions only bring dynamic roles. A hub that
	// cannot be reached leaves the identity ready, says why in the Ready
	// condition and an Event, and is retried after a backoff.
	var hubErr *oda.Failure
	if err := x.syncHubs(ctx, r, hubs, drift); err != nil {
		hubErr = hubFailure(err)
	}
	listener := identity.ListenerRegistered(hubs, x.subscribed())
	// A refused hub (an ExternalName Service) is the tenant's doing, like
	// an invalid spec: the IdentityConfig is Failed until the Service or
	// the spec changes (the drift check looks again).
	refused := hubErr != nil && hubErr.Reason == activities.ErrTypeHubRefused &&
		workflow.GetVersion(ctx, changeHubRefused, workflow.DefaultVersion, 1) == 1
	switch {
	case hubErr == nil:
		r.succeeded()
	case hubErr.Reason == activities.ErrTypeListenerMisconfigured, refused:
		// A worker run without a listener is a setting, not an outage:
		// retrying on a backoff cannot change it, and across thousands of
		// IdentityConfigs the retries were a steady stream of failing
		// activities. The Ready condition says why; the drift check (or a
		// spec change) tries again.
		r.succeeded()
	default:
		r.retryAfterBackoff(ctx)
	}
	var events []activities.Event
	if drift && (res.Changed() || creds.Written) {
		events = append(events, activities.Event{Type: "Normal", Reason: "DriftRepaired", Message: driftMessage(res, creds)})
	}
	if creds.Rotated {
		events = append(events, activities.Event{Type: "Normal", Reason: "CredentialsRotated",
			Message: "new client secret issued in Keycloak and written to Secret " + creds.SecretName})
	}
	if refused {
		r.report(ctx, PhaseIdentityFailed, false, hubErr, identityNotReady())
	} else if hubErr != nil || r.st.Failure != nil || r.st.Phase != PhaseIdentityReady || x.st.ReportedHash != r.st.Hash || x.st.ReportedListener != listener {
		r.report(ctx, PhaseIdentityReady, true, hubErr, identityReadyStatus(listener))
		if r.st.Phase == PhaseIdentityReady {
			x.st.ReportedHash, x.st.ReportedListener = r.st.Hash, listener
		}
	}
	var kube *activities.Kube
	for _, ev := range events {
		// Events are information: a failed write is not worth a retry.
		ev := ev
		_ = kubeCall(ctx, "event "+ev.Reason, kube.WriteStatus, activities.WriteStatusInput{
			Ref: x.ref(), UID: r.st.UID, Status: map[string]any{}, Event: &ev,
		}).Get(ctx, nil)
	}
	x.applyRoleEvents(ctx, r)
}

// fail reports a failed attempt and schedules the next one after a
// backoff; the drift timer is dropped until the identity is back.
// changeHubRefused: a hub the activity refuses (activities.ErrTypeHubRefused,
// an ExternalName Service) leaves the IdentityConfig Failed without a
// backoff. A history in which an older workflow worker met that error
// (a new activity worker during a rolling upgrade) took the backoff.
const changeHubRefused = "identityconfig-hub-refused"

func (x *identityConfig) fail(ctx workflow.Context, r *resourceLoop, f *oda.Failure) {
	x.drift.stop()
	r.retryAfterBackoff(ctx)
	r.report(ctx, PhaseIdentityFailed, false, f, identityNotReady())
}

// keycloakFailure names the failure after the activity's error type, so
// the status reason says whether to fix credentials or wait for Keycloak.
func keycloakFailure(what string, err error) *oda.Failure {
	reason := "KeycloakUnavailable"
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		switch appErr.Type() {
		case activities.ErrTypeKeycloakUnauthorized, activities.ErrTypeKeycloakMisconfigured, activities.ErrTypeKeycloakRejected, activities.ErrTypeOwnedElsewhere:
			reason = appErr.Type()
		case ErrTypeInvalid:
			reason = "SecretRejected"
		}
	}
	return &oda.Failure{Reason: reason, Message: what + ": " + rootMessage(err)}
}

func driftMessage(res activities.EnsureIdentityResult, creds activities.EnsureCredentialsResult) string {
	var parts []string
	if res.ClientCreated {
		parts = append(parts, "client re-created")
	}
	if len(res.RolesCreated) > 0 {
		parts = append(parts, "roles re-created: "+strings.Join(res.RolesCreated, ", "))
	}
	if len(res.RolesDeleted) > 0 {
		parts = append(parts, "undeclared roles deleted: "+strings.Join(res.RolesDeleted, ", "))
	}
	if res.CanvasRoleCreated || res.CanvasMappingAdded {
		parts = append(parts, "canvassystem role or grant restored")
	}
	if creds.Written {
		parts = append(parts, "Secret "+creds.SecretName+" rewritten")
	}
	return "Keycloak had drifted from the spec; repaired: " + strings.Join(parts, "; ")
}

// identityReadyStatus is the IdentityConfig's status once its identity is in
// place: the Keycloak operator's value (§1.5), the credentials operator's
// marker and implementation.ready, which the Component reads. The listener
// is registered when every hub the spec names has a subscription.
func identityReadyStatus(listenerRegistered bool) map[string]any {
	return map[string]any{
		"identityConfig": map[string]any{"identityProvider": identity.Provider, "listenerRegistered": listenerRegistered},
		"credentialsOperator/status.identityConfig": "secret created",
		"implementation": map[string]any{"ready": true},
	}
}

// identityNotReady leaves status.identityConfig as it was: a Component already past
// its identity step must not fall back because Keycloak is briefly down.
func identityNotReady() map[string]any {
	return map[string]any{"implementation": map[string]any{"ready": false}}
}

func containsString(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func (x *identityConfig) explain() (Explanation, error) {
	st := x.st.Resource
	return Explanation{Resource: x.ref().String(), UID: st.UID, DeploymentStatus: st.Phase, Failure: st.Failure}, nil
}
