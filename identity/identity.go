// Package identity holds the Keycloak rules of the identity step
// (oda-behaviour §2.3, §2.4, §5.3) as pure functions: which client and which
// roles an IdentityConfig asks for, and what must change in Keycloak to get
// there. The activities in package activities do the I/O.
package identity

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/odaflow/odaflow/api"
	"github.com/odaflow/odaflow/oda"
)

// Provider is the status value `status.identityConfig.identityProvider`.
const Provider = "Keycloak"

// CanvasSystemClient is the Keycloak client of the Canvas itself, a
// prerequisite installed with Keycloak (§2.3, "Keycloak prerequisites").
const CanvasSystemClient = "canvassystem"

// ManagedAttribute marks, on a Keycloak role, that odaflow created it from a
// declaration in the spec. Only roles carrying it are deleted when they are
// no longer declared: roles the dynamic-role listener adds (partyRole,
// permissionSpecificationSet) are not in the spec and must survive a
// reconcile.
const ManagedAttribute = "odaflow.oda.tmforum.org/managed"

// ManagedValue is the value of ManagedAttribute on static roles.
const ManagedValue = "static"

// Owner attributes on a Keycloak client: the IdentityConfig it was created
// for. Keycloak keeps client attributes as given, so they are the client's
// own record of its owner (see oda.OwnerRecord); a client without them is never
// taken over, rotated or deleted unless adopted explicitly.
const (
	OwnerNamespaceAttribute = "odaflow.oda.tmforum.org/owner-namespace"
	OwnerNameAttribute      = "odaflow.oda.tmforum.org/owner-name"
	OwnerUIDAttribute       = "odaflow.oda.tmforum.org/owner-uid"
)

// OwnerAttributes are the attributes that record o on a client.
func OwnerAttributes(o oda.OwnerRecord) map[string]string {
	return map[string]string{OwnerNamespaceAttribute: o.Namespace, OwnerNameAttribute: o.Name, OwnerUIDAttribute: o.UID}
}

// OwnerOf reads the owner a client's attributes record; nil when there is
// none (a client created outside odaflow, or by the Python Canvas).
func OwnerOf(attributes map[string]string) *oda.OwnerRecord {
	ns, name := attributes[OwnerNamespaceAttribute], attributes[OwnerNameAttribute]
	if ns == "" || name == "" {
		return nil
	}
	return &oda.OwnerRecord{Namespace: ns, Name: name, UID: attributes[OwnerUIDAttribute]}
}

// ReservedClients are client ids no IdentityConfig may have: the Canvas's
// own client, whose service account holds manage-clients, and the clients
// Keycloak creates in every realm. An IdentityConfig with one of these names
// would otherwise be handed that client's secret.
var ReservedClients = []string{CanvasSystemClient, "account", "account-console", "admin-cli", "broker", "realm-management", "security-admin-console"}

// Reserved reports whether name is a reserved client id. Keycloak compares
// client ids exactly, but the refusal ignores case so a look-alike is
// refused too.
func Reserved(name string) bool {
	for _, r := range ReservedClients {
		if strings.EqualFold(r, name) {
			return true
		}
	}
	return false
}

// pathSegment is what a hub path segment may hold: the unreserved URL
// characters. Nothing that ends the path (?, #), names another host (@, :)
// or needs escaping gets into the hub URL the worker calls.
var pathSegment = regexp.MustCompile(`^[A-Za-z0-9._~-]+$`)

// validAPIPath checks a partyRoleAPI/permissionSpecificationSetAPI path;
// leading and trailing slashes are optional (HubURL adds one).
func validAPIPath(p string) error {
	trimmed := strings.Trim(p, "/")
	if trimmed == "" {
		return nil
	}
	for _, seg := range strings.Split(trimmed, "/") {
		if seg == "" {
			return fmt.Errorf("must not contain an empty segment, got %q", p)
		}
		if seg == "." || seg == ".." || !pathSegment.MatchString(seg) {
			return fmt.Errorf("segments may hold only letters, digits and . _ ~ - (and not be . or ..), got %q", p)
		}
	}
	return nil
}

// SecretName is the credentials Secret of an IdentityConfig (§2.4, CRED
// step 3).
func SecretName(identityConfig string) string { return identityConfig + "-secret" }

// Role is one Keycloak client role.
type Role struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
}

// APIRef is a partyRoleAPI or permissionSpecificationSetAPI block.
type APIRef struct {
	Implementation string `json:"implementation"`
	Path           string `json:"path"`
	Port           int64  `json:"port"`
}

// Desired is the Keycloak state one IdentityConfig asks for.
type Desired struct {
	// ClientID is the Keycloak clientId: the IdentityConfig name, which is
	// the Component name (§2.1.5, §2.3 step 2).
	ClientID string `json:"clientId"`
	// CanvasSystemRole is created on the component client, created under the
	// same name on the canvassystem client (what BDD UC005-F001 checks) and
	// granted to the canvassystem service account (§5.3.2).
	CanvasSystemRole string `json:"canvasSystemRole"`
	// Roles are every role the component client must carry, by name:
	// the canvasSystemRole and each componentRole.
	Roles []Role `json:"roles"`
	// The listener registrations (§2.3 steps 7-8); nil when not declared.
	PartyRoleAPI                  *APIRef `json:"partyRoleAPI,omitempty"`
	PermissionSpecificationSetAPI *APIRef `json:"permissionSpecificationSetAPI,omitempty"`
}

// FromSpec works out the desired Keycloak state from an IdentityConfig's
// name and spec. It reports every problem at once.
func FromSpec(name string, spec map[string]any) (Desired, error) {
	var problems []string
	bad := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	d := Desired{ClientID: name}
	if name == "" {
		bad("metadata.name is required")
	}
	if Reserved(name) {
		bad("metadata.name %q is a reserved Keycloak client (%s): an IdentityConfig cannot take it", name, strings.Join(ReservedClients, ", "))
	}
	role, ok := spec["canvasSystemRole"].(string)
	switch {
	case spec["canvasSystemRole"] == nil:
		bad("spec.canvasSystemRole is required")
	case !ok:
		bad("spec.canvasSystemRole must be a string, got %T", spec["canvasSystemRole"])
	case strings.TrimSpace(role) == "":
		bad("spec.canvasSystemRole must not be empty")
	case checkRoleName(role) != nil:
		bad("spec.canvasSystemRole: %v", checkRoleName(role))
	default:
		d.CanvasSystemRole = role
	}
	byName := map[string]Role{}
	if d.CanvasSystemRole != "" {
		byName[d.CanvasSystemRole] = Role{Name: d.CanvasSystemRole}
	}
	if raw, present := spec["componentRole"]; present && raw != nil {
		list, ok := raw.([]any)
		if !ok {
			bad("spec.componentRole must be a list, got %T", raw)
		}
		for i, item := range list {
			obj, ok := item.(map[string]any)
			if !ok {
				bad("spec.componentRole[%d] must be an object, got %T", i, item)
				continue
			}
			n, _ := obj["name"].(string)
			if strings.TrimSpace(n) == "" {
				bad("spec.componentRole[%d].name is required", i)
				continue
			}
			// A role name is a path segment of Keycloak's admin API (the
			// canvasSystemRole on the canvassystem client too): checked
			// as the listener checks the names hubs send.
			if err := checkRoleName(n); err != nil {
				bad("spec.componentRole[%d].name: %v", i, err)
				continue
			}
			desc, _ := obj["description"].(string)
			if prev, dup := byName[n]; dup && prev.Description != "" && desc != "" && prev.Description != desc {
				bad("spec.componentRole[%d] declares role %q twice with different descriptions", i, n)
				continue
			}
			if desc == "" {
				desc = byName[n].Description
			}
			byName[n] = Role{Name: n, Description: desc}
		}
	}
	for _, n := range sortedKeys(byName) {
		d.Roles = append(d.Roles, byName[n])
	}
	for _, f := range []struct {
		key string
		dst **APIRef
	}{{"partyRoleAPI", &d.PartyRoleAPI}, {"permissionSpecificationSetAPI", &d.PermissionSpecificationSetAPI}} {
		raw, present := spec[f.key]
		if !present || raw == nil {
			continue
		}
		obj, ok := raw.(map[string]any)
		if !ok {
			bad("spec.%s must be an object, got %T", f.key, raw)
			continue
		}
		ref := &APIRef{}
		ref.Implementation, _ = obj["implementation"].(string)
		ref.Path, _ = obj["path"].(string)
		// The hub URL is built from these; they must name a Service in
		// the IdentityConfig's namespace and a path on it, nothing else,
		// or the worker would call any host its network reaches.
		if ref.Implementation == "" {
			bad("spec.%s.implementation is required", f.key)
		} else if errs := validation.IsDNS1123Label(ref.Implementation); len(errs) > 0 {
			bad("spec.%s.implementation must be the name of a Service in the namespace: %s", f.key, strings.Join(errs, "; "))
		}
		if ref.Path == "" {
			bad("spec.%s.path is required", f.key)
		} else if err := validAPIPath(ref.Path); err != nil {
			bad("spec.%s.path %v", f.key, err)
		}
		port, ok := api.ToInt(obj["port"])
		if !ok || port <= 0 || port > 65535 {
			bad("spec.%s.port must be a port number, got %v", f.key, obj["port"])
		}
		ref.Port = port
		*f.dst = ref
	}
	if len(problems) > 0 {
		return d, &SpecError{Problems: problems}
	}
	return d, nil
}

// SpecError lists everything wrong with an IdentityConfig spec. Retrying
// cannot help until the spec changes.
type SpecError struct{ Problems []string }

func (e *SpecError) Error() string {
	return "invalid IdentityConfig: " + strings.Join(e.Problems, "; ")
}

// ExistingRole is a role as Keycloak reports it.
type ExistingRole struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Managed is true when the role carries ManagedAttribute.
	Managed bool `json:"managed,omitempty"`
}

// RoleDiff is what must change on the component client.
type RoleDiff struct {
	// Create are declared roles the client lacks.
	Create []Role `json:"create,omitempty"`
	// Delete are roles odaflow created that are no longer declared.
	Delete []string `json:"delete,omitempty"`
}

// DiffRoles compares the declared roles with the client's roles. A role is
// deleted only when odaflow created it (ManagedAttribute) or an earlier
// spec declared it (previous, for roles created before the attribute
// existed, e.g. by the Python operator): roles added at run time by the
// listener stay. Both lists come out sorted so that activity results are
// stable.
func DiffRoles(desired []Role, existing []ExistingRole, previous []string) RoleDiff {
	want := map[string]bool{}
	for _, r := range desired {
		want[r.Name] = true
	}
	have := map[string]bool{}
	wasDeclared := map[string]bool{}
	for _, p := range previous {
		wasDeclared[p] = true
	}
	var diff RoleDiff
	for _, r := range existing {
		have[r.Name] = true
		if !want[r.Name] && (r.Managed || wasDeclared[r.Name]) {
			diff.Delete = append(diff.Delete, r.Name)
		}
	}
	for _, r := range desired {
		if !have[r.Name] {
			diff.Create = append(diff.Create, r)
		}
	}
	sort.Slice(diff.Create, func(i, j int) bool { return diff.Create[i].Name < diff.Create[j].Name })
	sort.Strings(diff.Delete)
	return diff
}

// RoleNames returns the names of roles, in order.
func RoleNames(roles []Role) []string {
	out := make([]string, 0, len(roles))
	for _, r := range roles {
		out = append(out, r.Name)
	}
	return out
}

// RotationNeeded reports whether the rotate-credentials annotation asks for
// new credentials: any non-empty value not yet handled rotates once.
func RotationNeeded(requested, handled string) bool {
	return requested != "" && requested != handled
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	//workflowcheck:ignore the keys are sorted below
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
