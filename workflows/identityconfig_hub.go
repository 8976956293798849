package workflows

import (
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/odaflow/odaflow/activities"
	"github.com/odaflow/odaflow/identity"
	"github.com/odaflow/odaflow/oda"
)

// hubOptions: the hub is the component's own API, which may still be
// starting when its IdentityConfig is reconciled, so registration retries
// for about half a minute before the workflow's backoff takes over with the
// reason in the status. A refusal (4xx) or a worker without a listener is
// not retried.
func hubOptions(summary string, attempts int32) workflow.ActivityOptions {
	return workflow.ActivityOptions{
		StartToCloseTimeout: 30 * time.Second,
		HeartbeatTimeout:    lostActivityTimeout,
		Summary:             summary,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:        2 * time.Second,
			BackoffCoefficient:     2,
			MaximumInterval:        15 * time.Second,
			MaximumAttempts:        attempts,
			NonRetryableErrorTypes: []string{activities.ErrTypeHubRejected, activities.ErrTypeListenerMisconfigured, activities.ErrTypeHubRefused},
		},
	}
}

// Attempts of one hub activity: registering, and unregistering on the way
// out, where the hub is usually being uninstalled at the same moment and
// waiting for it would only delay the client's deletion.
const (
	hubRegisterAttempts   = 5
	hubUnregisterAttempts = 2
)

// syncHubs makes the subscriptions match the hubs the spec names: a hub
// whose subscription the state holds is left alone (never registered
// twice), a missing one is registered, a changed hub URL is replaced, and
// one whose API left the spec is removed. On a drift check the activity
// also compares the stored callback and key with the worker's, so a moved
// listener or a rotated key is re-registered; unchanged, it makes no call.
func (x *identityConfig) syncHubs(ctx workflow.Context, r *resourceLoop, hubs []identity.Hub, drift bool) error {
	wanted := map[string]bool{}
	for _, h := range hubs {
		wanted[h.API] = true
	}
	var gone []activities.HubSubscription
	for _, s := range x.st.Hubs {
		if !wanted[s.API] {
			gone = append(gone, s)
		}
	}
	x.unregisterHubs(ctx, r, gone)
	var id *activities.Identity
	for _, h := range hubs {
		ex := x.subscription(h.API)
		if ex != nil && ex.HubURL == h.URL && !drift {
			continue
		}
		summary := "register the identity listener with hub " + h.URL
		if ex != nil && ex.HubURL == h.URL {
			summary = "check the hub subscription at " + h.URL
		}
		var res activities.RegisterHubResult
		if err := identityCall(ctx, hubOptions(summary, hubRegisterAttempts), id.RegisterHub, activities.RegisterHubInput{
			Ref: x.ref(), Hub: h, Existing: ex,
		}).Get(ctx, &res); err != nil {
			return err
		}
		x.setSubscription(res.Subscription)
		// A Component's IdentityConfig subscribing on its way to its first
		// Ready is part of that step (quietFirstReport); a later
		// subscription (a new hub, a repaired one) is news.
		if res.Registered && !r.quietFirstReport() {
			x.event(ctx, r, "Normal", "HubRegistered", fmt.Sprintf("listener subscribed to %s hub %s (subscription %q)", h.API, h.URL, res.Subscription.ID))
		}
		if res.StaleLeft {
			x.event(ctx, r, "Warning", "HubUnsubscribeFailed", fmt.Sprintf("replaced subscription %q at %s could not be removed", res.Replaced, ex.HubURL))
		}
	}
	return nil
}

// unregisterHubs removes subscriptions, best effort: a hub that cannot be
// reached after a couple of attempts is usually being uninstalled with
// the component, and blocking the IdentityConfig's deletion (or an update)
// on it would leave the Keycloak client behind for nothing. What is left
// says so in a Warning Event; its events would be refused (404) once the
// IdentityConfig is gone.
func (x *identityConfig) unregisterHubs(ctx workflow.Context, r *resourceLoop, subs []activities.HubSubscription) {
	var id *activities.Identity
	for _, s := range subs {
		err := identityCall(ctx, hubOptions("unregister the identity listener from hub "+s.HubURL, hubUnregisterAttempts), id.UnregisterHub,
			activities.UnregisterHubInput{Ref: x.ref(), Subscription: s}).Get(ctx, nil)
		if err != nil {
			x.event(ctx, r, "Warning", "HubUnsubscribeFailed", fmt.Sprintf("subscription %q at %s left behind: %s", s.ID, s.HubURL, rootMessage(err)))
		}
		x.dropSubscription(s.API)
	}
}

func (x *identityConfig) subscription(api string) *activities.HubSubscription {
	for i := range x.st.Hubs {
		if x.st.Hubs[i].API == api {
			s := x.st.Hubs[i]
			return &s
		}
	}
	return nil
}

func (x *identityConfig) setSubscription(s activities.HubSubscription) {
	x.dropSubscription(s.API)
	x.st.Hubs = append(x.st.Hubs, s)
}

func (x *identityConfig) dropSubscription(api string) {
	kept := x.st.Hubs[:0]
	for _, s := range x.st.Hubs {
		if s.API != api {
			kept = append(kept, s)
		}
	}
	x.st.Hubs = kept
	if len(x.st.Hubs) == 0 {
		x.st.Hubs = nil
	}
}

// subscribed is the set of hub URLs with a subscription.
func (x *identityConfig) subscribed() map[string]bool {
	out := map[string]bool{}
	for _, s := range x.st.Hubs {
		out[s.HubURL] = true
	}
	return out
}

// maxQueuedRoleEvents bounds the events kept while the identity is not
// Ready: a hub (or a leaked token) flooding the listener must not grow the
// workflow state, which travels through every Continue-As-New.
const maxQueuedRoleEvents = 500

// queueRoleEvent keeps an event for applyRoleEvents, or drops it when the
// queue is full, saying so once per full spell.
func (x *identityConfig) queueRoleEvent(ctx workflow.Context, r *resourceLoop, ev identity.RoleEvent) {
	if len(x.st.RoleEvents) < maxQueuedRoleEvents {
		x.st.RoleEvents = append(x.st.RoleEvents, ev)
		return
	}
	x.st.RoleEventsDropped++
	if x.st.RoleEventsDropped == 1 {
		x.event(ctx, r, "Warning", "RoleEventsDropped", fmt.Sprintf("%d role events are waiting for the identity to be Ready; later ones are dropped (first: %s for role %s)",
			maxQueuedRoleEvents, ev.EventType, ev.Role.Name))
	}
}

// applyRoleEvents applies the queued listener events in arrival order
// while the identity is Ready. An event Keycloak refuses for its content
// is dropped with a Warning Event; any other failure leaves it at the head
// of the queue and marks the identity Failed, so it is applied after the
// backoff, in order.
func (x *identityConfig) applyRoleEvents(ctx workflow.Context, r *resourceLoop) {
	if r.st.Deleting || r.st.Phase != PhaseIdentityReady || len(x.st.RoleEvents) == 0 {
		return
	}
	d, err := identity.FromSpec(x.name, r.st.Spec)
	if err != nil {
		return
	}
	var id *activities.Identity
	for len(x.st.RoleEvents) > 0 {
		ev := x.st.RoleEvents[0]
		if dec := identity.DecideRoleEvent(d, ev); !dec.Apply {
			x.st.RoleEvents = x.st.RoleEvents[1:]
			x.event(ctx, r, "Normal", "RoleEventIgnored", dec.Reason)
			continue
		}
		var res activities.ApplyRoleEventResult
		err := identityCall(ctx, keycloakOptions(fmt.Sprintf("%s role %s (%s)", ev.Action, ev.Role.Name, ev.EventType)), id.ApplyRoleEvent,
			activities.ApplyRoleEventInput{Ref: x.ref(), ClientID: x.name, Event: ev}).Get(ctx, &res)
		var appErr *temporal.ApplicationError
		switch {
		case errors.As(err, &appErr) && appErr.Type() == activities.ErrTypeKeycloakRejected:
			x.st.RoleEvents = x.st.RoleEvents[1:]
			x.event(ctx, r, "Warning", "RoleEventRejected", fmt.Sprintf("%s for role %s: %s", ev.EventType, ev.Role.Name, rootMessage(err)))
			continue
		case err != nil:
			x.fail(ctx, r, keycloakFailure(fmt.Sprintf("could not %s dynamic role %s", ev.Action, ev.Role.Name), err))
			return
		}
		x.st.RoleEvents = x.st.RoleEvents[1:]
		if res.Changed {
			reason, msg := "DynamicRoleAdded", "role %s added to Keycloak client %s (%s)"
			if ev.Action == identity.RoleRemove {
				reason, msg = "DynamicRoleRemoved", "role %s removed from Keycloak client %s (%s)"
			}
			x.event(ctx, r, "Normal", reason, fmt.Sprintf(msg, ev.Role.Name, x.name, ev.EventType))
		}
	}
	if len(x.st.RoleEvents) == 0 {
		x.st.RoleEvents, x.st.RoleEventsDropped = nil, 0
	}
}

// hubFailure names the failure after the hub activity's error type.
func hubFailure(err error) *oda.Failure {
	reason := activities.ErrTypeHubUnavailable
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		switch appErr.Type() {
		case activities.ErrTypeHubRejected, activities.ErrTypeListenerMisconfigured, activities.ErrTypeHubRefused:
			reason = appErr.Type()
		}
	}
	return &oda.Failure{Reason: reason, Message: "could not subscribe the identity listener to the hub: " + rootMessage(err)}
}

// event records a Kubernetes Event on the IdentityConfig. Events are
// information: a failed write is not worth a retry.
func (x *identityConfig) event(ctx workflow.Context, r *resourceLoop, typ, reason, message string) {
	var kube *activities.Kube
	_ = kubeCall(ctx, "event "+reason, kube.WriteStatus, activities.WriteStatusInput{
		Ref: x.ref(), UID: r.st.UID, Status: map[string]any{}, Event: &activities.Event{Type: typ, Reason: reason, Message: message},
	}).Get(ctx, nil)
}
