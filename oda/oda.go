// Package oda holds the ODA Canvas data model as odaflow sees it: the resource
// kinds and their names, the normalisation of a Component's API declarations,
// the children a Component should have, and the status the Canvas writes.
//
// Everything here is a pure function of its inputs so that the workflows can
// call it deterministically and the rules can be table-tested without a
// cluster. I/O lives in package activities.
package oda

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Group is the API group of every ODA resource.
const Group = "oda.tmforum.org"

// Version is the storage version odaflow reads and writes.
const Version = "v1"

// APIVersion is the apiVersion string of the objects odaflow writes.
const APIVersion = Group + "/" + Version

// LabelComponentName names the Component a resource belongs to. The Canvas
// test kit looks children up by it, and workloads carrying it are adopted.
const LabelComponentName = "oda.tmforum.org/componentName"

// KopfFinalizer is the finalizer the Python Canvas operators put on objects.
// odaflow removes it when it takes an object over, or deletions would hang
// once the Python operators are gone.
const KopfFinalizer = "kopf.zalando.org/KopfFinalizerMarker"

// Finalizer is odaflow's own finalizer, on kinds whose deletion needs cleanup
// outside Kubernetes (gateways, Keycloak, Vault, Service Inventory).
const Finalizer = "oda.tmforum.org/odaflow"

// AnnotationObservedHash records on an object the hash of the desired state
// (spec, labels, annotations) that its workflow last finished handling. A
// restarted watcher compares it with the object's current hash and stays
// silent when they match, so a restart re-drives nothing.
const AnnotationObservedHash = "odaflow.oda.tmforum.org/observed-hash"

// AnnotationStatusFence records on an object which workflow step wrote its
// status last: "<run start, Unix ns>.<history length>". A status write from
// an older step (a stale workflow task still running on a slow worker after
// a newer one finished) must not overwrite a newer one; see
// activities.StatusFence.
const AnnotationStatusFence = "odaflow.oda.tmforum.org/status-fence"

// AnnotationPrefix starts every annotation odaflow reads from a resource;
// the workflows receive these (and no others) with each event.
const AnnotationPrefix = "odaflow.oda.tmforum.org/"

// AnnotationSkipCleanup, set to "true" on a resource whose deletion is
// blocked because an external system (Keycloak, Vault, Kong, the Service
// Inventory) stays unreachable, is the explicit way out: odaflow releases the
// resource without cleaning up there, and says so in an Event.
const AnnotationSkipCleanup = AnnotationPrefix + "skip-cleanup"

// AnnotationRotateCredentials asks for new client credentials: any new value
// rotates them once.
const AnnotationRotateCredentials = AnnotationPrefix + "rotate-credentials"

// OdaflowAnnotations returns the annotations odaflow acts on, without the
// bookkeeping ones (observed hash, status fence, status seal).
func OdaflowAnnotations(all map[string]string) map[string]string {
	var out map[string]string
	for k, v := range all {
		if strings.HasPrefix(k, AnnotationPrefix) && !Bookkeeping(k) {
			if out == nil {
				out = map[string]string{}
			}
			out[k] = v
		}
	}
	return out
}

// Bookkeeping reports whether an annotation is one odaflow writes for
// itself on every status write (observed hash, status fence, status seal),
// as opposed to one users set to ask something of it. Only odaflow may
// write these (the chart's admission policy, docs/tenancy.md).
func Bookkeeping(annotation string) bool {
	return annotation == AnnotationObservedHash || annotation == AnnotationStatusFence || annotation == AnnotationStatusSeal
}

// FieldManager is the server-side-apply field manager of odaflow's writes.
const FieldManager = "odaflow"

// Kind describes one ODA resource kind.
type Kind struct {
	Name     string // Component
	Resource string // components
	// HasStatusSubresource is true only for the notification kinds; on every
	// other kind a status write goes through the main resource and bumps
	// metadata.generation.
	HasStatusSubresource bool
	// CleansUpOutside is true for kinds whose workflow removes something
	// outside the cluster when the object is deleted (a Keycloak client, a
	// Vault role): their deletion must wait for odaflow's finalizer.
	CleansUpOutside bool
}

// The ODA kinds.
var (
	KindComponent              = Kind{Name: "Component", Resource: "components"}
	KindExposedAPI             = Kind{Name: "ExposedAPI", Resource: "exposedapis"}
	KindDependentAPI           = Kind{Name: "DependentAPI", Resource: "dependentapis"}
	KindIdentityConfig         = Kind{Name: "IdentityConfig", Resource: "identityconfigs", CleansUpOutside: true}
	KindSecretsManagement      = Kind{Name: "SecretsManagement", Resource: "secretsmanagements", CleansUpOutside: true}
	KindPublishedNotification  = Kind{Name: "PublishedNotification", Resource: "publishednotifications", HasStatusSubresource: true}
	KindSubscribedNotification = Kind{Name: "SubscribedNotification", Resource: "subscribednotifications", HasStatusSubresource: true}
)

// Kinds lists every ODA kind, in the order children are applied.
var Kinds = []Kind{
	KindComponent, KindExposedAPI, KindDependentAPI, KindIdentityConfig,
	KindSecretsManagement, KindPublishedNotification, KindSubscribedNotification,
}

// GVR is the resource of this kind in the storage version.
func (k Kind) GVR() schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: Group, Version: Version, Resource: k.Resource}
}

// KindByName finds a kind by its Kind name.
func KindByName(name string) (Kind, bool) {
	for _, k := range Kinds {
		if k.Name == name {
			return k, true
		}
	}
	return Kind{}, false
}

// Ref identifies one resource.
type Ref struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

func (r Ref) String() string { return WorkflowID(r.Kind, r.Namespace, r.Name) }

// WorkflowID is the ID of the workflow that owns one resource's lifecycle:
// `<kind>/<namespace>/<name>`, readable in the Temporal Web UI.
func WorkflowID(kind, namespace, name string) string {
	return kind + "/" + namespace + "/" + name
}

// ParseWorkflowID is the inverse of WorkflowID.
func ParseWorkflowID(id string) (Ref, error) {
	parts := strings.Split(id, "/")
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
		return Ref{}, fmt.Errorf("workflow ID %q is not <kind>/<namespace>/<name>", id)
	}
	return Ref{Kind: parts[0], Namespace: parts[1], Name: parts[2]}, nil
}

// WorkloadRef names one workload a Component adopts (never its content).
type WorkloadRef struct {
	Group    string `json:"group,omitempty"`
	Version  string `json:"version"`
	Resource string `json:"resource"`
	Name     string `json:"name"`
	UID      string `json:"uid"`
}
