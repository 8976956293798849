package oda

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Entries for the status tables.
var (
	done      = APIEntry{Name: "ctk-done", UID: "u1", Ready: true, URL: "https://lb/done"}
	noURL     = APIEntry{Name: "ctk-nourl", UID: "u2", Ready: true}
	notReady  = APIEntry{Name: "ctk-notready", UID: "u3", URL: "https://lb/notready"}
	keycloak  = &IdentityStatus{IdentityProvider: "Keycloak", ListenerRegistered: true}
	notSet    = &IdentityStatus{IdentityProvider: IdentityNotSet}
	smReady   = &SecretsEntry{Name: "ctk", UID: "s1", Ready: true}
	smPending = &SecretsEntry{Name: "ctk", UID: "s1"}
)

func apis(core, mgmt, sec []APIEntry) map[Segment][]APIEntry {
	return map[Segment][]APIEntry{SegmentCore: core, SegmentManagement: mgmt, SegmentSecurity: sec}
}

func list(es ...APIEntry) []APIEntry { return es }

func TestDeploymentStatus(t *testing.T) {
	cases := map[string]struct {
		status ComponentStatus
		want   string
	}{
		"nothing at all: zero exposed APIs count as complete, identity missing": {
			status: ComponentStatus{},
			want:   StatusIDConfOp,
		},
		"nothing declared, identity configured: Complete": {
			status: ComponentStatus{Identity: keycloak},
			want:   StatusComplete,
		},
		"exposed API without url": {
			status: ComponentStatus{APIs: apis(list(done, noURL), nil, nil), Identity: keycloak},
			want:   StatusCompCon,
		},
		"exposed API not ready": {
			status: ComponentStatus{APIs: apis(list(notReady), nil, nil), Identity: keycloak},
			want:   StatusCompCon,
		},
		"management API incomplete": {
			status: ComponentStatus{APIs: apis(list(done), list(noURL), nil), Identity: keycloak},
			want:   StatusCompCon,
		},
		"security API incomplete": {
			status: ComponentStatus{APIs: apis(list(done), list(done), list(notReady)), Identity: keycloak},
			want:   StatusCompCon,
		},
		"exposed incomplete wins over every later step": {
			status: ComponentStatus{
				APIs: apis(list(noURL), nil, nil), SecretsManagement: smPending,
				DependentAPIs: apis(list(noURL), nil, nil),
			},
			want: StatusCompCon,
		},
		"exposed complete, identity missing": {
			status: ComponentStatus{APIs: apis(list(done), list(done), list(done))},
			want:   StatusIDConfOp,
		},
		"identity Not set": {
			status: ComponentStatus{APIs: apis(list(done), nil, nil), Identity: notSet},
			want:   StatusIDConfOp,
		},
		"identity provider empty counts as not set": {
			status: ComponentStatus{APIs: apis(list(done), nil, nil), Identity: &IdentityStatus{ListenerRegistered: true}},
			want:   StatusIDConfOp,
		},
		"identity missing wins over secrets and dependent APIs": {
			status: ComponentStatus{
				APIs: apis(list(done), nil, nil), SecretsManagement: smPending,
				DependentAPIs: apis(list(noURL), nil, nil),
			},
			want: StatusIDConfOp,
		},
		"secrets declared and not ready": {
			status: ComponentStatus{APIs: apis(list(done), nil, nil), Identity: keycloak, SecretsManagement: smPending},
			want:   StatusSecretMan,
		},
		"secrets not ready wins over dependent APIs": {
			status: ComponentStatus{
				Identity: keycloak, SecretsManagement: smPending, DependentAPIs: apis(list(noURL), nil, nil),
			},
			want: StatusSecretMan,
		},
		"dependent API without url": {
			status: ComponentStatus{
				APIs: apis(list(done), nil, nil), Identity: keycloak, SecretsManagement: smReady,
				DependentAPIs: apis(list(done, noURL), nil, nil),
			},
			want: StatusDepAPI,
		},
		"dependent API not ready": {
			status: ComponentStatus{Identity: keycloak, DependentAPIs: apis(nil, list(notReady), nil)},
			want:   StatusDepAPI,
		},
		"security dependent API incomplete counts too (§5.4 item 4)": {
			status: ComponentStatus{Identity: keycloak, DependentAPIs: apis(list(done), list(done), list(noURL))},
			want:   StatusDepAPI,
		},
		"everything complete": {
			status: ComponentStatus{
				APIs: apis(list(done), list(done), list(done)), Identity: keycloak, SecretsManagement: smReady,
				DependentAPIs: apis(list(done), list(done), list(done)),
			},
			want: StatusComplete,
		},
		"listener not registered does not block": {
			status: ComponentStatus{APIs: apis(list(done), nil, nil), Identity: &IdentityStatus{IdentityProvider: "Keycloak"}},
			want:   StatusComplete,
		},
		"no secrets declared counts as complete": {
			status: ComponentStatus{APIs: apis(list(done), nil, nil), Identity: keycloak, SecretsManagementSpec: map[string]any{"type": "sideCar"}},
			want:   StatusComplete,
		},
		"empty lists count as complete": {
			status: ComponentStatus{APIs: apis(list(), list(), list()), DependentAPIs: apis(list(), nil, list()), Identity: keycloak},
			want:   StatusComplete,
		},
		"Failed overrides Complete": {
			status: ComponentStatus{APIs: apis(list(done), nil, nil), Identity: keycloak, Failure: &Failure{Reason: "InvalidSpec"}},
			want:   StatusFailed,
		},
		"Failed overrides in-progress": {
			status: ComponentStatus{APIs: apis(list(noURL), nil, nil), Failure: &Failure{Reason: "ApplyFailed"}},
			want:   StatusFailed,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := DeploymentStatus(tc.status); got != tc.want {
				t.Errorf("DeploymentStatus = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestSummary(t *testing.T) {
	full := ComponentStatus{
		APIs: apis(
			list(
				APIEntry{Name: "a", Ready: true, URL: "https://lb/a", DeveloperUI: "https://lb/a/docs"},
				APIEntry{Name: "b", Ready: true, URL: "https://lb/b"},
				APIEntry{Name: "c", DeveloperUI: "https://lb/c/docs"},
			),
			list(APIEntry{Name: "m", Ready: true, URL: "https://lb/metrics"}),
			list(APIEntry{Name: "s", Ready: true, URL: "https://lb/party", DeveloperUI: "https://lb/party/docs"}),
		),
		DependentAPIs: apis(
			list(APIEntry{Name: "d1", Ready: true, URL: "https://other/d1"}, APIEntry{Name: "d2"}),
			list(APIEntry{Name: "d3", Ready: true, URL: "https://other/d3"}),
			list(APIEntry{Name: "d4", Ready: true, URL: "https://other/d4"}),
		),
		Identity: keycloak,
	}
	empty := map[string]any{
		"deployment_status":                StatusIDConfOp,
		"coreAPIsummary":                   "",
		"managementAPIsummary":             "",
		"securityAPIsummary":               "",
		"coreDependentAPIsummary":          "",
		"managementDependentAPIsummary":    "",
		"securityDependentAPIsummary":      "",
		"securitySecretsManagementSummary": "",
		"developerUIsummary":               "",
	}
	with := func(kv ...string) map[string]any {
		m := map[string]any{}
		for k, v := range empty {
			m[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	cases := map[string]struct {
		status ComponentStatus
		want   map[string]any
	}{
		"empty status: every key present": {
			status: ComponentStatus{},
			want:   empty,
		},
		"URL lists, each URL followed by a space; entries without url skipped": {
			status: full,
			want: with(
				"deployment_status", StatusCompCon,
				"coreAPIsummary", "https://lb/a https://lb/b ",
				"managementAPIsummary", "https://lb/metrics ",
				"securityAPIsummary", "https://lb/party ",
				"coreDependentAPIsummary", "https://other/d1 ",
				"managementDependentAPIsummary", "https://other/d3 ",
				"securityDependentAPIsummary", "https://other/d4 ",
				"developerUIsummary", "https://lb/a/docs https://lb/c/docs https://lb/party/docs ",
			),
		},
		"secrets management initializing": {
			status: ComponentStatus{SecretsManagement: smPending},
			want:   with("securitySecretsManagementSummary", "initializing"),
		},
		"secrets management ready": {
			status: ComponentStatus{SecretsManagement: smReady, Identity: keycloak},
			want:   with("securitySecretsManagementSummary", "ready", "deployment_status", StatusComplete),
		},
		"Failed": {
			status: ComponentStatus{Failure: &Failure{Reason: "InvalidSpec", Message: "bad"}},
			want:   with("deployment_status", StatusFailed),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Summary(tc.status)); diff != "" {
				t.Errorf("Summary mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestStatusObject(t *testing.T) {
	port := int64(8080)
	cond := Condition{Type: "Ready", Status: "False", Reason: "InProgressCompCon", Message: "waiting", LastTransitionTime: "2024-01-01T00:00:00Z"}
	condMap := map[string]any{
		"type": "Ready", "status": "False", "reason": "InProgressCompCon", "message": "waiting",
		"lastTransitionTime": "2024-01-01T00:00:00Z",
	}
	cases := map[string]struct {
		status    ComponentStatus
		condition Condition
		want      map[string]any
	}{
		"empty status: every key present, lists empty, secrets {}": {
			status:    ComponentStatus{},
			condition: cond,
			want: map[string]any{
				"summary/status":            Summary(ComponentStatus{}),
				"coreAPIs":                  []any{},
				"managementAPIs":            []any{},
				"securityAPIs":              []any{},
				"coreDependentAPIs":         []any{},
				"managementDependentAPIs":   []any{},
				"securityDependentAPIs":     []any{},
				"securitySecretsManagement": map[string]any{},
				"publishedEvents":           []any{},
				"subscribedEvents":          []any{},
				"conditions":                []any{condMap},
			},
		},
		"secrets spec without a SecretsManagement child: still {}": {
			status:    ComponentStatus{SecretsManagementSpec: map[string]any{"type": "sideCar"}},
			condition: cond,
			want: map[string]any{
				"summary/status":            Summary(ComponentStatus{}),
				"coreAPIs":                  []any{},
				"managementAPIs":            []any{},
				"securityAPIs":              []any{},
				"coreDependentAPIs":         []any{},
				"managementDependentAPIs":   []any{},
				"securityDependentAPIs":     []any{},
				"securitySecretsManagement": map[string]any{},
				"publishedEvents":           []any{},
				"subscribedEvents":          []any{},
				"conditions":                []any{condMap},
			},
		},
		"full status": {
			status: ComponentStatus{
				APIs: apis(
					list(APIEntry{
						Name: "ctk-api-v4", UID: "u1", Ready: true, URL: "https://lb/api", DeveloperUI: "https://lb/api/docs",
						IP: "10.0.0.1", Path: "/api", Port: &port, Implementation: "svc",
					}),
					list(APIEntry{Name: "ctk-metrics", UID: "u2"}),
					nil,
				),
				DependentAPIs:     apis(nil, nil, list(APIEntry{Name: "ctk-party-v5", UID: "u3", Ready: true, URL: "https://other/party"})),
				SecretsManagement: &SecretsEntry{Name: "ctk", UID: "s1", Ready: true},
				SecretsManagementSpec: map[string]any{
					"type": "sideCar", "podSelector": map[string]any{"name": "ctk-*"},
					// The child's own values win over same-named spec keys.
					"ready": false, "name": "spec-name",
				},
				Identity:         &IdentityStatus{IdentityProvider: "Keycloak", ListenerRegistered: true},
				PublishedEvents:  []EventEntry{{Name: "ctk-created", UID: "e1"}},
				SubscribedEvents: []EventEntry{{Name: "ctk-partycreate", UID: "e2"}, {Name: "ctk-partydelete"}},
			},
			condition: Condition{Type: "Ready", Status: "False", ObservedGeneration: 3, Reason: "InProgressCompCon", Message: "waiting", LastTransitionTime: "t"},
			want: map[string]any{
				"summary/status": map[string]any{
					"deployment_status":                StatusCompCon,
					"coreAPIsummary":                   "https://lb/api ",
					"managementAPIsummary":             "",
					"securityAPIsummary":               "",
					"coreDependentAPIsummary":          "",
					"managementDependentAPIsummary":    "",
					"securityDependentAPIsummary":      "https://other/party ",
					"securitySecretsManagementSummary": "ready",
					"developerUIsummary":               "https://lb/api/docs ",
				},
				"coreAPIs": []any{map[string]any{
					"name": "ctk-api-v4", "uid": "u1", "ready": true, "url": "https://lb/api", "developerUI": "https://lb/api/docs",
					"ip": "10.0.0.1", "path": "/api", "port": int64(8080), "implementation": "svc",
				}},
				"managementAPIs":          []any{map[string]any{"name": "ctk-metrics", "uid": "u2", "ready": false}},
				"securityAPIs":            []any{},
				"coreDependentAPIs":       []any{},
				"managementDependentAPIs": []any{},
				"securityDependentAPIs": []any{map[string]any{
					"name": "ctk-party-v5", "uid": "u3", "ready": true, "url": "https://other/party",
				}},
				"securitySecretsManagement": map[string]any{
					"type": "sideCar", "podSelector": map[string]any{"name": "ctk-*"},
					"name": "ctk", "uid": "s1", "ready": true,
				},
				"identityConfig":   map[string]any{"identityProvider": "Keycloak", "listenerRegistered": true},
				"publishedEvents":  []any{map[string]any{"name": "ctk-created", "uid": "e1"}},
				"subscribedEvents": []any{map[string]any{"name": "ctk-partycreate", "uid": "e2"}, map[string]any{"name": "ctk-partydelete", "uid": ""}},
				"conditions": []any{map[string]any{
					"type": "Ready", "status": "False", "reason": "InProgressCompCon", "message": "waiting",
					"lastTransitionTime": "t", "observedGeneration": int64(3),
				}},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := StatusObject(tc.status, tc.condition)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("StatusObject mismatch (-want +got):\n%s", diff)
			}
			// A JSON merge patch deletes keys set to null and replaces
			// lists whole: no list may encode as null.
			raw, err := json.Marshal(got)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(raw), "null") {
				t.Errorf("StatusObject encodes a null, which a merge patch would turn into a delete: %s", raw)
			}
		})
	}
}

func TestStatusObjectDoesNotAliasSecretsSpec(t *testing.T) {
	spec := map[string]any{"type": "sideCar"}
	out := StatusObject(ComponentStatus{SecretsManagement: smPending, SecretsManagementSpec: spec}, Condition{})
	if _, ok := spec["uid"]; ok {
		t.Error("StatusObject wrote the entry's fields into the spec map")
	}
	out["securitySecretsManagement"].(map[string]any)["x"] = 1
	if _, ok := spec["x"]; ok {
		t.Error("StatusObject shares its securitySecretsManagement map with the spec")
	}
}

func TestReadyCondition(t *testing.T) {
	const (
		earlier = "2024-01-01T00:00:00Z"
		now     = "2024-06-01T12:00:00Z"
	)
	complete := ComponentStatus{Identity: keycloak}
	compCon := ComponentStatus{APIs: apis(list(noURL), nil, nil)}
	idConf := ComponentStatus{}
	failed := ComponentStatus{Failure: &Failure{Reason: "InvalidSpec", Message: "the Component spec is invalid: spec: is required"}}
	cases := map[string]struct {
		status   ComponentStatus
		previous *Condition
		want     Condition
	}{
		"first Complete": {
			status: complete,
			want: Condition{Type: "Ready", Status: "True", ObservedGeneration: 7, Reason: "Complete",
				Message: "every child is ready", LastTransitionTime: now},
		},
		"in progress: the reason is the status without dashes": {
			status: compCon,
			want: Condition{Type: "Ready", Status: "False", ObservedGeneration: 7, Reason: "InProgressCompCon",
				Message: "waiting for every exposed API to have a url and a ready implementation", LastTransitionTime: now},
		},
		"waiting for identity": {
			status: idConf,
			want: Condition{Type: "Ready", Status: "False", ObservedGeneration: 7, Reason: "InProgressIDConfOp",
				Message: "waiting for the identity provider to configure the component", LastTransitionTime: now},
		},
		"waiting for secrets": {
			status: ComponentStatus{Identity: keycloak, SecretsManagement: smPending},
			want: Condition{Type: "Ready", Status: "False", ObservedGeneration: 7, Reason: "InProgressSecretMan",
				Message: "waiting for secrets management to be ready", LastTransitionTime: now},
		},
		"waiting for dependent APIs": {
			status: ComponentStatus{Identity: keycloak, DependentAPIs: apis(list(noURL), nil, nil)},
			want: Condition{Type: "Ready", Status: "False", ObservedGeneration: 7, Reason: "InProgressDepApi",
				Message: "waiting for every dependent API to be resolved", LastTransitionTime: now},
		},
		"Failed carries the failure's reason and message": {
			status: failed,
			want: Condition{Type: "Ready", Status: "False", ObservedGeneration: 7, Reason: "InvalidSpec",
				Message: "the Component spec is invalid: spec: is required", LastTransitionTime: now},
		},
		"status unchanged: transition time kept": {
			status:   complete,
			previous: &Condition{Type: "Ready", Status: "True", Reason: "Complete", LastTransitionTime: earlier},
			want: Condition{Type: "Ready", Status: "True", ObservedGeneration: 7, Reason: "Complete",
				Message: "every child is ready", LastTransitionTime: earlier},
		},
		"reason changed, status still False: transition time kept": {
			status:   idConf,
			previous: &Condition{Type: "Ready", Status: "False", Reason: "InProgressCompCon", LastTransitionTime: earlier},
			want: Condition{Type: "Ready", Status: "False", ObservedGeneration: 7, Reason: "InProgressIDConfOp",
				Message: "waiting for the identity provider to configure the component", LastTransitionTime: earlier},
		},
		"in progress to Failed: both False, transition time kept": {
			status:   failed,
			previous: &Condition{Type: "Ready", Status: "False", Reason: "InProgressCompCon", LastTransitionTime: earlier},
			want: Condition{Type: "Ready", Status: "False", ObservedGeneration: 7, Reason: "InvalidSpec",
				Message: "the Component spec is invalid: spec: is required", LastTransitionTime: earlier},
		},
		"status changed: new transition time": {
			status:   compCon,
			previous: &Condition{Type: "Ready", Status: "True", Reason: "Complete", LastTransitionTime: earlier},
			want: Condition{Type: "Ready", Status: "False", ObservedGeneration: 7, Reason: "InProgressCompCon",
				Message: "waiting for every exposed API to have a url and a ready implementation", LastTransitionTime: now},
		},
		"previous without a transition time": {
			status:   complete,
			previous: &Condition{Type: "Ready", Status: "True"},
			want: Condition{Type: "Ready", Status: "True", ObservedGeneration: 7, Reason: "Complete",
				Message: "every child is ready", LastTransitionTime: now},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := ReadyCondition(tc.status, 7, tc.previous, now)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ReadyCondition mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSegmentStatusKeys(t *testing.T) {
	type keys struct{ Exposed, Dependent string }
	want := map[Segment]keys{
		SegmentCore:       {"coreAPIs", "coreDependentAPIs"},
		SegmentManagement: {"managementAPIs", "managementDependentAPIs"},
		SegmentSecurity:   {"securityAPIs", "securityDependentAPIs"},
	}
	got := map[Segment]keys{}
	for _, s := range Segments {
		got[s] = keys{s.ExposedStatusKey(), s.DependentStatusKey()}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("status keys mismatch (-want +got):\n%s", diff)
	}
}

func TestTransitionKeepsTheTimeWhileTheStatusStays(t *testing.T) {
	const then, now = "2026-01-01T00:00:00Z", "2026-01-02T00:00:00Z"
	ready := Condition{Type: "Ready", Status: "True", Reason: "Exposed", LastTransitionTime: then}
	for _, tc := range []struct {
		name     string
		previous *Condition
		next     Condition
		want     string
	}{
		{"first condition", nil, Condition{Type: "Ready", Status: "False", Reason: "Waiting"}, now},
		{"same status and reason", &ready, Condition{Type: "Ready", Status: "True", Reason: "Exposed"}, then},
		{"same status, new reason", &ready, Condition{Type: "Ready", Status: "True", Reason: "Complete", Message: "other"}, then},
		{"status changes", &ready, Condition{Type: "Ready", Status: "False", Reason: "Exposed"}, now},
		{"previous without a time", &Condition{Type: "Ready", Status: "True"}, Condition{Type: "Ready", Status: "True"}, now},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Transition(tc.previous, tc.next, now)
			if got.LastTransitionTime != tc.want {
				t.Errorf("lastTransitionTime = %s, want %s", got.LastTransitionTime, tc.want)
			}
			got.LastTransitionTime = ""
			if got != tc.next {
				t.Errorf("Transition changed more than the time: %+v", got)
			}
		})
	}
}
