package oda

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/odaflow/odaflow/api"
)

// A valid security section, so that each bad spec below has one problem only.
const validSecurity = "securityFunction: {canvasSystemRole: Admin}\n"

// okAPI is a valid exposed API's fields, to be completed or overridden.
const okAPI = "apiType: openapi, implementation: svc, path: /api, port: 8080"

// coreExposed is a spec whose core exposedAPIs are the given flow-YAML items.
func coreExposed(items ...string) string {
	return "coreFunction: {exposedAPIs: [" + strings.Join(items, ", ") + "]}\n" + validSecurity
}

func TestDesiredChildrenRejectsBadSpecs(t *testing.T) {
	long := strings.Repeat("a", 250) // "ctk-" + 250 characters > 253
	cases := map[string]struct {
		component string // default "ctk"
		spec      string // YAML
		path      string // the offending path
		msg       string // part of its message
	}{
		"missing spec": {
			spec: "null", path: "spec", msg: "is required",
		},
		"segment not an object": {
			spec: "coreFunction: [a]\n" + validSecurity,
			path: "spec.coreFunction", msg: "must be an object, got list",
		},
		"exposedAPIs not a list": {
			spec: "coreFunction: {exposedAPIs: {name: api}}\n" + validSecurity,
			path: "spec.coreFunction.exposedAPIs", msg: "must be a list, got object",
		},
		"dependentAPIs not a list": {
			spec: "managementFunction: {dependentAPIs: party}\n" + validSecurity,
			path: "spec.managementFunction.dependentAPIs", msg: "must be a list, got string",
		},
		"item not an object": {
			spec: coreExposed("{name: ok, "+okAPI+"}", "just-a-name"),
			path: "spec.coreFunction.exposedAPIs[1]", msg: "must be an object, got string",
		},
		"null item": {
			spec: "securityFunction: {canvasSystemRole: Admin, dependentAPIs: [null]}\n",
			path: "spec.securityFunction.dependentAPIs[0]", msg: "must be an object, got null",
		},
		"missing name": {
			spec: coreExposed("{" + okAPI + "}"),
			path: "spec.coreFunction.exposedAPIs[0].name", msg: "is required",
		},
		"empty name": {
			spec: coreExposed("{name: '', " + okAPI + "}"),
			path: "spec.coreFunction.exposedAPIs[0].name", msg: "is required",
		},
		"name is a list": {
			spec: coreExposed("{name: [a, b], " + okAPI + "}"),
			path: "spec.coreFunction.exposedAPIs[0].name", msg: "must be a string, got list",
		},
		"dependent name is a boolean": {
			spec: "coreFunction: {dependentAPIs: [{name: true}]}\n" + validSecurity,
			path: "spec.coreFunction.dependentAPIs[0].name", msg: "must be a string, got boolean",
		},
		"unknown apiType": {
			spec: coreExposed("{name: api, apiType: graphql, implementation: svc, path: /api, port: 8080}"),
			path: "spec.coreFunction.exposedAPIs[0].apiType", msg: `unknown API type "graphql"`,
		},
		"unknown apiType in the element": {
			spec: coreExposed("{name: api, " + okAPI + ", specification: [{apiType: soap}]}"),
			path: "spec.coreFunction.exposedAPIs[0].apiType", msg: `unknown API type "soap"`,
		},
		"missing apiType": {
			spec: "managementFunction: {exposedAPIs: [{name: metrics, implementation: svc, path: /m, port: 9090}]}\n" + validSecurity,
			path: "spec.managementFunction.exposedAPIs[0].apiType", msg: "is required",
		},
		"apiType of the wrong type": {
			spec: coreExposed("{name: api, apiType: {openapi: true}, implementation: svc, path: /api, port: 8080}"),
			path: "spec.coreFunction.exposedAPIs[0].apiType", msg: "must be a string, got object",
		},
		"missing implementation": {
			spec: coreExposed("{name: api, apiType: openapi, path: /api, port: 8080}"),
			path: "spec.coreFunction.exposedAPIs[0].implementation", msg: "is required",
		},
		"missing path": {
			spec: coreExposed("{name: api, apiType: openapi, implementation: svc, port: 8080}"),
			path: "spec.coreFunction.exposedAPIs[0].path", msg: "is required",
		},
		"path not starting with /": {
			spec: coreExposed("{name: api, apiType: openapi, implementation: svc, path: api/v4, port: 8080}"),
			path: "spec.coreFunction.exposedAPIs[0].path", msg: `must start with /, got "api/v4"`,
		},
		"missing port": {
			spec: coreExposed("{name: api, apiType: openapi, implementation: svc, path: /api}"),
			path: "spec.coreFunction.exposedAPIs[0].port", msg: "is required",
		},
		"port too large": {
			spec: coreExposed("{name: api, apiType: openapi, implementation: svc, path: /api, port: 70000}"),
			path: "spec.coreFunction.exposedAPIs[0].port", msg: "must be between 1 and 65535, got 70000",
		},
		"port zero": {
			spec: coreExposed("{name: api, apiType: openapi, implementation: svc, path: /api, port: 0}"),
			path: "spec.coreFunction.exposedAPIs[0].port", msg: "must be between 1 and 65535, got 0",
		},
		"negative port": {
			spec: coreExposed("{name: api, apiType: openapi, implementation: svc, path: /api, port: -1}"),
			path: "spec.coreFunction.exposedAPIs[0].port", msg: "must be between 1 and 65535",
		},
		"port a float": {
			spec: coreExposed("{name: api, apiType: openapi, implementation: svc, path: /api, port: 8080.5}"),
			path: "spec.coreFunction.exposedAPIs[0].port", msg: "must be an integer, got 8080.5",
		},
		"port a huge float": {
			spec: coreExposed("{name: api, apiType: openapi, implementation: svc, path: /api, port: 1e300}"),
			path: "spec.coreFunction.exposedAPIs[0].port", msg: "must be an integer",
		},
		"port a non-numeric string": {
			spec: coreExposed("{name: api, apiType: openapi, implementation: svc, path: /api, port: http}"),
			path: "spec.coreFunction.exposedAPIs[0].port", msg: `must be an integer, got "http"`,
		},
		"port in the element a boolean": {
			spec: coreExposed("{name: api, apiType: openapi, implementation: svc, path: /api, specification: [{port: true}]}"),
			path: "spec.coreFunction.exposedAPIs[0].specification[0].port", msg: "must be an integer, got boolean",
		},
		"duplicate API names": {
			spec: coreExposed("{name: api, "+okAPI+"}", "{name: api, "+okAPI+"}"),
			path: "spec.coreFunction.exposedAPIs[1]", msg: `produces the same ExposedAPI "ctk-api" as spec.coreFunction.exposedAPIs[0]`,
		},
		"API names differing only in case": {
			spec: coreExposed("{name: PartyRole, "+okAPI+"}", "{name: partyrole, "+okAPI+"}"),
			path: "spec.coreFunction.exposedAPIs[1]", msg: `produces the same ExposedAPI "ctk-partyrole"`,
		},
		"same API name in two segments": {
			spec: "coreFunction: {exposedAPIs: [{name: metrics, " + okAPI + "}]}\n" +
				"managementFunction: {exposedAPIs: [{name: metrics, apiType: prometheus, implementation: sm, path: /m, port: 9090}]}\n" +
				validSecurity,
			path: "spec.managementFunction.exposedAPIs[0]", msg: `produces the same ExposedAPI "ctk-metrics" as spec.coreFunction.exposedAPIs[0]`,
		},
		"two specification elements with the same major version": {
			spec: coreExposed("{name: api, " + okAPI + ", specification: [{version: 4.0.0}, {version: v4.1}]}"),
			path: "spec.coreFunction.exposedAPIs[0]", msg: `produces the same ExposedAPI "ctk-api-v4"`,
		},
		"duplicate dependent API names": {
			spec: "coreFunction: {dependentAPIs: [{name: party}]}\nsecurityFunction: {canvasSystemRole: Admin, dependentAPIs: [{name: Party}]}\n",
			path: "spec.securityFunction.dependentAPIs[0]", msg: `produces the same DependentAPI "ctk-party"`,
		},
		"duplicate event names": {
			spec: validSecurity + "eventNotification: {publishedEvents: [{name: created}, {name: Created}]}\n",
			path: "spec.eventNotification.publishedEvents[1]", msg: `produces the same PublishedNotification "ctk-created"`,
		},
		"name too long for Kubernetes": {
			spec: coreExposed("{name: " + long + ", " + okAPI + "}"),
			path: "spec.coreFunction.exposedAPIs[0]", msg: "is not a valid Kubernetes name: must be no more than 253 characters",
		},
		"name too long once the version is added": {
			spec: coreExposed("{name: " + long[:246] + ", " + okAPI + ", specification: [{version: 10.0.0}]}"),
			path: "spec.coreFunction.exposedAPIs[0]", msg: "must be no more than 253 characters",
		},
		"name with an underscore": {
			spec: coreExposed("{name: party_role, " + okAPI + "}"),
			path: "spec.coreFunction.exposedAPIs[0]", msg: `child ExposedAPI name "ctk-party_role" is not a valid Kubernetes name`,
		},
		"name with unicode": {
			spec: "coreFunction: {dependentAPIs: [{name: catálogo}]}\n" + validSecurity,
			path: "spec.coreFunction.dependentAPIs[0]", msg: `child DependentAPI name "ctk-catálogo" is not a valid Kubernetes name`,
		},
		"name with a space": {
			spec: coreExposed("{name: 'party role', " + okAPI + "}"),
			path: "spec.coreFunction.exposedAPIs[0]", msg: "is not a valid Kubernetes name",
		},
		"name ending with a dash": {
			spec: "coreFunction: {dependentAPIs: [{name: party-}]}\n" + validSecurity,
			path: "spec.coreFunction.dependentAPIs[0]", msg: "is not a valid Kubernetes name",
		},
		"version with invalid characters": {
			spec: "coreFunction: {dependentAPIs: [{name: party, specification: [{version: 4_beta}]}]}\n" + validSecurity,
			path: "spec.coreFunction.dependentAPIs[0]", msg: `"ctk-party-v4_beta" is not a valid Kubernetes name`,
		},
		"event name invalid": {
			spec: validSecurity + "eventNotification: {subscribedEvents: [{name: party_created}]}\n",
			path: "spec.eventNotification.subscribedEvents[0]", msg: `"ctk-party_created" is not a valid Kubernetes name`,
		},
		"component name invalid": {
			component: "ctk_prodcat",
			spec:      validSecurity,
			path:      "metadata.name", msg: `child IdentityConfig name "ctk_prodcat" is not a valid Kubernetes name`,
		},
		"missing securityFunction": {
			spec: "coreFunction: {exposedAPIs: []}\n",
			path: "spec.securityFunction.canvasSystemRole", msg: "is required",
		},
		"missing canvasSystemRole": {
			spec: "securityFunction: {componentRole: [{name: admin}]}\n",
			path: "spec.securityFunction.canvasSystemRole", msg: "is required",
		},
		"canvasSystemRole of the wrong type": {
			spec: "securityFunction: {canvasSystemRole: {name: Admin}}\n",
			path: "spec.securityFunction.canvasSystemRole", msg: "must be a string, got object",
		},
		"securityFunction not an object": {
			spec: "securityFunction: Admin\n",
			path: "spec.securityFunction", msg: "must be an object, got string",
		},
		"componentRole not a list": {
			spec: "securityFunction: {canvasSystemRole: Admin, componentRole: admin}\n",
			path: "spec.securityFunction.componentRole", msg: "must be a list, got string",
		},
		"secretsManagement not an object": {
			spec: "securityFunction: {canvasSystemRole: Admin, secretsManagement: sideCar}\n",
			path: "spec.securityFunction.secretsManagement", msg: "must be an object, got string",
		},
		"secretsManagement of the wrong type": {
			spec: "securityFunction: {canvasSystemRole: Admin, secretsManagement: {type: vault, podSelector: {name: x}}}\n",
			path: "spec.securityFunction.secretsManagement.type", msg: `must be sideCar, got "vault"`,
		},
		"secretsManagement without type": {
			spec: "securityFunction: {canvasSystemRole: Admin, secretsManagement: {podSelector: {name: x}}}\n",
			path: "spec.securityFunction.secretsManagement.type", msg: `must be sideCar, got ""`,
		},
		"secretsManagement without podSelector": {
			spec: "securityFunction: {canvasSystemRole: Admin, secretsManagement: {type: sideCar}}\n",
			path: "spec.securityFunction.secretsManagement.podSelector", msg: "is required",
		},
		"secretsManagement podSelector not an object": {
			spec: "securityFunction: {canvasSystemRole: Admin, secretsManagement: {type: sideCar, podSelector: '*'}}\n",
			path: "spec.securityFunction.secretsManagement.podSelector", msg: "must be an object, got string",
		},
		"eventNotification not an object": {
			spec: validSecurity + "eventNotification: [a]\n",
			path: "spec.eventNotification", msg: "must be an object, got list",
		},
		"publishedEvents not a list": {
			spec: validSecurity + "eventNotification: {publishedEvents: {name: created}}\n",
			path: "spec.eventNotification.publishedEvents", msg: "must be a list, got object",
		},
		"event without name": {
			spec: validSecurity + "eventNotification: {publishedEvents: [{hub: /hub}]}\n",
			path: "spec.eventNotification.publishedEvents[0].name", msg: "is required",
		},
		"event name of the wrong type": {
			spec: validSecurity + "eventNotification: {publishedEvents: [{name: [a]}]}\n",
			path: "spec.eventNotification.publishedEvents[0].name", msg: "must be a string, got list",
		},
		"event not an object": {
			spec: validSecurity + "eventNotification: {subscribedEvents: [created]}\n",
			path: "spec.eventNotification.subscribedEvents[0]", msg: "must be an object, got string",
		},
		"specification of the wrong type": {
			spec: coreExposed("{name: api, " + okAPI + ", specification: 4}"),
			path: "spec.coreFunction.exposedAPIs[0].specification", msg: "must be a list, got number",
		},
		"specification element of the wrong type": {
			spec: "coreFunction: {dependentAPIs: [{name: party, specification: [[https://x/a-v4.0.json]]}]}\n" + validSecurity,
			path: "spec.coreFunction.dependentAPIs[0].specification[0]", msg: "must be an object or a URL string, got list",
		},
		"specification url of the wrong type": {
			spec: "coreFunction: {dependentAPIs: [{name: party, specification: [{url: {href: x}}]}]}\n" + validSecurity,
			path: "spec.coreFunction.dependentAPIs[0].specification[0].url", msg: "must be a string, got object",
		},
		"specification version of the wrong type": {
			spec: "coreFunction: {dependentAPIs: [{name: party, specification: [{version: [4]}]}]}\n" + validSecurity,
			path: "spec.coreFunction.dependentAPIs[0].specification[0].version", msg: "must be a string, got list",
		},
		"required not a boolean": {
			spec: coreExposed("{name: api, required: 'yes', " + okAPI + "}"),
			path: "spec.coreFunction.exposedAPIs[0].required", msg: "must be a boolean, got string",
		},
		"id of the wrong type": {
			spec: coreExposed("{name: api, id: {tmf: 620}, " + okAPI + "}"),
			path: "spec.coreFunction.exposedAPIs[0].id", msg: "must be a string, got object",
		},
		"gatewayConfiguration not an object": {
			spec: coreExposed("{name: api, gatewayConfiguration: [rateLimit], " + okAPI + "}"),
			path: "spec.coreFunction.exposedAPIs[0].gatewayConfiguration", msg: "must be an object, got list",
		},
		"resources not a list": {
			spec: "coreFunction: {dependentAPIs: [{name: party, specification: [{resources: individual}]}]}\n" + validSecurity,
			path: "spec.coreFunction.dependentAPIs[0].specification[0].resources", msg: "must be a list, got string",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			component := tc.component
			if component == "" {
				component = "ctk"
			}
			_, errs := DesiredChildren(component, specYAML(t, tc.spec))
			if len(errs) == 0 {
				t.Fatalf("DesiredChildren accepted the spec, want an error at %s", tc.path)
			}
			found := false
			for _, e := range errs {
				if e.Path == tc.path && strings.Contains(e.Message, tc.msg) {
					found = true
				}
			}
			if !found {
				t.Errorf("errors = %q\nwant one at %s containing %q", errs.Error(), tc.path, tc.msg)
			}
			if !strings.Contains(errs.Error(), tc.path+": ") {
				t.Errorf("error message %q does not name %s", errs.Error(), tc.path)
			}
		})
	}
}

// One status message lists every problem of a spec, each once.
func TestDesiredChildrenReportsEveryProblemOnce(t *testing.T) {
	spec := specYAML(t, `
coreFunction:
	exposedAPIs:
	- name: api
		apiType: openapi
		implementation: svc
		path: api
		port: 8080
		required: maybe
		specification:
		- {version: 4}
		- {version: 5}
	- name: api
		apiType: openapi
		implementation: svc
		path: /api
		port: 8080
		specification: [{version: 4}]
securityFunction:
	secretsManagement: {type: sideCar}
eventNotification:
	publishedEvents: [{description: no name}]
`)
	_, errs := DesiredChildren("ctk", spec)
	want := api.FieldErrors{
		{Path: "spec.coreFunction.exposedAPIs[0].required", Message: "must be a boolean, got string"},
		{Path: "spec.coreFunction.exposedAPIs[0].path", Message: `must start with /, got "api"`},
		{Path: "spec.securityFunction.canvasSystemRole", Message: "is required: the identity step creates this role for the component"},
		{Path: "spec.securityFunction.secretsManagement.podSelector", Message: "is required"},
		{Path: "spec.eventNotification.publishedEvents[0].name", Message: "is required"},
		{Path: "spec.coreFunction.exposedAPIs[1]", Message: `produces the same ExposedAPI "ctk-api-v4" as spec.coreFunction.exposedAPIs[0]; API names (and major versions) must be unique`},
	}
	if diff := cmp.Diff(want, errs); diff != "" {
		t.Errorf("errors mismatch (-want +got):\n%s", diff)
	}
	if got, wantPrefix := errs.Error(), "spec.coreFunction.exposedAPIs[0].required: must be a boolean, got string; "; !strings.HasPrefix(got, wantPrefix) {
		t.Errorf("Error() = %q, want it to start with %q", got, wantPrefix)
	}
}

func TestFieldErrorsError(t *testing.T) {
	cases := map[string]struct {
		errs api.FieldErrors
		want string
	}{
		"none": {errs: nil, want: ""},
		"one":  {errs: api.FieldErrors{{Path: "spec", Message: "is required"}}, want: "spec: is required"},
		"two": {
			errs: api.FieldErrors{{Path: "a", Message: "x"}, {Path: "b", Message: "y"}},
			want: "a: x; b: y",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := tc.errs.Error(); got != tc.want {
				t.Errorf("Error() = %q, want %q", got, tc.want)
			}
		})
	}
}
