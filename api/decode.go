package api

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
)

// Decode reads obj, an object as the apiserver returns it, into a T. path is
// obj's own path ("spec"), which starts every error path. It returns every
// problem found; the fields that had one are left unset. A nil obj decodes
// to the zero T without problems: whether a block is required is the
// caller's rule.
func Decode[T any](obj map[string]any, path string) (T, FieldErrors) {
	var out T
	var errs FieldErrors
	if obj != nil {
		d := decoder{errs: &errs}
		d.value(obj, path, reflect.ValueOf(&out).Elem())
	}
	return out, errs
}

// valueDecoder is implemented by the types that read a value of more than
// one shape (a list or a comma-separated string, say). decodeValue gets a
// non-null value and reports whether it set the receiver.
type valueDecoder interface {
	decodeValue(d decoder, v any, path string) bool
}

// gated is implemented by the policy blocks that carry an on/off switch:
// when the field named by gate() is false the block is not read further, as
// the Canvas operators ignore a switched-off policy.
type gated interface {
	gate() string
}

var (
	valueDecoderType = reflect.TypeFor[valueDecoder]()
	textType         = reflect.TypeFor[Text]()
)

type decoder struct {
	errs *FieldErrors
}

func (d decoder) add(path, format string, args ...any) { d.errs.Add(path, format, args...) }

// value decodes v into dst and reports whether it set dst; a null v leaves
// dst unset without a problem.
func (d decoder) value(v any, path string, dst reflect.Value) bool {
	if v == nil {
		return false
	}
	if dst.CanAddr() && dst.Addr().Type().Implements(valueDecoderType) {
		return dst.Addr().Interface().(valueDecoder).decodeValue(d, v, path)
	}
	switch dst.Kind() {
	case reflect.Pointer:
		p := reflect.New(dst.Type().Elem())
		if !d.value(v, path, p.Elem()) {
			return false
		}
		dst.Set(p)
		return true
	case reflect.Interface:
		dst.Set(reflect.ValueOf(v))
		return true
	case reflect.String:
		return d.str(v, path, dst)
	case reflect.Bool:
		b, ok := v.(bool)
		if !ok {
			d.add(path, "must be a boolean, got %s", TypeName(v))
			return false
		}
		dst.SetBool(b)
		return true
	case reflect.Int64:
		if blank(v) {
			return false
		}
		n, ok := ToInt(v)
		if !ok {
			d.add(path, "must be an integer, got %s", Describe(v))
			return false
		}
		dst.SetInt(n)
		return true
	case reflect.Map:
		m, ok := v.(map[string]any)
		if !ok {
			d.add(path, "must be an object, got %s", TypeName(v))
			return false
		}
		dst.Set(reflect.ValueOf(m))
		return true
	case reflect.Slice:
		return d.slice(v, path, dst)
	case reflect.Struct:
		m, ok := v.(map[string]any)
		if !ok {
			d.add(path, "must be an object, got %s", TypeName(v))
			return false
		}
		d.fields(m, path, dst)
		return true
	default:
		// A type of this package that the decoder cannot fill is a
		// programming error, found by the package's tests.
		panic(fmt.Sprintf("api: cannot decode into %s at %s", dst.Type(), path))
	}
}

// str reads a string; a Text also takes a number, as its decimal text.
func (d decoder) str(v any, path string, dst reflect.Value) bool {
	switch t := v.(type) {
	case string:
		dst.SetString(t)
		return true
	case int64, int, int32, float64:
		if dst.Type() == textType {
			// Versions are often written unquoted (version: 4).
			dst.SetString(fmt.Sprint(t))
			return true
		}
	}
	d.add(path, "must be a string, got %s", TypeName(v))
	return false
}

// slice reads a list. []any is taken as it is; any other element type is
// decoded element by element, and a null element is a problem.
func (d decoder) slice(v any, path string, dst reflect.Value) bool {
	l, ok := v.([]any)
	if !ok {
		d.add(path, "must be a list, got %s", TypeName(v))
		return false
	}
	if dst.Type().Elem().Kind() == reflect.Interface {
		dst.Set(reflect.ValueOf(l))
		return true
	}
	out := reflect.MakeSlice(dst.Type(), len(l), len(l))
	for i, el := range l {
		p := path + "[" + strconv.Itoa(i) + "]"
		if el == nil {
			d.add(p, "must be %s, got null", kindWord(dst.Type().Elem()))
			continue
		}
		d.value(el, p, out.Index(i))
	}
	dst.Set(out)
	return true
}

// kindWord names what a Go type is decoded from, for "must be ..." messages.
func kindWord(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int64:
		return "an integer"
	case reflect.Slice:
		return "a list"
	default:
		return "an object"
	}
}

// fields reads an object into the struct dst, field by field in declaration
// order, so that problems come in a stable order (workflows call this).
func (d decoder) fields(m map[string]any, path string, dst reflect.Value) {
	t := dst.Type()
	skip := ""
	if g, ok := dst.Addr().Interface().(gated); ok {
		skip = g.gate()
		i := fieldByName(t, skip)
		d.value(m[skip], path+"."+skip, dst.Field(i))
		if !dst.Field(i).Bool() {
			return
		}
	}
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous && f.Tag.Get("json") == "" {
			d.fields(m, path, dst.Field(i))
			continue
		}
		if !f.IsExported() {
			continue
		}
		if f.Tag.Get("decode") == "raw" {
			dst.Field(i).Set(reflect.ValueOf(m))
			continue
		}
		name := jsonName(f)
		if name == "" || name == skip {
			continue
		}
		// Most fields are absent: skip them before building their path.
		if v := m[name]; v != nil {
			d.value(v, path+"."+name, dst.Field(i))
		}
	}
}

func jsonName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	if name == "-" {
		return ""
	}
	if name == "" {
		return f.Name
	}
	return name
}

func fieldByName(t reflect.Type, json string) int {
	for i := range t.NumField() {
		if jsonName(t.Field(i)) == json {
			return i
		}
	}
	panic(fmt.Sprintf("api: %s has no field %q", t, json))
}

// valueOf is the settable reflect.Value of *p.
func valueOf[T any](p *T) reflect.Value { return reflect.ValueOf(p).Elem() }
