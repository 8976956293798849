// Package workflows holds odaflow's durable lifecycles, one workflow per ODA
// resource, with ID `<kind>/<namespace>/<name>`. Workflows decide; they call
// package oda for every rule and package activities for every side effect.
package workflows

import (
	"time"

	"github.com/odaflow/odaflow/activities"
	"github.com/odaflow/odaflow/dependency"
	"github.com/odaflow/odaflow/gateway"
	"github.com/odaflow/odaflow/oda"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// Signal and query names, shared with the watcher and the CLI.
const (
	// SignalResourceEvent carries the resource's own desired state (spec,
	// labels, deletion) from the watcher.
	SignalResourceEvent = "resource-event"
	// SignalChildStatus carries a child's status change to its Component.
	SignalChildStatus = "child-status"
	// QueryExplain answers "why is this resource not done?".
	QueryExplain = "explain"
	// SignalAdopt asks a Component to adopt workloads carrying its label.
	SignalAdopt = "adopt"
)

// Adopt lists workloads labelled for a Component that it does not own yet.
type Adopt struct {
	Workloads []oda.WorkloadRef `json:"workloads"`
}

// ResourceEvent is what the watcher knows of a resource when it changes.
// It never carries Secret data: only ODA custom resources travel here.
type ResourceEvent struct {
	UID        string `json:"uid"`
	Generation int64  `json:"generation"`
	// Hash identifies the desired state (spec, labels, annotations, deletion
	// and finalizers), computed by the watcher; equal hashes need no work.
	Hash   string            `json:"hash"`
	Labels map[string]string `json:"labels,omitempty"`
	// Annotations are only odaflow's own (oda.AnnotationPrefix): the
	// explicit requests a user makes, such as skip-cleanup.
	Annotations map[string]string `json:"annotations,omitempty"`
	Spec        map[string]any    `json:"spec,omitempty"`
	// Status is the object's status as last seen. A new workflow run reads
	// the children an earlier run (or the Python Canvas) recorded there.
	Status     map[string]any `json:"status,omitempty"`
	Finalizers []string       `json:"finalizers,omitempty"`
	// Deleting is true once metadata.deletionTimestamp is set.
	Deleting bool `json:"deleting,omitempty"`
	// Deleted is true when the object is gone from the apiserver.
	Deleted bool `json:"deleted,omitempty"`
	// ResourceVersion is the object's version this event was made from. It
	// guards a lifecycle's first status write (WriteStatusInput).
	ResourceVersion string `json:"resourceVersion,omitempty"`
	// Exposure is what an ExposedAPI's workflow needs from the cluster
	// around it, read by the watcher from its caches so that the workflow
	// makes no list calls.
	Exposure *Exposure `json:"exposure,omitempty"`
	// Dependency is what a DependentAPI's workflow needs, read the same way.
	Dependency *Dependency `json:"dependency,omitempty"`
}

// Dependency is the cluster state a DependentAPI depends on: the
// ExposedAPIs that serve its specification URL (found through the
// watcher's index on specification URL) in the namespaces it may trust
// (dependency.Trust), ready or not, each as odaflow computes it
// (ProviderOf), never as its status says. The workflow chooses among them
// with dependency.Match.
type Dependency struct {
	Providers []dependency.Provider `json:"providers,omitempty"`
}

// Exposure is the cluster state an ExposedAPI depends on.
type Exposure struct {
	// Ingress is the gateway's ingress address; nil while it has none
	// (the workflow waits durably for the next event).
	Ingress *gateway.Ingress `json:"ingress,omitempty"`
	// ImplementationReady is true when the implementation Service has a
	// ready endpoint.
	ImplementationReady bool `json:"implementationReady"`
	// ConflictsWith names the ExposedAPI (namespace/name) that holds, or
	// claimed first, a path prefix overlapping this one's; set only when
	// this one lost. One in another namespace is not named ("in another
	// namespace"): the refusal goes to this namespace's status and Events.
	ConflictsWith string `json:"conflictsWith,omitempty"`
	// HostnameRefused is true when spec.hostname is not one the Canvas
	// allows in URLs (gateway.HostnameAllowed). Histories from before the
	// allow-list lack it and read false, as they were decided.
	HostnameRefused bool `json:"hostnameRefused,omitempty"`
}

// ChildStatus is a child's status as its Component needs it.
type ChildStatus struct {
	Kind           string `json:"kind"`
	Name           string `json:"name"`
	UID            string `json:"uid"`
	Ready          bool   `json:"ready"`
	URL            string `json:"url,omitempty"`
	DeveloperUI    string `json:"developerUI,omitempty"`
	IP             string `json:"ip,omitempty"`
	Path           string `json:"path,omitempty"`
	Port           *int64 `json:"port,omitempty"`
	Implementation string `json:"implementation,omitempty"`
	// IdentityProvider and ListenerRegistered come from an IdentityConfig.
	IdentityProvider   string `json:"identityProvider,omitempty"`
	ListenerRegistered bool   `json:"listenerRegistered,omitempty"`
	// Deleted means the child disappeared; the Component re-creates it.
	Deleted bool `json:"deleted,omitempty"`
}

// lostActivityTimeout is the heartbeat timeout of every remote activity:
// how long the Temporal server waits to hear from the worker running it
// before it runs it again elsewhere. The worker heartbeats on the
// activities' behalf while they run (worker.livenessHeartbeats), so this
// bounds the stall when a task was lost to a stopping or crashed worker,
// which otherwise lasts the whole start-to-close timeout. Activity options
// are not part of the commands replay compares.
const lostActivityTimeout = 10 * time.Second

// kubeRetryPolicy applies to every apiserver activity. The apiserver is
// normally fast, so attempts are short; transient failures (apiserver
// restarts, 429, 5xx) retry with backoff for about two minutes before the
// workflow marks the resource Failed and schedules its own retry.
var kubeRetryPolicy = &temporal.RetryPolicy{
	InitialInterval:        500 * time.Millisecond,
	BackoffCoefficient:     2,
	MaximumInterval:        30 * time.Second,
	MaximumAttempts:        8,
	NonRetryableErrorTypes: []string{ErrTypeInvalid},
}

// kubeCall runs one apiserver activity as a local activity: it takes tens
// of milliseconds, so a round trip through the Temporal server's task
// queues (three history events and two task hops per call) buys nothing.
func kubeCall(ctx workflow.Context, summary string, activity any, args ...any) workflow.Future {
	return workflow.ExecuteLocalActivity(workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout:    30 * time.Second,
		ScheduleToCloseTimeout: 2 * time.Minute,
		Summary:                summary,
		RetryPolicy:            kubeRetryPolicy,
	}), activity, args...)
}

// ErrTypeInvalid marks an error the apiserver will keep refusing (422, 400):
// retrying cannot help until the spec changes. The activities raise it.
const ErrTypeInvalid = activities.ErrTypeInvalid

// retryBackoff is how long a Failed resource waits before trying again on its
// own: doubling from one minute, at most ten.
func retryBackoff(failures int) time.Duration {
	d := time.Minute
	for i := 1; i < failures && d < 10*time.Minute; i++ {
		d *= 2
	}
	if d > 10*time.Minute {
		d = 10 * time.Minute
	}
	return d
}
