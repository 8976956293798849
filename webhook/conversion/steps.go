package conversion

import (
	"encoding/json"
	"net/url"
	"strconv"
	"strings"
)

// metadataFields are the flat v1beta2/v1beta3 spec fields that v1beta4 moved
// under spec.componentMetadata. Other componentMetadata fields (eTom, SID,
// functionalFramework) have no flat counterpart and stay where they are.
var metadataFields = []string{
	"id", "name", "version", "description", "functionalBlock", "publicationDate", "status", "maintainers", "owners",
}

// gatewayFields are the gateway policies that v1beta4 moved from the root of
// an exposed API under its gatewayConfiguration.
var gatewayFields = []string{"apiKeyVerification", "rateLimit", "quota", "OASValidation", "CORS", "template"}

// The per-specification fields of v1: they sit at the API (or event) root up
// to v1beta4 and in specification[] items from v1 on.
var (
	exposedSpecFields    = []string{"path", "port", "implementation", "developerUI", "resources", "apiType", "apiSDO", "gatewayConfiguration"}
	dependentSpecFields  = []string{"apiType", "resources", "apiSDO"}
	publishedSpecFields  = []string{"apiType", "implementation", "developerUI", "hub", "port"}
	subscribedSpecFields = []string{"apiType", "implementation", "developerUI", "callback", "port", "query"}
)

const securityFunction = "securityFunction"

// upgradeV1beta2ToV1beta3 wraps each exposed API's specification into a
// one-element array and renames apitype to apiType (exposed and dependent
// APIs). Events given as {name, href} get the v1beta3 event fields, as the
// Canvas webhook does.
func upgradeV1beta2ToV1beta3(spec map[string]any) error {
	err := eachAPI(spec, exposedAPIs, func(api map[string]any, p fieldPath) error {
		if err := specToStringList(api, p); err != nil {
			return err
		}
		rename(api, "apitype", "apiType")
		return nil
	})
	if err != nil {
		return err
	}
	err = eachAPI(spec, dependentAPIs, func(api map[string]any, p fieldPath) error {
		// A dependent API keeps its single URL string in v1beta3.
		if err := checkSpec(api, p); err != nil {
			return err
		}
		rename(api, "apitype", "apiType")
		return nil
	})
	if err != nil {
		return err
	}
	return eachEvent(spec, func(event map[string]any, list string, _ fieldPath) error {
		eventFromHref(event, list)
		return nil
	})
}

// downgradeV1beta3ToV1beta2 is the reverse of upgradeV1beta2ToV1beta3.
func downgradeV1beta3ToV1beta2(spec map[string]any) error {
	err := eachAPI(spec, exposedAPIs, func(api map[string]any, p fieldPath) error {
		if err := specToSingleURL(api, p); err != nil {
			return err
		}
		rename(api, "apiType", "apitype")
		return nil
	})
	if err != nil {
		return err
	}
	err = eachAPI(spec, dependentAPIs, func(api map[string]any, p fieldPath) error {
		if err := specToSingleURL(api, p); err != nil {
			return err
		}
		rename(api, "apiType", "apitype")
		return nil
	})
	if err != nil {
		return err
	}
	return eachEvent(spec, func(event map[string]any, list string, _ fieldPath) error {
		eventToHref(event, list)
		return nil
	})
}

// upgradeV1beta3ToV1beta4 moves the component metadata under
// componentMetadata and the gateway policies under gatewayConfiguration, turns
// specification URLs into {url} objects (exposed APIs, dependent APIs and
// events) and renames securityFunction.controllerRole to canvasSystemRole.
func upgradeV1beta3ToV1beta4(spec map[string]any) error {
	meta, err := mapField(spec, "componentMetadata", "spec.componentMetadata")
	if err != nil {
		return err
	}
	if hasAny(spec, metadataFields) {
		if meta == nil {
			meta = map[string]any{}
			spec["componentMetadata"] = meta
		}
		for _, f := range metadataFields {
			if v, ok := spec[f]; ok {
				meta[f] = v
				delete(spec, f)
			}
		}
	}

	err = eachAPI(spec, exposedAPIs, func(api map[string]any, p fieldPath) error {
		gateway, err := mapField(api, "gatewayConfiguration", p.child("gatewayConfiguration"))
		if err != nil {
			return err
		}
		// Unlike the Canvas webhook, no empty gatewayConfiguration is added to
		// APIs without gateway policies: it would mean the same and would make
		// the result differ from the Canvas's own v1beta4 and v1 examples.
		if hasAny(api, gatewayFields) {
			if gateway == nil {
				gateway = map[string]any{}
				api["gatewayConfiguration"] = gateway
			}
			for _, f := range gatewayFields {
				if v, ok := api[f]; ok {
					gateway[f] = v
					delete(api, f)
				}
			}
		}
		return specToObjectList(api, p)
	})
	if err != nil {
		return err
	}
	err = eachAPI(spec, dependentAPIs, specToObjectList)
	if err != nil {
		return err
	}
	security, err := mapField(spec, securityFunction, "spec."+securityFunction)
	if err != nil {
		return err
	}
	if security != nil {
		rename(security, "controllerRole", "canvasSystemRole")
	}
	return eachEvent(spec, func(event map[string]any, _ string, p fieldPath) error {
		return specToObjectList(event, p)
	})
}

// downgradeV1beta4ToV1beta3 is the reverse of upgradeV1beta3ToV1beta4.
// Specification versions, and all but the first URL of a dependent API or
// event, cannot be expressed in v1beta3 and are lost.
func downgradeV1beta4ToV1beta3(spec map[string]any) error {
	meta, err := mapField(spec, "componentMetadata", "spec.componentMetadata")
	if err != nil {
		return err
	}
	if meta != nil {
		for _, f := range metadataFields {
			if v, ok := meta[f]; ok {
				spec[f] = v
				delete(meta, f)
			}
		}
		if len(meta) == 0 {
			delete(spec, "componentMetadata")
		}
	}

	err = eachAPI(spec, exposedAPIs, func(api map[string]any, p fieldPath) error {
		gateway, err := mapField(api, "gatewayConfiguration", p.child("gatewayConfiguration"))
		if err != nil {
			return err
		}
		if gateway != nil {
			for _, f := range gatewayFields {
				if v, ok := gateway[f]; ok {
					api[f] = v
					delete(gateway, f)
				}
			}
			if len(gateway) == 0 {
				delete(api, "gatewayConfiguration")
			}
		}
		return specToURLList(api, p)
	})
	if err != nil {
		return err
	}
	err = eachAPI(spec, dependentAPIs, specToSingleURL)
	if err != nil {
		return err
	}
	security, err := mapField(spec, securityFunction, "spec."+securityFunction)
	if err != nil {
		return err
	}
	if security != nil {
		rename(security, "canvasSystemRole", "controllerRole")
	}
	return eachEvent(spec, func(event map[string]any, _ string, p fieldPath) error {
		return specToSingleURL(event, p)
	})
}

// upgradeV1beta4ToV1 moves the per-specification fields of exposed APIs,
// dependent APIs and events from their root into specification[0] (see
// moveIntoFirstSpec for when they stay at the root).
func upgradeV1beta4ToV1(spec map[string]any) error {
	err := eachAPI(spec, exposedAPIs, func(api map[string]any, p fieldPath) error {
		return moveIntoFirstSpec(api, exposedSpecFields, p, false)
	})
	if err != nil {
		return err
	}
	err = eachAPI(spec, dependentAPIs, func(api map[string]any, p fieldPath) error {
		return moveIntoFirstSpec(api, dependentSpecFields, p, false)
	})
	if err != nil {
		return err
	}
	return eachEvent(spec, func(event map[string]any, list string, p fieldPath) error {
		return moveIntoFirstSpec(event, eventSpecFields(list), p, true)
	})
}

// downgradeV1ToV1beta4 is the reverse of upgradeV1beta4ToV1.
func downgradeV1ToV1beta4(spec map[string]any) error {
	err := eachAPI(spec, exposedAPIs, func(api map[string]any, p fieldPath) error {
		return moveOutOfFirstSpec(api, exposedSpecFields, p)
	})
	if err != nil {
		return err
	}
	err = eachAPI(spec, dependentAPIs, func(api map[string]any, p fieldPath) error {
		return moveOutOfFirstSpec(api, dependentSpecFields, p)
	})
	if err != nil {
		return err
	}
	return eachEvent(spec, func(event map[string]any, list string, p fieldPath) error {
		return moveOutOfFirstSpec(event, eventSpecFields(list), p)
	})
}

func eventSpecFields(list string) []string {
	if list == subscribedEvents {
		return subscribedSpecFields
	}
	return publishedSpecFields
}

// eventPathField is the field holding an event's path: the hub a published
// event is pushed to, or the callback a subscribed event is delivered to.
func eventPathField(list string) string {
	if list == subscribedEvents {
		return "callback"
	}
	return "hub"
}

// eventFromHref turns a v1beta2 event {name, href} into the v1beta3 fields,
// like the Canvas webhook: implementation is the host, hub (or callback) the
// path and port the port of the URL. An href that is not an absolute URL is
// left alone, as the Canvas does.
func eventFromHref(event map[string]any, list string) {
	href, ok := event["href"].(string)
	if !ok {
		return
	}
	u, err := url.Parse(href)
	if err != nil || u.Scheme == "" || u.Hostname() == "" {
		return
	}
	port, err := strconv.ParseInt(u.Port(), 10, 32)
	if err != nil || port <= 0 {
		// The Canvas uses 80 for every URL without a port; the scheme's
		// default port is what the URL actually means.
		port = 80
		if strings.EqualFold(u.Scheme, "https") {
			port = 443
		}
	}
	path := u.EscapedPath()
	if path == "" {
		path = "/"
	}

	delete(event, "href")
	setDefault(event, "description", "")
	setDefault(event, "apiType", "openapi")
	setDefault(event, "developerUI", "")
	event["implementation"] = u.Hostname()
	event[eventPathField(list)] = path
	event["port"] = port
	if list == subscribedEvents {
		event["query"] = u.RawQuery
	}
}

// eventToHref is the reverse of eventFromHref: href becomes
// http://<implementation>[:<port>]<hub or callback>[?<query>] and the v1beta3
// event fields are removed. An event without an implementation host has no
// href to build and is left alone.
func eventToHref(event map[string]any, list string) {
	host, ok := event["implementation"].(string)
	if !ok || host == "" {
		return
	}
	pathField := eventPathField(list)
	path := ""
	if v, present := event[pathField]; present && v != nil {
		s, ok := v.(string)
		if !ok {
			return
		}
		path = s
	}
	if path != "" && !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	if v, present := event["port"]; present && v != nil {
		port, ok := formatPort(v)
		if !ok {
			return
		}
		host += ":" + port
	}
	href := "http://" + host + path
	if q, ok := event["query"].(string); ok && q != "" && list == subscribedEvents {
		href += "?" + q
	}

	for _, f := range []string{"description", "apiType", specKey, "implementation", "developerUI", pathField, "port", "query"} {
		delete(event, f)
	}
	event["href"] = href
}

func setDefault(m map[string]any, key string, v any) {
	if _, ok := m[key]; !ok {
		m[key] = v
	}
}

// formatPort renders a JSON port number (or numeric string) for a URL.
func formatPort(v any) (string, bool) {
	var s string
	switch v := v.(type) {
	case json.Number:
		s = v.String()
	case float64:
		s = strconv.FormatFloat(v, 'f', -1, 64)
	case int:
		s = strconv.Itoa(v)
	case int32:
		s = strconv.FormatInt(int64(v), 10)
	case int64:
		s = strconv.FormatInt(v, 10)
	case string:
		s = v
	default:
		return "", false
	}
	if _, err := strconv.ParseUint(s, 10, 16); err != nil {
		return "", false
	}
	return s, true
}
