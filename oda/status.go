package oda

import "strings"

// The deployment_status values. All but Failed are the Canvas's own; Failed is
// odaflow's addition for a step that cannot succeed (with a condition saying why).
const (
	StatusCompCon    = "In-Progress-CompCon"
	StatusIDConfOp   = "In-Progress-IDConfOp"
	StatusSecretMan  = "In-Progress-SecretMan"
	StatusDepAPI     = "In-Progress-DepApi"
	StatusComplete   = "Complete"
	StatusFailed     = "Failed"
	IdentityNotSet   = "Not set"
	summaryStatusKey = "summary/status"
)

// APIEntry is one element of a Component's `<segment>APIs` or
// `<segment>DependentAPIs` status list, in the Canvas's shape.
type APIEntry struct {
	Name           string `json:"name"`
	UID            string `json:"uid"`
	Ready          bool   `json:"ready"`
	URL            string `json:"url,omitempty"`
	DeveloperUI    string `json:"developerUI,omitempty"`
	IP             string `json:"ip,omitempty"`
	Path           string `json:"path,omitempty"`
	Port           *int64 `json:"port,omitempty"`
	Implementation string `json:"implementation,omitempty"`
}

// Complete is the Canvas's rule: an API counts when it has a url and is ready.
func (e APIEntry) Complete() bool { return e.URL != "" && e.Ready }

// SecretsEntry is the Component's securitySecretsManagement status.
type SecretsEntry struct {
	Name  string `json:"name"`
	UID   string `json:"uid"`
	Ready bool   `json:"ready"`
}

// IdentityStatus is the Component's status.identityConfig.
type IdentityStatus struct {
	IdentityProvider   string `json:"identityProvider"`
	ListenerRegistered bool   `json:"listenerRegistered"`
}

// EventEntry is one element of publishedEvents / subscribedEvents.
type EventEntry struct {
	Name string `json:"name"`
	UID  string `json:"uid"`
}

// Condition is a standard Kubernetes condition (metav1.Condition's shape).
type Condition struct {
	Type               string `json:"type"`
	Status             string `json:"status"`
	ObservedGeneration int64  `json:"observedGeneration,omitempty"`
	LastTransitionTime string `json:"lastTransitionTime"`
	Reason             string `json:"reason"`
	Message            string `json:"message"`
}

// ComponentStatus is everything odaflow knows about a Component's progress.
type ComponentStatus struct {
	APIs              map[Segment][]APIEntry `json:"apis,omitempty"`
	DependentAPIs     map[Segment][]APIEntry `json:"dependentAPIs,omitempty"`
	SecretsManagement *SecretsEntry          `json:"secretsManagement,omitempty"`
	// SecretsManagementSpec is merged into securitySecretsManagement as the
	// Canvas does once the spec exists.
	SecretsManagementSpec map[string]any  `json:"secretsManagementSpec,omitempty"`
	Identity              *IdentityStatus `json:"identity,omitempty"`
	PublishedEvents       []EventEntry    `json:"publishedEvents,omitempty"`
	SubscribedEvents      []EventEntry    `json:"subscribedEvents,omitempty"`
	// Failure, when set, makes deployment_status Failed.
	Failure *Failure `json:"failure,omitempty"`
}

// Failure says why a Component cannot progress.
type Failure struct {
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// InProgress reports whether a deployment_status is one of the In-Progress
// phases (neither Complete nor Failed).
func InProgress(status string) bool {
	switch status {
	case StatusCompCon, StatusIDConfOp, StatusSecretMan, StatusDepAPI:
		return true
	}
	return false
}

// DeploymentStatus is the Canvas's state machine (oda-behaviour §2.1.6), a
// single nested pass, plus Failed.
func DeploymentStatus(s ComponentStatus) string {
	if s.Failure != nil {
		return StatusFailed
	}
	if !allComplete(s.APIs) {
		return StatusCompCon
	}
	if s.Identity == nil || s.Identity.IdentityProvider == "" || s.Identity.IdentityProvider == IdentityNotSet {
		return StatusIDConfOp
	}
	if s.SecretsManagement != nil && !s.SecretsManagement.Ready {
		return StatusSecretMan
	}
	if !allComplete(s.DependentAPIs) {
		return StatusDepAPI
	}
	return StatusComplete
}

func allComplete(lists map[Segment][]APIEntry) bool {
	for _, seg := range Segments {
		for _, e := range lists[seg] {
			if !e.Complete() {
				return false
			}
		}
	}
	return true
}

// Summary is the `summary/status` object the Canvas writes.
func Summary(s ComponentStatus) map[string]any {
	urls := func(entries []APIEntry) string {
		var b strings.Builder
		for _, e := range entries {
			if e.URL != "" {
				b.WriteString(e.URL + " ")
			}
		}
		return b.String()
	}
	var ui strings.Builder
	for _, seg := range Segments {
		for _, e := range s.APIs[seg] {
			if e.DeveloperUI != "" {
				ui.WriteString(e.DeveloperUI + " ")
			}
		}
	}
	sman := ""
	if s.SecretsManagement != nil {
		sman = "initializing"
		if s.SecretsManagement.Ready {
			sman = "ready"
		}
	}
	return map[string]any{
		"deployment_status":                DeploymentStatus(s),
		"coreAPIsummary":                   urls(s.APIs[SegmentCore]),
		"managementAPIsummary":             urls(s.APIs[SegmentManagement]),
		"securityAPIsummary":               urls(s.APIs[SegmentSecurity]),
		"coreDependentAPIsummary":          urls(s.DependentAPIs[SegmentCore]),
		"managementDependentAPIsummary":    urls(s.DependentAPIs[SegmentManagement]),
		"securityDependentAPIsummary":      urls(s.DependentAPIs[SegmentSecurity]),
		"securitySecretsManagementSummary": sman,
		"developerUIsummary":               ui.String(),
	}
}

// StatusObject renders the Component's whole `status` as the Canvas writes it,
// for a JSON merge patch. Lists are replaced whole by a merge patch, and every
// key is always present, so a stale value can never survive a write.
func StatusObject(s ComponentStatus, condition Condition) map[string]any {
	out := map[string]any{summaryStatusKey: Summary(s)}
	for _, seg := range Segments {
		out[seg.ExposedStatusKey()] = entryList(s.APIs[seg])
		out[seg.DependentStatusKey()] = entryList(s.DependentAPIs[seg])
	}
	sman := map[string]any{}
	if s.SecretsManagement != nil {
		//workflowcheck:ignore copies a map into a map: the order cannot show
		for k, v := range s.SecretsManagementSpec {
			sman[k] = v
		}
		sman["name"] = s.SecretsManagement.Name
		sman["uid"] = s.SecretsManagement.UID
		sman["ready"] = s.SecretsManagement.Ready
	}
	out["securitySecretsManagement"] = sman
	if s.Identity != nil {
		out["identityConfig"] = map[string]any{
			"identityProvider":   s.Identity.IdentityProvider,
			"listenerRegistered": s.Identity.ListenerRegistered,
		}
	}
	out["publishedEvents"] = eventList(s.PublishedEvents)
	out["subscribedEvents"] = eventList(s.SubscribedEvents)
	out["conditions"] = []any{ConditionMap(condition)}
	return out
}

// ReadyCondition is the Ready condition of a Component's status (see
// Transition for its lastTransitionTime).
func ReadyCondition(s ComponentStatus, generation int64, previous *Condition, now string) Condition {
	c := Condition{Type: "Ready", ObservedGeneration: generation}
	switch st := DeploymentStatus(s); st {
	case StatusComplete:
		c.Status, c.Reason, c.Message = "True", "Complete", "every child is ready"
	case StatusFailed:
		c.Status, c.Reason, c.Message = "False", s.Failure.Reason, s.Failure.Message
	default:
		c.Status, c.Reason, c.Message = "False", strings.ReplaceAll(st, "-", ""), waitingMessage(st)
	}
	return Transition(previous, c, now)
}

// Transition gives next its lastTransitionTime, the time its status last
// changed, as Kubernetes conditions keep it: previous's when the status is
// the same (a new reason or message is no transition), now otherwise.
func Transition(previous *Condition, next Condition, now string) Condition {
	next.LastTransitionTime = now
	if previous != nil && previous.Status == next.Status && previous.LastTransitionTime != "" {
		next.LastTransitionTime = previous.LastTransitionTime
	}
	return next
}

func waitingMessage(status string) string {
	switch status {
	case StatusCompCon:
		return "waiting for every exposed API to have a url and a ready implementation"
	case StatusIDConfOp:
		return "waiting for the identity provider to configure the component"
	case StatusSecretMan:
		return "waiting for secrets management to be ready"
	case StatusDepAPI:
		return "waiting for every dependent API to be resolved"
	default:
		return status
	}
}

func entryList(entries []APIEntry) []any {
	out := make([]any, 0, len(entries))
	for _, e := range entries {
		m := map[string]any{"name": e.Name, "uid": e.UID, "ready": e.Ready}
		setStr(m, "url", e.URL)
		setStr(m, "developerUI", e.DeveloperUI)
		setStr(m, "ip", e.IP)
		setStr(m, "path", e.Path)
		setStr(m, "implementation", e.Implementation)
		if e.Port != nil {
			m["port"] = *e.Port
		}
		out = append(out, m)
	}
	return out
}

func eventList(entries []EventEntry) []any {
	out := make([]any, 0, len(entries))
	for _, e := range entries {
		out = append(out, map[string]any{"name": e.Name, "uid": e.UID})
	}
	return out
}

// ConditionMap encodes a condition as it is written into status.
func ConditionMap(c Condition) map[string]any {
	m := map[string]any{
		"type": c.Type, "status": c.Status, "reason": c.Reason,
		"message": c.Message, "lastTransitionTime": c.LastTransitionTime,
	}
	if c.ObservedGeneration != 0 {
		m["observedGeneration"] = c.ObservedGeneration
	}
	return m
}
