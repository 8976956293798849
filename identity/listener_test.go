package identity

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestHubs(t *testing.T) {
	spec := func(extra map[string]any) map[string]any {
		s := map[string]any{"canvasSystemRole": "Admin"}
		for k, v := range extra {
			s[k] = v
		}
		return s
	}
	party := map[string]any{"implementation": "dyn-partyroleapi", "path": "/dyn-pc/tmf-api/partyRoleManagement/v4", "port": float64(8080)}
	perm := map[string]any{"implementation": "dyn-permissionspec", "path": "/dyn-pc/rolesAndPermissionsManagement/v5/", "port": int64(8080)}
	for _, tc := range []struct {
		name string
		spec map[string]any
		want []Hub
	}{
		{"none", spec(nil), nil},
		{"party role", spec(map[string]any{"partyRoleAPI": party}), []Hub{
			{API: APIPartyRole, URL: "http://dyn-partyroleapi.comp.svc.cluster.local:8080/dyn-pc/tmf-api/partyRoleManagement/v4/hub"},
		}},
		{"permission set, trailing slash dropped", spec(map[string]any{"permissionSpecificationSetAPI": perm}), []Hub{
			{API: APIPermissionSpecificationSet, URL: "http://dyn-permissionspec.comp.svc.cluster.local:8080/dyn-pc/rolesAndPermissionsManagement/v5/hub"},
		}},
		{"both, party role first", spec(map[string]any{"permissionSpecificationSetAPI": perm, "partyRoleAPI": party}), []Hub{
			{API: APIPartyRole, URL: "http://dyn-partyroleapi.comp.svc.cluster.local:8080/dyn-pc/tmf-api/partyRoleManagement/v4/hub"},
			{API: APIPermissionSpecificationSet, URL: "http://dyn-permissionspec.comp.svc.cluster.local:8080/dyn-pc/rolesAndPermissionsManagement/v5/hub"},
		}},
		{"path without leading slash", spec(map[string]any{"partyRoleAPI": map[string]any{"implementation": "svc", "path": "api/v4", "port": 80}}), []Hub{
			{API: APIPartyRole, URL: "http://svc.comp.svc.cluster.local:80/api/v4/hub"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := FromSpec("dyn-pc", tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			if got := Hubs("comp", d); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Hubs = %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestHubSubscriptionBody(t *testing.T) {
	for _, tc := range []struct {
		api  string
		want map[string]any
	}{
		{APIPartyRole, map[string]any{"callback": "http://l/cb"}},
		{APIPermissionSpecificationSet, map[string]any{"callback": "http://l/cb", "@type": "Hub"}},
	} {
		if got := SubscriptionBody(tc.api, "http://l/cb"); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: body = %v, want %v", tc.api, got, tc.want)
		}
	}
}

func TestHubCallbackAndToken(t *testing.T) {
	if got := CallbackURL("http://odaflow-worker.canvas:8080/", "comp", "dyn-pc"); got != "http://odaflow-worker.canvas:8080/listener/comp/dyn-pc" {
		t.Errorf("callback = %s", got)
	}
	key := []byte("0123456789abcdef0123456789abcdef")
	tok := ListenerToken(key, "comp", "dyn-pc")
	for _, tc := range []struct {
		name string
		tok  string
		same bool
	}{
		{"same inputs", ListenerToken(key, "comp", "dyn-pc"), true},
		{"other name", ListenerToken(key, "comp", "other"), false},
		{"other namespace", ListenerToken(key, "comp2", "dyn-pc"), false},
		// Without a separator "a/bc" and "ab/c" would share a token.
		{"shifted boundary", ListenerToken(key, "compd", "yn-pc"), false},
		{"other key", ListenerToken([]byte("another key of thirty-two bytes!"), "comp", "dyn-pc"), false},
	} {
		if (tc.tok == tok) != tc.same {
			t.Errorf("%s: token equal = %v, want %v", tc.name, tc.tok == tok, tc.same)
		}
	}
	if strings.ContainsAny(tok, "+/=") {
		t.Errorf("token %q is not URL-safe", tok)
	}
	if got := CallbackWithToken("http://l/listener/comp/dyn-pc", tok); got != "http://l/listener/comp/dyn-pc?token="+tok {
		t.Errorf("with token = %s", got)
	}
	if KeyID(key) == KeyID([]byte("another key of thirty-two bytes!")) || strings.Contains(KeyID(key), string(key[:8])) {
		t.Error("key ids must differ per key and not show the key")
	}
}

func TestHubParseEvent(t *testing.T) {
	for _, tc := range []struct {
		name string
		body string
		want RoleEvent
		bad  string
	}{
		{
			name: "permission set created (BDD F002)",
			body: `{"eventId":"e1","eventType":"PermissionSpecificationSetCreationNotification","event":{"permissionSpecificationSet":{"@type":"PermissionSpecificationSet","@baseType":"PermissionSpecificationSet","name":"DynamicRole1","description":"A dynamic role","involvementRole":"TestRole","href":"/other-component/rolesAndPermissionsManagement/v5/permissionSpecificationSet/1"}}}`,
			want: RoleEvent{Component: "dyn-pc", API: APIPermissionSpecificationSet, Action: RoleAdd, Role: Role{Name: "DynamicRole1", Description: "A dynamic role"}, EventType: "PermissionSpecificationSetCreationNotification", EventID: "e1"},
		},
		{
			name: "permission set removed",
			body: `{"eventType":"PermissionSpecificationSetRemoveNotification","event":{"permissionSpecificationSet":{"@baseType":"PermissionSpecificationSet","name":"DynamicRole1"}}}`,
			want: RoleEvent{Component: "dyn-pc", API: APIPermissionSpecificationSet, Action: RoleRemove, Role: Role{Name: "DynamicRole1"}, EventType: "PermissionSpecificationSetRemoveNotification"},
		},
		{
			name: "party role created, TMF669 v4 naming, href of another component ignored",
			body: `{"eventId":42,"eventType":"PartyRoleCreateEvent","event":{"partyRole":{"@type":"PartyRole","name":" Approver ","href":"http://host/someone-else/partyRole/7"}}}`,
			want: RoleEvent{Component: "dyn-pc", API: APIPartyRole, Action: RoleAdd, Role: Role{Name: "Approver"}, EventType: "PartyRoleCreateEvent", EventID: "42"},
		},
		{
			name: "party role deleted",
			body: `{"eventType":"PartyRoleDeleteEvent","event":{"partyRole":{"@baseType":"PartyRole","name":"Approver"}}}`,
			want: RoleEvent{Component: "dyn-pc", API: APIPartyRole, Action: RoleRemove, Role: Role{Name: "Approver"}, EventType: "PartyRoleDeleteEvent"},
		},
		{
			name: "attribute change ignored, name not needed",
			body: `{"eventType":"PartyRoleAttributeValueChangeNotification","event":{"partyRole":{"@baseType":"PartyRole"}}}`,
			want: RoleEvent{Component: "dyn-pc", API: APIPartyRole, Action: RoleIgnore, EventType: "PartyRoleAttributeValueChangeNotification"},
		},
		{
			name: "state change ignored",
			body: `{"eventType":"PartyRoleStateChangeEvent","event":{"partyRole":{"name":"x"}}}`,
			want: RoleEvent{Component: "dyn-pc", API: APIPartyRole, Action: RoleIgnore, EventType: "PartyRoleStateChangeEvent"},
		},
		{
			name: "subtype keeps its base type",
			body: `{"eventType":"PartyRoleCreateEvent","event":{"partyRole":{"@type":"SpecialPartyRole","@baseType":"PartyRole","name":"r"}}}`,
			want: RoleEvent{Component: "dyn-pc", API: APIPartyRole, Action: RoleAdd, Role: Role{Name: "r"}, EventType: "PartyRoleCreateEvent"},
		},
		{name: "not JSON", body: `{"eventType":`, bad: "not a JSON object"},
		{name: "array", body: `[]`, bad: "not a JSON object"},
		{name: "no event type", body: `{"event":{"partyRole":{"name":"r"}}}`, bad: "eventType is missing"},
		{name: "no resource", body: `{"eventType":"XCreateEvent","event":{"product":{}}}`, bad: "exactly one of"},
		{name: "both resources", body: `{"eventType":"PartyRoleCreateEvent","event":{"partyRole":{"name":"a"},"permissionSpecificationSet":{"name":"b"}}}`, bad: "exactly one of"},
		{name: "wrong base type", body: `{"eventType":"PartyRoleCreateEvent","event":{"partyRole":{"@baseType":"Individual","name":"r"}}}`, bad: `@baseType "Individual"`},
		{name: "wrong type", body: `{"eventType":"PartyRoleCreateEvent","event":{"partyRole":{"@type":"Individual","name":"r"}}}`, bad: `@type "Individual"`},
		{name: "no name", body: `{"eventType":"PartyRoleCreateEvent","event":{"partyRole":{"@baseType":"PartyRole"}}}`, bad: "name is required"},
		{name: "blank name", body: `{"eventType":"PartyRoleDeleteEvent","event":{"partyRole":{"name":"  "}}}`, bad: "name is required"},
		{name: "name not a string", body: `{"eventType":"PartyRoleCreateEvent","event":{"partyRole":{"name":7}}}`, bad: "name is required"},
		{name: "name with a slash", body: `{"eventType":"PartyRoleCreateEvent","event":{"partyRole":{"name":"a/b"}}}`, bad: "contains '/'"},
		{name: "name ending the path", body: `{"eventType":"PartyRoleDeleteEvent","event":{"partyRole":{"name":"Admin?x"}}}`, bad: "contains '?'"},
		{name: "name that is a dot segment", body: `{"eventType":"PartyRoleDeleteEvent","event":{"partyRole":{"name":".."}}}`, bad: "is not a role name"},
		{name: "name too long", body: `{"eventType":"PartyRoleCreateEvent","event":{"partyRole":{"name":"` + strings.Repeat("x", 256) + `"}}}`, bad: "longer than 255"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseEvent("dyn-pc", []byte(tc.body))
			if tc.bad != "" {
				var ee *EventError
				if !errors.As(err, &ee) || !strings.Contains(err.Error(), tc.bad) {
					t.Fatalf("err = %v, want an EventError with %q", err, tc.bad)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestHubDecideRoleEvent(t *testing.T) {
	d, err := FromSpec("pc", map[string]any{"canvasSystemRole": "Admin", "componentRole": []any{map[string]any{"name": "pcadmin"}},
		"permissionSpecificationSetAPI": map[string]any{"implementation": "perm", "path": "/p", "port": 8080}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		ev     RoleEvent
		apply  bool
		reason string
	}{
		{"add a dynamic role", RoleEvent{API: APIPermissionSpecificationSet, Action: RoleAdd, Role: Role{Name: "DynamicRole1"}}, true, ""},
		{"remove a dynamic role", RoleEvent{API: APIPermissionSpecificationSet, Action: RoleRemove, Role: Role{Name: "DynamicRole1"}}, true, ""},
		{"remove the canvas system role", RoleEvent{API: APIPermissionSpecificationSet, Action: RoleRemove, Role: Role{Name: "Admin"}}, false, "cannot remove it"},
		{"remove a component role", RoleEvent{API: APIPermissionSpecificationSet, Action: RoleRemove, Role: Role{Name: "pcadmin"}}, false, "cannot remove it"},
		{"add a declared role", RoleEvent{API: APIPermissionSpecificationSet, Action: RoleAdd, Role: Role{Name: "pcadmin"}}, false, "already managed"},
		{"an API the spec does not name", RoleEvent{API: APIPartyRole, Action: RoleAdd, Role: Role{Name: "x"}}, false, "names no partyRoleAPI"},
		{"an unknown API", RoleEvent{API: "product", Action: RoleAdd, Role: Role{Name: "x"}}, false, "names no productAPI"},
		{"ignored event", RoleEvent{Action: RoleIgnore, EventType: "PartyRoleStateChangeEvent"}, false, "changes no role"},
	} {
		got := DecideRoleEvent(d, tc.ev)
		if got.Apply != tc.apply || !strings.Contains(got.Reason, tc.reason) {
			t.Errorf("%s: %+v", tc.name, got)
		}
	}
}

func TestHubListenerRegistered(t *testing.T) {
	hubs := []Hub{{API: APIPartyRole, URL: "a"}, {API: APIPermissionSpecificationSet, URL: "b"}}
	for _, tc := range []struct {
		name string
		want []Hub
		have map[string]bool
		out  bool
	}{
		{"no hubs declared", nil, map[string]bool{"a": true}, false},
		{"all registered", hubs, map[string]bool{"a": true, "b": true}, true},
		{"one missing", hubs, map[string]bool{"a": true}, false},
	} {
		if got := ListenerRegistered(tc.want, tc.have); got != tc.out {
			t.Errorf("%s: %v", tc.name, got)
		}
	}
}

func TestHubService(t *testing.T) {
	for _, tc := range []struct {
		name, url string
		want      string
		ok        bool
	}{
		{"built by HubURL", HubURL("comp", APIRef{Implementation: "pr", Path: "/c/partyRoleManagement/v4", Port: 8080}), "pr", true},
		{"another namespace", "http://pr.other.svc.cluster.local:8080/hub", "", false},
		{"a namespace ending like this one", "http://pr.xcomp.svc.cluster.local/hub", "", false},
		{"a name with a dot", "http://a.pr.comp.svc.cluster.local/hub", "", false},
		{"no name", "http://.comp.svc.cluster.local/hub", "", false},
		{"any other host", "http://169.254.169.254/latest/hub", "", false},
		{"not a URL", "http://[::1/hub", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := HubService("comp", tc.url)
			if got != tc.want || ok != tc.ok {
				t.Errorf("HubService(%q) = %q, %v; want %q, %v", tc.url, got, ok, tc.want, tc.ok)
			}
		})
	}
}
