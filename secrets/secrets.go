// Package secrets holds the rules of ODA secrets management with HashiCorp
// Vault (oda-behaviour §2.6) as pure functions: the Vault names of a
// SecretsManagement, its policy and login role, which pods it selects, and
// the sidecar a selected pod receives. The activities (package activities)
// and the admission webhook (package webhook/sidecar) do the I/O; the rules
// live here so that both apply the same ones and tests need no server.
package secrets

import (
	"fmt"
	"strings"

	"github.com/odaflow/odaflow/api"
)

// Pod labels of the Canvas (§2.6, COMPONENTNAME_LABEL and
// SECRETSMANAGEMENTTYPE_LABEL).
const (
	// LabelSecretsManagement marks a pod (or Deployment) that wants a
	// sidecar; its value is the secrets-management type, "sidecar".
	LabelSecretsManagement = "oda.tmforum.org/secretsmanagement"
	// LabelSidecarValue is the value of LabelSecretsManagement that asks
	// for the sidecar.
	LabelSidecarValue = "sidecar"
	// LabelComponentName names the pod's Component, and so its
	// SecretsManagement (the Component operator names it after the
	// Component, §2.1.4).
	LabelComponentName = "oda.tmforum.org/componentName"
)

// SidecarName is the name of the injected container; a pod that has a
// container of this name already has its sidecar.
const SidecarName = "smansidecar"

// TypeSideCar is the only secrets-management type the CRD allows.
const TypeSideCar = "sideCar"

// DefaultSidecarPort is the sidecar's port when spec.sideCar.port is absent.
const DefaultSidecarPort = 5000

// BasePath is the folder inside the kv mount that the sidecar reads and
// writes (SECRETS_BASE_PATH_TPL, "sidecar" in the Canvas).
const BasePath = "sidecar"

// Names are the Vault objects of one SecretsManagement.
type Names struct {
	// CIID is `<namespace>.<name>`, the component instance id.
	CIID   string `json:"ciid"`
	Mount  string `json:"mount"`
	Policy string `json:"policy"`
	Role   string `json:"role"`
}

// CIIDSeparator joins namespace and name in the CIID. The Canvas joined
// them with "-", so `team`/`x-billing` and `team-x`/`billing` shared one
// mount, policy and role. A namespace is a DNS-1123 label and cannot hold
// a ".", so the first "." of a CIID always ends the namespace: no two
// SecretsManagements share a CIID (docs/tenancy.md).
const CIIDSeparator = "."

// NamesFor returns the Vault names of SecretsManagement namespace/name with
// the Canvas umbrella chart's templates, mount `kv-sman-{0}`, policy
// `sman-{0}-policy`, role `sman-{0}-role`, {0} being the CIID
// `<namespace>.<name>`.
func NamesFor(namespace, name string) Names {
	ciid := namespace + CIIDSeparator + name
	return Names{
		CIID:   ciid,
		Mount:  "kv-sman-" + ciid,
		Policy: "sman-" + ciid + "-policy",
		Role:   "sman-" + ciid + "-role",
	}
}

// Selector is spec.podSelector: shell-style globs (Python fnmatch, as the
// Canvas matches them) on the pod's name, namespace and service account.
// An empty name or namespace selects everything: the CRD does not require
// the fields, and "no constraint" is the only reading that does not
// silently select nothing. An empty service account means the namespace's
// `default` one (DefaultServiceAccount), because Vault binds its login role
// to it: "any" would let every workload in the namespace read the secrets.
type Selector struct {
	Namespace      string `json:"namespace,omitempty"`
	Name           string `json:"name,omitempty"`
	ServiceAccount string `json:"serviceaccount,omitempty"`
}

// Spec is a SecretsManagement spec.
type Spec struct {
	Type        string   `json:"type"`
	PodSelector Selector `json:"podSelector"`
	// SidecarPort is spec.sideCar.port, DefaultSidecarPort when absent.
	SidecarPort int `json:"sidecarPort"`
}

// ParseSpec reads a SecretsManagement spec (as the apiserver returns it,
// numbers as float64 or int64) and reports every problem at once.
func ParseSpec(spec map[string]any) (Spec, error) {
	in, errs := api.Decode[api.SecretsManagementSpec](spec, "spec")
	out := Spec{Type: in.Type, SidecarPort: DefaultSidecarPort}
	if in.Type != TypeSideCar && !errs.At("spec.type") {
		errs.Add("spec.type", "must be %s, got %q", TypeSideCar, in.Type)
	}
	if in.PodSelector == nil {
		if !errs.At("spec.podSelector") {
			errs.Add("spec.podSelector", "is required")
		}
	} else {
		out.PodSelector = Selector(*in.PodSelector)
		for _, f := range []struct{ key, glob string }{
			{"namespace", out.PodSelector.Namespace}, {"name", out.PodSelector.Name}, {"serviceaccount", out.PodSelector.ServiceAccount},
		} {
			if err := validGlob(f.glob); err != nil {
				errs.Add("spec.podSelector."+f.key, "%v", err)
			}
		}
	}
	if in.SideCar != nil && in.SideCar.Port != nil {
		if p := *in.SideCar.Port; p < 1 || p > 65535 {
			errs.Add("spec.sideCar.port", "must be a port number, got %d", p)
		} else {
			out.SidecarPort = int(p)
		}
	}
	if len(errs) > 0 {
		msgs := make([]string, len(errs))
		for i, e := range errs {
			msgs[i] = e.Path + " " + e.Message
		}
		return out, fmt.Errorf("invalid SecretsManagement spec: %s", strings.Join(msgs, "; "))
	}
	return out, nil
}

// PodInfo is what selection needs to know of a pod.
type PodInfo struct {
	Namespace string
	// Name is the pod's name; at admission it is often empty and
	// GenerateName (e.g. `demo-a-prodcatapi-57868f9d7c-`) stands in for it.
	Name, GenerateName string
	ServiceAccount     string
	Labels             map[string]string
	Containers         []string
}

// podName is the name selection matches: the name, or at admission of a
// pod with a generated name, its prefix.
func (p PodInfo) podName() string {
	if p.Name != "" {
		return p.Name
	}
	return p.GenerateName
}

// DefaultServiceAccount is the service account of a pod that names none,
// and what an empty spec.podSelector.serviceaccount selects.
const DefaultServiceAccount = "default"

func (p PodInfo) serviceAccount() string {
	if p.ServiceAccount == "" {
		return DefaultServiceAccount
	}
	return p.ServiceAccount
}

func (s Selector) serviceAccount() string {
	if s.ServiceAccount == "" {
		return DefaultServiceAccount
	}
	return s.ServiceAccount
}

// WantsSidecar reports whether the pod asks for the secrets sidecar.
func (p PodInfo) WantsSidecar() bool {
	return p.Labels[LabelSecretsManagement] == LabelSidecarValue
}

// HasSidecar reports whether the pod already runs the sidecar.
func (p PodInfo) HasSidecar() bool {
	for _, c := range p.Containers {
		if c == SidecarName {
			return true
		}
	}
	return false
}

// Matches reports whether the selector's globs match the pod, and if not,
// which field failed (for the admission message and the explain query).
func (s Selector) Matches(p PodInfo) (bool, string) {
	switch {
	case !Glob(s.Namespace, p.Namespace):
		return false, fmt.Sprintf("namespace %q does not match %q", p.Namespace, s.Namespace)
	case !Glob(s.Name, p.podName()):
		return false, fmt.Sprintf("pod name %q does not match %q", p.podName(), s.Name)
	case !Glob(s.serviceAccount(), p.serviceAccount()):
		return false, fmt.Sprintf("service account %q does not match %q", p.serviceAccount(), s.serviceAccount())
	}
	return true, ""
}

// Selects reports whether SecretsManagement smName (in the pod's
// namespace) is the one for this pod: the pod asks for a sidecar, belongs
// to the SecretsManagement's Component when it says which, and matches the
// selector. The workflow (which pods must run the sidecar) and the webhook
// (which pods get it) use this one rule.
func Selects(smName string, s Spec, p PodInfo) bool {
	if !p.WantsSidecar() {
		return false
	}
	if c, ok := p.Labels[LabelComponentName]; ok && !strings.EqualFold(c, smName) {
		return false
	}
	ok, _ := s.PodSelector.Matches(p)
	return ok
}

// PolicyHCL is the Vault policy of a SecretsManagement: create, read,
// update, delete and patch on the secrets under its base path, deliberately
// without list (as in the Canvas), so a sidecar reads only keys it knows.
// The metadata path lets a sidecar delete a key with its versions.
func PolicyHCL(n Names) string {
	return fmt.Sprintf(`# odaflow: secrets of SecretsManagement %[1]s
path "%[2]s/data/%[3]s/*" {
  capabilities = ["create", "read", "update", "delete", "patch"]
}
path "%[2]s/metadata/%[3]s/*" {
  capabilities = ["delete"]
}
`, n.CIID, n.Mount, BasePath)
}

// RoleInput configures the login role.
type RoleInput struct {
	// Namespace is the SecretsManagement's namespace: the only namespace
	// whose service accounts may log in. The Canvas bound the selector's
	// namespace glob instead, so `*` let any namespace's pods read the
	// secrets; odaflow selects pods in the SecretsManagement's namespace
	// only (as the Canvas's webhook and restarts already did), and binds
	// Vault to the same.
	Namespace string
	// Audience, when set, is the audience the service-account token must
	// carry.
	Audience string
	// TTLSeconds is the token lifetime; 3600 (the Canvas's) when zero.
	TTLSeconds int
}

// RoleBody is the body of `auth/<kubernetes path>/role/<role>`: Vault's
// kubernetes auth binds service-account names (globs allowed) and
// namespaces. A pod-name glob cannot be bound there (a service-account
// token names no pod unless it is pod-bound); the webhook applies it, so
// only selected pods get a sidecar that logs in.
func RoleBody(n Names, s Spec, in RoleInput) map[string]any {
	sa := s.PodSelector.serviceAccount()
	ttl := in.TTLSeconds
	if ttl == 0 {
		ttl = 3600
	}
	body := map[string]any{
		"bound_service_account_names":      []string{sa},
		"bound_service_account_namespaces": []string{in.Namespace},
		"token_policies":                   []string{n.Policy},
		"token_ttl":                        ttl,
		"token_max_ttl":                    ttl,
		// Vault keeps a role's alias by service-account name, so that a
		// policy templated on the entity would see the workload, not a uid.
		"alias_name_source": "serviceaccount_name",
	}
	if in.Audience != "" {
		body["audience"] = in.Audience
	}
	return body
}

// SelectsNamespace reports whether the selector can select any pod in the
// SecretsManagement's own namespace; when not, it selects nothing and the
// status says so.
func (s Selector) SelectsNamespace(ns string) bool { return Glob(s.Namespace, ns) }

// AnnotationKeepData, set to "true" on a SecretsManagement, keeps its kv
// mount (the secrets) when it is deleted; only the access (role, policy)
// is removed.
const AnnotationKeepData = "odaflow.oda.tmforum.org/keep-secrets"

// MountOwnerPrefix starts the description odaflow gives a kv mount: the
// mount's record of the SecretsManagement it belongs to. Vault mounts have
// no other free-form field, and only a Vault administrator can change a
// description (sys/mounts/<path>/tune).
const MountOwnerPrefix = "odaflow: ODA SecretsManagement "

// MountDescription is the description that records owner on a mount.
func MountDescription(namespace, name, uid string) string {
	return MountOwnerPrefix + namespace + "/" + name + " uid " + uid
}

// MountOwner reads the owner a mount's description records: namespace,
// name and uid, ok false when the description records none.
func MountOwner(description string) (namespace, name, uid string, ok bool) {
	rest, found := strings.CutPrefix(description, MountOwnerPrefix)
	if !found {
		return "", "", "", false
	}
	ref, uid, _ := strings.Cut(rest, " uid ")
	namespace, name, found = strings.Cut(ref, "/")
	if !found || namespace == "" || name == "" {
		return "", "", "", false
	}
	return namespace, name, uid, true
}
