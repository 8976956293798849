package watcher

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"path"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/odaflow/odaflow/oda"
	"github.com/odaflow/odaflow/workflows"
)

// NamespaceFilter decides which namespaces odaflow serves: a list of names
// and globs (`components`, `odacompns-*`); an empty list serves every one.
type NamespaceFilter struct {
	patterns []string
}

// NewNamespaceFilter validates the patterns.
func NewNamespaceFilter(patterns []string) (NamespaceFilter, error) {
	var out []string
	for _, p := range patterns {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		if _, err := path.Match(p, ""); err != nil {
			return NamespaceFilter{}, &BadPatternError{Pattern: p, Err: err}
		}
		out = append(out, p)
	}
	return NamespaceFilter{patterns: out}, nil
}

// BadPatternError is a namespace glob that does not parse.
type BadPatternError struct {
	Pattern string
	Err     error
}

func (e *BadPatternError) Error() string {
	return "namespace pattern " + e.Pattern + " is not a valid glob: " + e.Err.Error()
}

// Matches reports whether the namespace is served.
func (f NamespaceFilter) Matches(ns string) bool {
	if len(f.patterns) == 0 {
		return true
	}
	for _, p := range f.patterns {
		if ok, _ := path.Match(p, ns); ok {
			return true
		}
	}
	return false
}

// ignoredAnnotations change on every write by a controller and say nothing
// about the desired state.
var ignoredAnnotations = map[string]bool{
	oda.AnnotationObservedHash:                         true,
	oda.AnnotationStatusFence:                          true,
	oda.AnnotationStatusSeal:                           true,
	"kopf.zalando.org/last-handled-configuration":      true,
	"kubectl.kubernetes.io/last-applied-configuration": true,
}

// DesiredStateHash identifies what a resource's workflow acts on: spec,
// labels, annotations (but the bookkeeping ones), finalizers (but odaflow's
// own) and deletion. Status is left out on purpose: these CRDs have no status
// subresource, so every status write by odaflow (or anyone) fires a watch
// event, and re-driving the workflow for its own write would loop. odaflow's
// finalizer is left out for the same reason: adding it is the workflow's own
// write, and re-driving it cost a whole second reconcile.
func DesiredStateHash(obj *unstructured.Unstructured) string {
	return desiredStateHash(obj, hashCurrent)
}

// earlierDesiredStateHashes are the hashes earlier watchers computed for the
// same state. A restarted watcher accepts any of them in the observed-hash
// annotation, so an upgrade re-drives nothing.
func earlierDesiredStateHashes(obj *unstructured.Unstructured) []string {
	return []string{desiredStateHash(obj, hashWithOwnFinalizer), desiredStateHash(obj, hashEmptiedFinalizers)}
}

// hashVariant is how a watcher version hashed the finalizers.
type hashVariant int

const (
	// hashCurrent leaves odaflow's finalizer out, and no finalizers at all
	// hash alike however the list is spelt (absent, empty, emptied).
	hashCurrent hashVariant = iota
	// hashWithOwnFinalizer counted odaflow's finalizer.
	hashWithOwnFinalizer
	// hashEmptiedFinalizers left odaflow's finalizer out but hashed the
	// emptied list as [] where an object without finalizers hashes as
	// null: adding the finalizer, the workflow's own write, still changed
	// the hash and cost every IdentityConfig a second reconcile (Keycloak
	// calls, a Secret read, a status write).
	hashEmptiedFinalizers
)

func desiredStateHash(obj *unstructured.Unstructured, variant hashVariant) string {
	annotations := map[string]string{}
	for k, v := range obj.GetAnnotations() {
		if !ignoredAnnotations[k] {
			annotations[k] = v
		}
	}
	finalizers := obj.GetFinalizers()
	if variant != hashWithOwnFinalizer {
		finalizers = slices.DeleteFunc(slices.Clone(finalizers), func(f string) bool { return f == oda.Finalizer })
	}
	if variant == hashCurrent && len(finalizers) == 0 {
		finalizers = nil
	}
	spec := obj.Object["spec"]
	b, _ := json.Marshal(struct {
		Spec        any               `json:"spec"`
		Labels      map[string]string `json:"labels"`
		Annotations map[string]string `json:"annotations"`
		Finalizers  []string          `json:"finalizers"`
		Deleting    bool              `json:"deleting"`
	}{spec, obj.GetLabels(), annotations, finalizers, obj.GetDeletionTimestamp() != nil})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])[:16]
}

// statusForged reports whether an ODA resource carries a status (or a
// status-fence) that odaflow did not write: its seal, made with the key only
// odaflow holds, does not vouch for the status keys odaflow's last write set
// and the fence that write carried. An object nobody has written a status
// on yet is not forged. Without a key nothing is checked.
//
// Checking costs no request: the watcher has the object. odaflow's own
// writes are sealed, so they never count as forged and re-drive nothing;
// the exception is a lifecycle's first write when someone put members into
// the status before odaflow did (a merge keeps them): repaired once, after
// which odaflow's writes set each key whole.
func statusForged(key []byte, obj *unstructured.Unstructured) bool {
	if len(key) == 0 {
		return false
	}
	annotations := obj.GetAnnotations()
	fence, seal := annotations[oda.AnnotationStatusFence], annotations[oda.AnnotationStatusSeal]
	status, _ := obj.Object["status"].(map[string]any)
	if fence == "" && seal == "" && len(status) == 0 {
		return false
	}
	return !oda.SealVouchesStatus(key, string(obj.GetUID()), fence, seal, status)
}

// repairsAtOnce is how many versions of one resource in a row may be
// repaired without delay. A tenant's forgery is repaired by one write of
// odaflow's, whose sealed status resets the count. Repairs beyond it back
// off (repairDelay): the worker sealing with another key than the
// watcher's (a misconfiguration, logged) would otherwise re-drive every
// resource forever, and so would a tenant rewriting its status without
// pause (which the chart's admission policy refuses anyway).
const repairsAtOnce = 3

// maxRepairDelay bounds the backoff: a forged status stays at most this
// long.
const maxRepairDelay = 5 * time.Minute

// repairDelay is how much longer a repair of a resource must wait, after
// streak repairs in a row, the last one since ago; 0 is now.
func repairDelay(streak int, since time.Duration) time.Duration {
	if streak < repairsAtOnce {
		return 0
	}
	wait := maxRepairDelay
	if n := streak - repairsAtOnce; n < 9 {
		wait = min(time.Second<<n, maxRepairDelay)
	}
	return max(wait-since, 0)
}

// repairHash is the hash a repair is sent with: a hash the workflow has
// not handled (so it reconciles and writes its status again, with no change
// to the workflow's code), new for each forged version of the object (so a
// forgery after a repair is repaired too).
func repairHash(hash, resourceVersion string) string {
	return hashWith(hash, map[string]string{"statusRepair": resourceVersion})
}

// ResourceEventOf builds the signal a resource's workflow receives.
func ResourceEventOf(obj *unstructured.Unstructured) workflows.ResourceEvent {
	spec, _ := obj.Object["spec"].(map[string]any)
	status, _ := obj.Object["status"].(map[string]any)
	return workflows.ResourceEvent{
		UID:         string(obj.GetUID()),
		Generation:  obj.GetGeneration(),
		Hash:        DesiredStateHash(obj),
		Labels:      obj.GetLabels(),
		Annotations: oda.OdaflowAnnotations(obj.GetAnnotations()),
		Spec:        spec,
		Status:      status,
		Finalizers:  obj.GetFinalizers(),
		Deleting:    obj.GetDeletionTimestamp() != nil,

		ResourceVersion: obj.GetResourceVersion(),
	}
}

// ParentComponent is the Component that controls a child, from its
// controller owner reference.
func ParentComponent(obj *unstructured.Unstructured) (string, bool) {
	for _, ref := range obj.GetOwnerReferences() {
		if ref.Kind == oda.KindComponent.Name && strings.HasPrefix(ref.APIVersion, oda.Group+"/") && ref.Controller != nil && *ref.Controller {
			return ref.Name, true
		}
	}
	return "", false
}

// ChildStatusOf digests a child for its Component.
func ChildStatusOf(kind string, obj *unstructured.Unstructured) workflows.ChildStatus {
	status, _ := obj.Object["status"].(map[string]any)
	return workflows.ChildStatusFromObject(kind, obj.GetName(), string(obj.GetUID()), status)
}

// ParentKnows reports whether the Component's status already reflects the
// child's status, so a restarted watcher need not tell it again.
func ParentKnows(parent *unstructured.Unstructured, child workflows.ChildStatus) bool {
	status, _ := parent.Object["status"].(map[string]any)
	if status == nil {
		return false
	}
	switch child.Kind {
	case oda.KindExposedAPI.Name, oda.KindDependentAPI.Name:
		for _, seg := range oda.Segments {
			key := seg.ExposedStatusKey()
			if child.Kind == oda.KindDependentAPI.Name {
				key = seg.DependentStatusKey()
			}
			items, _ := status[key].([]any)
			for _, it := range items {
				m, _ := it.(map[string]any)
				if m["name"] != child.Name {
					continue
				}
				str := func(k string) string { v, _ := m[k].(string); return v }
				ready, _ := m["ready"].(bool)
				if str("uid") != child.UID || ready != child.Ready || str("url") != child.URL {
					return false
				}
				if child.Kind == oda.KindDependentAPI.Name {
					return true
				}
				var port *int64
				switch p := m["port"].(type) {
				case int64:
					port = &p
				case float64:
					n := int64(p)
					port = &n
				}
				samePort := (port == nil) == (child.Port == nil) && (port == nil || *port == *child.Port)
				return samePort && str("developerUI") == child.DeveloperUI && str("ip") == child.IP &&
					str("path") == child.Path && str("implementation") == child.Implementation
			}
		}
	case oda.KindIdentityConfig.Name:
		id, _ := status["identityConfig"].(map[string]any)
		provider, _ := id["identityProvider"].(string)
		listener, _ := id["listenerRegistered"].(bool)
		return provider == child.IdentityProvider && listener == child.ListenerRegistered
	case oda.KindSecretsManagement.Name:
		sm, _ := status["securitySecretsManagement"].(map[string]any)
		ready, _ := sm["ready"].(bool)
		uid, _ := sm["uid"].(string)
		return uid == child.UID && ready == child.Ready
	}
	return false
}
