package api

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// FieldError is one problem with one field of an object, with the field's
// path (spec.rateLimit.limit). It is the only field error type of odaflow:
// decoding and the checks that follow it report with it alike.
type FieldError struct {
	Path    string `json:"path"`
	Message string `json:"message"`
}

func (e FieldError) Error() string { return e.Path + ": " + e.Message }

// FieldErrors lists every problem found; it is an error when non-empty.
type FieldErrors []FieldError

func (es FieldErrors) Error() string {
	msgs := make([]string, len(es))
	for i, e := range es {
		msgs[i] = e.Error()
	}
	return strings.Join(msgs, "; ")
}

// Add records one problem at path.
func (es *FieldErrors) Add(path, format string, args ...any) {
	*es = append(*es, FieldError{Path: path, Message: fmt.Sprintf(format, args...)})
}

// At reports whether a problem was recorded at exactly path, so that a check
// can stay silent about a field whose type is already reported.
func (es FieldErrors) At(path string) bool {
	for _, e := range es {
		if e.Path == path {
			return true
		}
	}
	return false
}

// Unique drops repeated problems, keeping the first of each.
func (es FieldErrors) Unique() FieldErrors {
	seen := make(map[FieldError]bool, len(es))
	out := es[:0:0]
	for _, e := range es {
		if !seen[e] {
			seen[e] = true
			out = append(out, e)
		}
	}
	return out
}

// TypeName names the JSON type of a decoded value, for messages.
func TypeName(v any) string {
	switch v.(type) {
	case string:
		return "string"
	case bool:
		return "boolean"
	case int64, int, int32, float64, json.Number:
		return "number"
	case []any:
		return "list"
	case map[string]any:
		return "object"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", v)
}

// Describe shows a scalar value (quoted when a string) and the type of
// anything else, for messages.
func Describe(v any) string {
	switch t := v.(type) {
	case string:
		return strconv.Quote(t)
	case float64, int64, int, int32, json.Number:
		return fmt.Sprint(t)
	}
	return TypeName(v)
}

// ToInt reads an integer given as a JSON number (int64 or float64, as the
// apiserver and encoding/json decode it, or a json.Number) or as a decimal string, which Helm
// charts often render. A fraction, or a float beyond 2^53 where float64 no
// longer holds every integer, is not an integer.
func ToInt(v any) (int64, bool) {
	switch t := v.(type) {
	case int64:
		return t, true
	case int:
		return int64(t), true
	case int32:
		return int64(t), true
	case float64:
		if t != math.Trunc(t) || math.Abs(t) > 1<<53 {
			return 0, false
		}
		return int64(t), true
	case json.Number:
		n, err := t.Int64()
		return n, err == nil
	case string:
		n, err := strconv.ParseInt(strings.TrimSpace(t), 10, 64)
		return n, err == nil
	}
	return 0, false
}

// blank reports whether v is null or an empty (or all-space) string: Helm
// renders an unset value as "", and the Canvas operators read it as unset.
func blank(v any) bool {
	if v == nil {
		return true
	}
	s, isStr := v.(string)
	return isStr && strings.TrimSpace(s) == ""
}
