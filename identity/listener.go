package identity

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"unicode"
)

// Dynamic roles (oda-behaviour §2.3 steps 7-9 and "Listener (IDL)"): a
// component that exposes a partyRole or permissionSpecificationSet API gets
// one hub subscription per API, whose callback is odaflow's listener; the
// listener turns the hub's create/delete events into role changes on the
// component's Keycloak client, through the IdentityConfig's workflow.

// SignalRoleEvent is the signal the listener sends to an IdentityConfig's
// workflow (ID oda.WorkflowID("IdentityConfig", ns, name)) with a RoleEvent.
// It lives here, in a package both the listener and the workflows import,
// so that neither imports the other.
const SignalRoleEvent = "identity-role-event"

// The two APIs a hub subscription is made on; the names are the keys of
// the IdentityConfig spec's blocks without "API" and the keys of the TMF
// event bodies.
const (
	APIPartyRole                  = "partyRole"
	APIPermissionSpecificationSet = "permissionSpecificationSet"
)

// RoleAction is what a listener event asks for.
type RoleAction string

// Role actions.
const (
	RoleAdd    RoleAction = "add"
	RoleRemove RoleAction = "remove"
	// RoleIgnore is an event that changes no role (attribute or state
	// changes): acknowledged, never signalled.
	RoleIgnore RoleAction = "ignore"
)

// RoleEvent is one role change from a hub, as the listener signals it to
// the workflow. It holds names from the event body only: no token, no
// callback URL.
type RoleEvent struct {
	// Component is the IdentityConfig (= component, = Keycloak client) the
	// event is for, taken from the listener path the subscription was
	// given (never from the event's href, §5.3.6).
	Component string     `json:"component"`
	API       string     `json:"api"`
	Action    RoleAction `json:"action"`
	Role      Role       `json:"role"`
	// EventType and EventID are the hub's, for the workflow's Events.
	EventType string `json:"eventType,omitempty"`
	EventID   string `json:"eventId,omitempty"`
}

// Hub is one subscription an IdentityConfig asks for.
type Hub struct {
	API string `json:"api"`
	URL string `json:"url"`
}

// HubURL is the hub of an API block, as the Python operator builds it
// (§2.3 step 7): the implementation Service's cluster-local name, the port
// and the API path, then /hub.
func HubURL(namespace string, ref APIRef) string {
	p := "/" + strings.Trim(ref.Path, "/")
	if p == "/" {
		p = ""
	}
	return fmt.Sprintf("http://%s.%s.svc.cluster.local:%d%s/hub", ref.Implementation, namespace, ref.Port, p)
}

// HubService is the name of the Service a hub URL built by HubURL calls in
// namespace, and false for any URL that is not such a cluster-local name.
func HubService(namespace, hubURL string) (string, bool) {
	u, err := url.Parse(hubURL)
	if err != nil {
		return "", false
	}
	name, ok := strings.CutSuffix(u.Hostname(), "."+namespace+".svc.cluster.local")
	if !ok || name == "" || strings.Contains(name, ".") {
		return "", false
	}
	return name, true
}

// Hubs lists the subscriptions an IdentityConfig asks for, in a stable
// order (partyRole first).
func Hubs(namespace string, d Desired) []Hub {
	var out []Hub
	if d.PartyRoleAPI != nil {
		out = append(out, Hub{API: APIPartyRole, URL: HubURL(namespace, *d.PartyRoleAPI)})
	}
	if d.PermissionSpecificationSetAPI != nil {
		out = append(out, Hub{API: APIPermissionSpecificationSet, URL: HubURL(namespace, *d.PermissionSpecificationSetAPI)})
	}
	return out
}

// SubscriptionBody is the POST body of a hub registration (§2.3 steps
// 7-8): the callback, plus "@type": "Hub" for the permission-set API,
// whose TMF672 implementation requires it.
func SubscriptionBody(api, callback string) map[string]any {
	body := map[string]any{"callback": callback}
	if api == APIPermissionSpecificationSet {
		body["@type"] = "Hub"
	}
	return body
}

// CallbackPath is the listener path of one IdentityConfig. The listener
// reads the IdentityConfig from it, so an event can only ever change the
// roles of the component whose subscription delivered it.
func CallbackPath(namespace, name string) string {
	return "/listener/" + url.PathEscape(namespace) + "/" + url.PathEscape(name)
}

// CallbackURL is the callback without its token: what the workflow state
// records and compares.
func CallbackURL(listenerBase, namespace, name string) string {
	return strings.TrimRight(listenerBase, "/") + CallbackPath(namespace, name)
}

// TokenParam is the callback URL's query parameter that carries the
// listener token.
const TokenParam = "token"

// CallbackWithToken adds the listener token to a callback URL.
func CallbackWithToken(callback, token string) string {
	return callback + "?" + TokenParam + "=" + url.QueryEscape(token)
}

// ListenerToken is the bearer token of one IdentityConfig's listener path:
// HMAC-SHA256 under the worker's listener key of a domain-separated
// "namespace/name". Deriving it means no per-IdentityConfig secret is ever
// stored or passed through a workflow: the activity that registers the hub
// computes it, the listener recomputes it to verify, and a token is good
// for one IdentityConfig only.
func ListenerToken(key []byte, namespace, name string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte("odaflow-identity-listener/v1\x00" + namespace + "\x00" + name))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// KeyID names a listener key without revealing it (a one-way hash of a
// high-entropy key), so the workflow state can record which key a
// subscription's token was made with and re-register after a rotation.
func KeyID(key []byte) string {
	sum := sha256.Sum256(append([]byte("odaflow-identity-listener-key-id\x00"), key...))
	return hex.EncodeToString(sum[:6])
}

// EventError is a listener body that cannot be understood; the listener
// answers 400.
type EventError struct{ Problem string }

func (e *EventError) Error() string { return "malformed listener event: " + e.Problem }

func badEvent(format string, args ...any) error {
	return &EventError{Problem: fmt.Sprintf(format, args...)}
}

// maxRoleName bounds a role name: Keycloak stores role names in a
// varchar(255).
const maxRoleName = 255

// ParseEvent reads a TMF listener event (§2.3 "Listener (IDL)"):
// `{eventId, eventType, event: {partyRole | permissionSpecificationSet:
// {name, description, @type, @baseType}}}`. The component is the one the
// listener path names, never a segment of the resource's href. Creation
// events add a role and removal/deletion events remove it, with either TMF
// naming (PartyRoleCreationNotification, PartyRoleCreateEvent,
// ...RemoveNotification, ...DeleteEvent); attribute-value and state changes
// and unknown event types are RoleIgnore.
func ParseEvent(component string, body []byte) (RoleEvent, error) {
	ev := RoleEvent{Component: component}
	var raw struct {
		EventID   any                        `json:"eventId"`
		EventType string                     `json:"eventType"`
		Event     map[string]json.RawMessage `json:"event"`
	}
	if err := json.Unmarshal(body, &raw); err != nil {
		return ev, badEvent("not a JSON object: %v", err)
	}
	if raw.EventType == "" {
		return ev, badEvent("eventType is missing")
	}
	ev.EventType = raw.EventType
	switch id := raw.EventID.(type) {
	case string:
		ev.EventID = id
	case float64:
		ev.EventID = fmt.Sprint(id)
	}
	var found []string
	for _, api := range []string{APIPartyRole, APIPermissionSpecificationSet} {
		if _, ok := raw.Event[api]; ok {
			found = append(found, api)
		}
	}
	if len(found) != 1 {
		keys := make([]string, 0, len(raw.Event))
		for k := range raw.Event {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		return ev, badEvent("event must hold exactly one of partyRole and permissionSpecificationSet, has %v", keys)
	}
	ev.API = found[0]
	var res struct {
		Name        any    `json:"name"`
		Description any    `json:"description"`
		Type        string `json:"@type"`
		BaseType    string `json:"@baseType"`
	}
	if err := json.Unmarshal(raw.Event[ev.API], &res); err != nil {
		return ev, badEvent("event.%s is not an object: %v", ev.API, err)
	}
	want := strings.ToUpper(ev.API[:1]) + ev.API[1:]
	// A subtype may set @type to its own name but must keep @baseType;
	// the Python listener insists on @baseType, which some hubs omit.
	if res.BaseType != "" && res.BaseType != want {
		return ev, badEvent("event.%s has @baseType %q, want %q", ev.API, res.BaseType, want)
	}
	if res.BaseType == "" && res.Type != "" && res.Type != want {
		return ev, badEvent("event.%s has @type %q, want %q", ev.API, res.Type, want)
	}
	ev.Action = actionOf(raw.EventType)
	if ev.Action == RoleIgnore {
		return ev, nil
	}
	name, ok := res.Name.(string)
	name = strings.TrimSpace(name)
	if !ok || name == "" {
		return ev, badEvent("event.%s.name is required for %s", ev.API, raw.EventType)
	}
	if err := checkRoleName(name); err != nil {
		return ev, badEvent("event.%s.name: %v", ev.API, err)
	}
	desc, _ := res.Description.(string)
	ev.Role = Role{Name: name, Description: desc}
	return ev, nil
}

func actionOf(eventType string) RoleAction {
	t := strings.ToLower(eventType)
	switch {
	case strings.Contains(t, "change"):
		return RoleIgnore
	case strings.Contains(t, "remove") || strings.Contains(t, "delet"):
		return RoleRemove
	case strings.Contains(t, "creat"):
		return RoleAdd
	}
	return RoleIgnore
}

// checkRoleName refuses role names that are not one plain path segment:
// the name goes, unescaped, into the Keycloak admin URLs of the role's get,
// create-check and delete calls, where a / or \ reaches another path, ? and
// # end the path (a delete of "x?y" deletes role x), % is decoded by the
// server, and . or .. are collapsed into the client's own URL. It applies
// to the names hubs send and to an IdentityConfig's own roles alike.
func checkRoleName(name string) error {
	if len(name) > maxRoleName {
		return fmt.Errorf("longer than %d bytes", maxRoleName)
	}
	if name == "." || name == ".." {
		return fmt.Errorf("%q is not a role name", name)
	}
	for _, r := range name {
		if strings.ContainsRune(`/\?#%`, r) || unicode.IsControl(r) {
			return fmt.Errorf("%q contains %q", name, r)
		}
	}
	return nil
}

// RoleEventDecision says whether a dynamic role event is applied.
type RoleEventDecision struct {
	Apply bool `json:"apply"`
	// Reason says why an event is not applied.
	Reason string `json:"reason,omitempty"`
}

// DecideRoleEvent keeps the spec authoritative over the listener: only an
// API the spec names may change roles, and a
// declared role (the canvasSystemRole or a componentRole) is never removed
// by an event, and adding it is already done; every other name is the
// listener's to add and remove.
func DecideRoleEvent(d Desired, ev RoleEvent) RoleEventDecision {
	if ev.Action != RoleAdd && ev.Action != RoleRemove {
		return RoleEventDecision{Reason: "event " + ev.EventType + " changes no role"}
	}
	// Only a hub the spec names was given the listener's callback; an event
	// of another API did not come from this component's subscriptions.
	if (ev.API == APIPartyRole && d.PartyRoleAPI == nil) || (ev.API == APIPermissionSpecificationSet && d.PermissionSpecificationSetAPI == nil) ||
		(ev.API != APIPartyRole && ev.API != APIPermissionSpecificationSet) {
		return RoleEventDecision{Reason: "the IdentityConfig names no " + ev.API + "API; " + ev.EventType + " for role " + ev.Role.Name + " ignored"}
	}
	for _, r := range d.Roles {
		if r.Name != ev.Role.Name {
			continue
		}
		if ev.Action == RoleRemove {
			return RoleEventDecision{Reason: "role " + r.Name + " is declared in the IdentityConfig spec; a " + ev.API + " event cannot remove it"}
		}
		return RoleEventDecision{Reason: "role " + r.Name + " is declared in the IdentityConfig spec and already managed"}
	}
	return RoleEventDecision{Apply: true}
}

// ListenerRegistered is status.identityConfig.listenerRegistered: true
// when the IdentityConfig asks for hubs and every one has a subscription.
func ListenerRegistered(want []Hub, have map[string]bool) bool {
	if len(want) == 0 {
		return false
	}
	for _, h := range want {
		if !have[h.URL] {
			return false
		}
	}
	return true
}
