// Package conversion is the conversion webhook of the ODA Component CRD
// (components.oda.tmforum.org). It replaces the Canvas's Node.js webhook
// (source/webhooks/implementation/app.js) and follows the mapping written down
// in docs section 1.9 of the behavioural specification.
//
// Convert is a pure function over the unstructured object. It converts one
// version step at a time (v1beta2 <-> v1beta3 <-> v1beta4 <-> v1), so every
// pair of versions goes through the same small, separately tested steps.
// Fields the mapping does not mention are left where they are: the API server
// prunes whatever the target schema does not allow, and a later conversion
// back can still find them when they survive.
package conversion

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/odaflow/odaflow/api"
)

// Component API versions, in order from oldest to newest. v1 is the storage version.
const (
	V1beta2 = "oda.tmforum.org/v1beta2"
	V1beta3 = "oda.tmforum.org/v1beta3"
	V1beta4 = "oda.tmforum.org/v1beta4"
	V1      = "oda.tmforum.org/v1"
)

// Kind is the only kind this package converts.
const Kind = "Component"

// AnnotationConverted is the annotation the Canvas webhook sets on every
// converted object; its value is "Webhook converted From <from> to <to>".
const AnnotationConverted = "webhookconverted"

// versions lists the supported apiVersions, oldest first. The index of a
// version is its position in the conversion chain.
var versions = []string{V1beta2, V1beta3, V1beta4, V1}

// step converts the spec of a Component in place, one version up or down.
type step func(spec map[string]any) error

// upgrades[i] converts versions[i] to versions[i+1]; downgrades[i] converts
// versions[i+1] back to versions[i].
var (
	upgrades   = []step{upgradeV1beta2ToV1beta3, upgradeV1beta3ToV1beta4, upgradeV1beta4ToV1}
	downgrades = []step{downgradeV1beta3ToV1beta2, downgradeV1beta4ToV1beta3, downgradeV1ToV1beta4}
)

func versionIndex(apiVersion string) int {
	for i, v := range versions {
		if v == apiVersion {
			return i
		}
	}
	return -1
}

// ErrUnsupportedVersion is wrapped by the errors Convert returns for an
// apiVersion it does not know.
var ErrUnsupportedVersion = errors.New("unsupported apiVersion")

// Convert returns a copy of the Component obj converted to toAPIVersion. obj is
// never modified. Converting to the version obj already has returns an
// unchanged copy (no annotation: nothing was converted). Otherwise the copy
// gets apiVersion toAPIVersion and the annotation
// webhookconverted: "Webhook converted From <obj apiVersion> to <toAPIVersion>".
//
// Errors name the field whose shape prevents the conversion (an api.FieldError),
// or wrap ErrUnsupportedVersion.
func Convert(obj map[string]any, toAPIVersion string) (map[string]any, error) {
	if obj == nil {
		return nil, api.FieldError{Path: "<object>", Message: "object is null"}
	}
	to := versionIndex(toAPIVersion)
	if to < 0 {
		return nil, fmt.Errorf("desired apiVersion %q: %w (supported: %s)",
			toAPIVersion, ErrUnsupportedVersion, strings.Join(versions, ", "))
	}
	rawFrom, ok := obj["apiVersion"].(string)
	if !ok {
		return nil, wrongType("apiVersion", "string", obj["apiVersion"])
	}
	from := versionIndex(rawFrom)
	if from < 0 {
		return nil, fmt.Errorf("apiVersion %q: %w (supported: %s)",
			rawFrom, ErrUnsupportedVersion, strings.Join(versions, ", "))
	}
	if kind, present := obj["kind"]; present && kind != Kind {
		return nil, api.FieldError{Path: "kind", Message: fmt.Sprintf("expected %q, got %s", Kind, describe(kind))}
	}

	out := deepCopy(obj).(map[string]any)
	if from == to {
		return out, nil
	}

	spec, err := mapField(out, "spec", "spec")
	if err != nil {
		return nil, err
	}
	if spec != nil {
		for i := from; i < to; i++ {
			if err := upgrades[i](spec); err != nil {
				return nil, fmt.Errorf("converting %s to %s: %w", versions[i], versions[i+1], err)
			}
		}
		for i := from; i > to; i-- {
			if err := downgrades[i-1](spec); err != nil {
				return nil, fmt.Errorf("converting %s to %s: %w", versions[i], versions[i-1], err)
			}
		}
	}
	if err := annotate(out, rawFrom, toAPIVersion); err != nil {
		return nil, err
	}
	out["apiVersion"] = toAPIVersion
	return out, nil
}

// annotate records the conversion the way the Canvas webhook does.
func annotate(obj map[string]any, from, to string) error {
	meta, err := mapField(obj, "metadata", "metadata")
	if err != nil {
		return err
	}
	if meta == nil {
		meta = map[string]any{}
		obj["metadata"] = meta
	}
	annotations, err := mapField(meta, "annotations", "metadata.annotations")
	if err != nil {
		return err
	}
	if annotations == nil {
		annotations = map[string]any{}
		meta["annotations"] = annotations
	}
	annotations[AnnotationConverted] = "Webhook converted From " + from + " to " + to
	return nil
}

// fieldPath is a JSON path used in error messages.
type fieldPath string

func (p fieldPath) child(key string) fieldPath {
	if p == "" {
		return fieldPath(key)
	}
	return p + "." + fieldPath(key)
}

func (p fieldPath) index(i int) fieldPath {
	return fieldPath(fmt.Sprintf("%s[%d]", p, i))
}

// describe names the JSON type of v for error messages.
func describe(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case string:
		if len(v) > 64 {
			v = v[:61] + "..."
		}
		return fmt.Sprintf("string %q", v)
	case bool:
		return "boolean"
	case map[string]any:
		return "object"
	case []any:
		return "array"
	case json.Number, float64, float32, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		return "number"
	default:
		return fmt.Sprintf("%T", v)
	}
}

// wrongType is the error of a field whose shape prevents the conversion.
func wrongType(p fieldPath, want string, got any) api.FieldError {
	return api.FieldError{Path: string(p), Message: fmt.Sprintf("expected %s, got %s", want, describe(got))}
}

// mapField returns m[key] as an object, or nil when it is absent or null.
func mapField(m map[string]any, key string, p fieldPath) (map[string]any, error) {
	v, present := m[key]
	if !present || v == nil {
		return nil, nil
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, wrongType(p, "object", v)
	}
	return obj, nil
}

// listField returns m[key] as an array, or nil when it is absent or null.
func listField(m map[string]any, key string, p fieldPath) ([]any, error) {
	v, present := m[key]
	if !present || v == nil {
		return nil, nil
	}
	list, ok := v.([]any)
	if !ok {
		return nil, wrongType(p, "array", v)
	}
	return list, nil
}

// deepCopy copies the JSON containers (objects and arrays) of v. Scalars are
// immutable and shared. Containers of other Go types are shared as well; the
// conversion never modifies them because it rejects them as wrong shapes.
func deepCopy(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = deepCopy(e)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = deepCopy(e)
		}
		return out
	default:
		return v
	}
}

// rename moves m[from] to m[to]. The old name wins when both are set, because
// it is the field of the version being converted from.
func rename(m map[string]any, from, to string) {
	if v, ok := m[from]; ok {
		m[to] = v
		delete(m, from)
	}
}

// The three functional segments of a Component spec.
var segments = []string{"coreFunction", "managementFunction", "securityFunction"}

const (
	exposedAPIs   = "exposedAPIs"
	dependentAPIs = "dependentAPIs"
)

// eachAPI calls fn for every item of spec.<segment>.<list> in the three
// segments, in order.
func eachAPI(spec map[string]any, list string, fn func(api map[string]any, p fieldPath) error) error {
	for _, segment := range segments {
		segPath := fieldPath("spec").child(segment)
		seg, err := mapField(spec, segment, segPath)
		if err != nil {
			return err
		}
		if seg == nil {
			continue
		}
		if err := eachItem(seg, list, segPath.child(list), fn); err != nil {
			return err
		}
	}
	return nil
}

// Event lists under spec.eventNotification.
const (
	publishedEvents  = "publishedEvents"
	subscribedEvents = "subscribedEvents"
)

// eachEvent calls fn for every published and subscribed event.
func eachEvent(spec map[string]any, fn func(event map[string]any, list string, p fieldPath) error) error {
	notifPath := fieldPath("spec.eventNotification")
	notif, err := mapField(spec, "eventNotification", notifPath)
	if err != nil || notif == nil {
		return err
	}
	for _, list := range []string{publishedEvents, subscribedEvents} {
		err := eachItem(notif, list, notifPath.child(list), func(event map[string]any, p fieldPath) error {
			return fn(event, list, p)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

func eachItem(parent map[string]any, key string, p fieldPath, fn func(item map[string]any, p fieldPath) error) error {
	items, err := listField(parent, key, p)
	if err != nil {
		return err
	}
	for i, raw := range items {
		item, ok := raw.(map[string]any)
		if !ok {
			return wrongType(p.index(i), "object", raw)
		}
		if err := fn(item, p.index(i)); err != nil {
			return err
		}
	}
	return nil
}
