package oda

import "fmt"

// OwnerRecord is the Kubernetes resource an object outside Kubernetes (a Keycloak
// client, a Vault mount, a credentials Secret) belongs to. odaflow records it
// on every such object it creates and checks it before it adopts, rotates or
// deletes one: a Canvas is shared by many teams, and a name alone (a client
// called `productcatalog`) says nothing about which team's it is.
//
// The tenancy boundary is the namespace: two resources of the same kind,
// namespace and name are the same tenant's, so a resource re-created under
// its old name (after skip-cleanup, say) keeps its objects, and the recorded
// uid is brought up to date. The uid is recorded so that an administrator can
// tell lifecycles apart.
type OwnerRecord struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	UID       string `json:"uid,omitempty"`
}

func (o OwnerRecord) String() string { return o.Namespace + "/" + o.Name }

// Same reports whether o and other are the same resource for ownership.
func (o OwnerRecord) Same(other OwnerRecord) bool {
	return o.Namespace == other.Namespace && o.Name == other.Name
}

// AnnotationAdopt, set to "true" on an IdentityConfig, lets odaflow take
// over, once, an object the Python Canvas created for it (it carries no
// owner record). The kopf finalizer on the resource asks for the same.
// Nothing is ever adopted by default.
const AnnotationAdopt = AnnotationPrefix + "adopt"

// AdoptRequested reports whether a resource asks odaflow to take over what
// the Python Canvas created for it.
func AdoptRequested(annotations map[string]string, finalizers []string) bool {
	if annotations[AnnotationAdopt] == "true" {
		return true
	}
	for _, f := range finalizers {
		if f == KopfFinalizer {
			return true
		}
	}
	return false
}

// Claim is what odaflow may do with an object that already exists.
type Claim int

const (
	// ClaimOwned: the object records this resource as its owner.
	ClaimOwned Claim = iota
	// ClaimAdopt: the object records no owner and the resource asked to
	// adopt it; the caller still checks that the object is really this
	// resource's before it writes the record.
	ClaimAdopt
	// ClaimForeign: the object records another resource as its owner.
	ClaimForeign
	// ClaimUnmarked: the object records no owner and no adoption was asked
	// for.
	ClaimUnmarked
)

// ClaimOf decides what the resource me may do with an existing object whose
// recorded owner is recorded (nil: none recorded).
func ClaimOf(recorded *OwnerRecord, me OwnerRecord, adopt bool) Claim {
	switch {
	case recorded == nil && adopt:
		return ClaimAdopt
	case recorded == nil:
		return ClaimUnmarked
	case recorded.Same(me):
		return ClaimOwned
	default:
		return ClaimForeign
	}
}

// ReasonOwnedElsewhere is the status reason (and error type) of a resource
// refused an object that another resource owns or nobody recorded.
const ReasonOwnedElsewhere = "OwnedElsewhere"

// Refusal explains why the object what (e.g. "Keycloak client
// productcatalog") cannot be used by resource me. The message goes to me's
// status and Events, which me's tenant reads: it names the other owner only
// when that owner is in me's own namespace. Another namespace is another
// tenant, whose namespaces and objects are none of this tenant's business
// (the Canvas administrator finds the owner in the object's record).
func Refusal(what string, c Claim, recorded *OwnerRecord, me OwnerRecord) string {
	switch c {
	case ClaimForeign:
		owner := "a resource in another namespace"
		if recorded.Namespace == me.Namespace {
			owner = recorded.String()
		}
		return fmt.Sprintf("%s belongs to %s, not to %s: odaflow never takes over, changes or deletes another resource's objects; choose another name", what, owner, me)
	case ClaimUnmarked:
		return fmt.Sprintf("%s exists but records no owner (created outside odaflow, e.g. by the Python Canvas): odaflow does not take it over unless %s asks for it with the annotation %s: \"true\"", what, me, AnnotationAdopt)
	case ClaimOwned, ClaimAdopt:
		// Nothing to refuse: the object is this resource's, or it asked to adopt it.
	}
	return ""
}
