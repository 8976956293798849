package api

import (
	"fmt"
	"reflect"
	"strings"
)

// Text is a string that may also be written as a number: Component charts
// often give a version unquoted (version: 4), which reads as "4".
type Text string

// Count is a positive count (a rate or quota limit) written as a number or a
// decimal string ("100"); 0 means not given.
type Count int64

func (c *Count) decodeValue(d decoder, v any, path string) bool {
	if blank(v) {
		return false
	}
	n, ok := ToInt(v)
	if !ok || n < 1 {
		d.add(path, "must be a positive integer, got %s", Describe(v))
		return false
	}
	*c = Count(n)
	return true
}

// CommaList is a list of strings written either as one comma-separated
// string ("GET, POST") or as a list. Items are trimmed and empty ones
// dropped; an empty CommaList means not given.
type CommaList []string

func (c *CommaList) decodeValue(d decoder, v any, path string) bool {
	var items []string
	switch t := v.(type) {
	case string:
		items = strings.Split(t, ",")
	case []any:
		for i, it := range t {
			s, isStr := it.(string)
			if !isStr {
				d.add(fmt.Sprintf("%s[%d]", path, i), "must be a string, got %s", TypeName(it))
				continue
			}
			items = append(items, s)
		}
	default:
		d.add(path, "must be a comma-separated string, got %s", TypeName(v))
		return false
	}
	var out CommaList
	for _, it := range items {
		if it = strings.TrimSpace(it); it != "" {
			out = append(out, it)
		}
	}
	*c = out
	return len(out) > 0
}

// Specifications is the specification[] of a Component's API declaration.
// v1 writes a list of objects; the older shapes, one object or a plain URL
// string, and URL strings as list elements, are read too (a URL string s
// reads as {url: s}). An element of any other type is a problem and is left
// out, so every element present is usable.
type Specifications[T any] []T

func (s *Specifications[T]) decodeValue(d decoder, v any, path string) bool {
	one := func(el any, p string) (T, bool) {
		var out T
		if u, isStr := el.(string); isStr {
			el = map[string]any{"url": u}
		}
		if _, isObj := el.(map[string]any); !isObj {
			d.add(p, "must be an object or a URL string, got %s", TypeName(el))
			return out, false
		}
		d.value(el, p, reflect.ValueOf(&out).Elem())
		return out, true
	}
	switch t := v.(type) {
	case string, map[string]any:
		el, _ := one(t, path)
		*s = Specifications[T]{el}
	case []any:
		out := make(Specifications[T], 0, len(t))
		for j, el := range t {
			if e, ok := one(el, fmt.Sprintf("%s[%d]", path, j)); ok {
				out = append(out, e)
			}
		}
		*s = out
	default:
		d.add(path, "must be a list, got %s", TypeName(v))
		return false
	}
	return true
}
