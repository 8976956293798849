package conversion

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"strconv"
	"testing"
)

// FuzzConvertRoundTrip feeds arbitrary Components to Convert: the fuzz input
// is decoded as JSON when it is JSON, and otherwise drives genComponent, which
// builds Component-shaped objects with fields of every version, of the right
// and of wrong types, so that the fuzzer reaches the conversion steps rather
// than the JSON decoder. Whatever the input, Convert must not panic or modify its input, and when it succeeds the
// result must carry the target apiVersion, encode as JSON and convert back to
// the original version without error (the steps accept in one direction
// exactly what they produce in the other).
func FuzzConvertRoundTrip(f *testing.F) {
	for _, v := range versions {
		data, err := json.Marshal(fixture(f, v))
		if err != nil {
			f.Fatal(err)
		}
		for target := range versions {
			f.Add(data, uint8(target))
		}
	}
	for _, doc := range []string{richV1beta3, richV1beta4} {
		data, err := json.Marshal(fromYAML(f, doc))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data, uint8(0))
		f.Add(data, uint8(3))
	}
	f.Add([]byte(`{"apiVersion":"oda.tmforum.org/v1beta2","spec":{"eventNotification":{"publishedEvents":[{"href":"http://h:1/x"}]}}}`), uint8(3))
	f.Add([]byte(`{"apiVersion":"oda.tmforum.org/v1","spec":{"coreFunction":{"exposedAPIs":[{"specification":[{"url":1}]}]}}}`), uint8(0))
	f.Add([]byte(`{"apiVersion":"oda.tmforum.org/v1beta3","spec":{"coreFunction":{"exposedAPIs":[{"specification":""}]}}}`), uint8(3))
	f.Add([]byte(`null`), uint8(1))

	f.Fuzz(func(t *testing.T, doc []byte, target uint8) {
		dec := json.NewDecoder(bytes.NewReader(doc))
		dec.UseNumber()
		var obj map[string]any
		if err := dec.Decode(&obj); err != nil {
			obj = genComponent(doc)
		}
		checkConvert(t, obj, int(target))
	})
}

// checkConvert checks the properties FuzzConvertRoundTrip states.
func checkConvert(t *testing.T, obj map[string]any, target int) {
	t.Helper()
	before := deepCopy(obj)
	to := versions[target%len(versions)]

	out, err := Convert(obj, to)
	if obj != nil && !reflect.DeepEqual(before, any(obj)) {
		t.Fatalf("Convert modified its input:\nbefore %v\nafter  %v", before, obj)
	}
	if err != nil {
		return
	}
	if out["apiVersion"] != to {
		t.Fatalf("apiVersion = %v, want %s", out["apiVersion"], to)
	}
	if _, err := json.Marshal(out); err != nil {
		t.Fatalf("result does not encode: %v", err)
	}
	from := obj["apiVersion"].(string)
	if _, err := Convert(out, from); err != nil {
		t.Fatalf("converting back from %s to %s failed: %v\ninput  %v\nresult %v", to, from, err, obj, out)
	}
}

// TestConvertGeneratedComponents runs the fuzz properties over a fixed set of
// generated Components, so that plain `go test` covers them too.
func TestConvertGeneratedComponents(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	n := 20000
	if testing.Short() {
		n = 2000
	}
	for i := 0; i < n; i++ {
		data := make([]byte, 8+rng.IntN(120))
		for j := range data {
			data[j] = byte(rng.Uint32())
		}
		checkConvert(t, genComponent(data), rng.IntN(len(versions)))
	}
}

// gen turns fuzz bytes into choices.
type gen struct{ b []byte }

func (g *gen) next() int {
	if len(g.b) == 0 {
		return 0
	}
	c := g.b[0]
	g.b = g.b[1:]
	return int(c)
}

// scalar is one of the JSON scalars, including the kinds of values the
// Component fields hold.
func (g *gen) scalar() any {
	switch g.next() % 7 {
	case 0:
		return nil
	case 1:
		return "https://host:" + strconv.Itoa(g.next()) + "/p?q=1"
	case 2:
		return json.Number(strconv.Itoa(g.next() * 37))
	case 3:
		return g.next()%2 == 0
	case 4:
		return ""
	case 5:
		return "/path"
	default:
		return "name"
	}
}

// value is usually the given shape and sometimes a scalar instead.
func (g *gen) value(shape func() any) any {
	if g.next()%5 == 0 {
		return g.scalar()
	}
	return shape()
}

// object sets some of keys, each to shape(key).
func (g *gen) object(keys []string, shape func(key string) any) map[string]any {
	m := map[string]any{}
	for _, k := range keys {
		if g.next()%3 != 0 {
			m[k] = shape(k)
		}
	}
	return m
}

func (g *gen) list(item func() any) []any {
	out := []any{}
	for n := g.next() % 4; n > 0; n-- {
		out = append(out, item())
	}
	return out
}

func (g *gen) scalars(string) any { return g.scalar() }

func (g *gen) specification(fields []string) any {
	return g.value(func() any {
		if g.next()%3 == 0 {
			return g.scalar()
		}
		return g.list(func() any {
			if g.next()%3 == 0 {
				return g.scalar()
			}
			return g.object(append([]string{"url", "version"}, fields...), func(k string) any {
				if k == "gatewayConfiguration" {
					return g.gateway()
				}
				return g.scalar()
			})
		})
	})
}

func (g *gen) gateway() any {
	return g.value(func() any { return g.object(append(gatewayFields, "future"), g.scalars) })
}

func (g *gen) api() any {
	keys := append(append([]string{"name", "id", "required", "apitype", "specification"}, exposedSpecFields...), gatewayFields...)
	return g.value(func() any {
		return g.object(keys, func(k string) any {
			switch k {
			case "specification":
				return g.specification(exposedSpecFields)
			case "gatewayConfiguration":
				return g.gateway()
			}
			return g.scalar()
		})
	})
}

func (g *gen) event() any {
	keys := []string{"name", "href", "description", "specification", "apiType", "implementation", "developerUI", "hub", "callback", "port", "query"}
	return g.value(func() any {
		return g.object(keys, func(k string) any {
			if k == "specification" {
				return g.specification(subscribedSpecFields)
			}
			return g.scalar()
		})
	})
}

// genComponent builds a Component of a random version from fuzz bytes.
func genComponent(data []byte) map[string]any {
	g := &gen{b: data}
	obj := map[string]any{"apiVersion": versions[g.next()%len(versions)], "kind": Kind}
	obj["metadata"] = g.value(func() any {
		return g.object([]string{"name", "annotations"}, func(k string) any {
			if k == "annotations" {
				return g.value(func() any { return g.object([]string{AnnotationConverted, "other"}, g.scalars) })
			}
			return g.scalar()
		})
	})
	specKeys := append([]string{"componentMetadata", "eventNotification", "futureField"}, metadataFields...)
	specKeys = append(specKeys, segments...)
	obj["spec"] = g.value(func() any {
		return g.object(specKeys, func(k string) any {
			switch k {
			case "componentMetadata":
				return g.value(func() any { return g.object(append(metadataFields, "eTom"), g.scalars) })
			case "eventNotification":
				return g.value(func() any {
					return g.object([]string{publishedEvents, subscribedEvents}, func(string) any {
						return g.value(func() any { return g.list(g.event) })
					})
				})
			case "coreFunction", "managementFunction", "securityFunction":
				return g.value(func() any {
					return g.object([]string{exposedAPIs, dependentAPIs, "controllerRole", "canvasSystemRole"}, func(k string) any {
						if k == exposedAPIs || k == dependentAPIs {
							return g.value(func() any { return g.list(g.api) })
						}
						return g.scalar()
					})
				})
			}
			return g.scalar()
		})
	})
	return obj
}

// FuzzConvertStable states the round-trip properties of the version chain
// beyond "converting back succeeds" (FuzzConvertRoundTrip): converting to
// the object's own version is the identity; converting through a version
// in between gives the same content as converting at once; and a round trip
// to another version and back is idempotent (what it loses or fills in once
// it does not change again), so an object the apiserver converts back and
// forth between a client's version and storage settles and stays there.
func FuzzConvertStable(f *testing.F) {
	for _, v := range versions {
		data, err := json.Marshal(fixture(f, v))
		if err != nil {
			f.Fatal(err)
		}
		for target := range versions {
			f.Add(data, uint8(target), uint8(len(versions)-1-target))
		}
	}
	for _, doc := range []string{richV1beta3, richV1beta4} {
		data, err := json.Marshal(fromYAML(f, doc))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data, uint8(0), uint8(3))
		f.Add(data, uint8(3), uint8(1))
	}
	f.Fuzz(func(t *testing.T, doc []byte, target, via uint8) {
		dec := json.NewDecoder(bytes.NewReader(doc))
		dec.UseNumber()
		var obj map[string]any
		if err := dec.Decode(&obj); err != nil {
			obj = genComponent(doc)
		}
		from, _ := obj["apiVersion"].(string)
		to := versions[int(target)%len(versions)]
		y, err := Convert(obj, to)
		if err != nil {
			return
		}
		if same, err := Convert(obj, from); err != nil || !reflect.DeepEqual(same, obj) {
			t.Fatalf("converting to its own version %s changed the object (err %v):\nin  %v\nout %v", from, err, obj, same)
		}
		// Through a version in between (the chain is linear).
		lo, hi := versionIndex(from), versionIndex(to)
		if lo > hi {
			lo, hi = hi, lo
		}
		if mid := versions[lo+int(via)%(hi-lo+1)]; mid != from && mid != to {
			m, err := Convert(obj, mid)
			if err != nil {
				t.Fatalf("%s -> %s succeeds but %s -> %s fails: %v", from, to, from, mid, err)
			}
			y2, err := Convert(m, to)
			if err != nil {
				t.Fatalf("%s -> %s succeeds but through %s fails: %v", from, to, mid, err)
			}
			if !reflect.DeepEqual(withoutAnnotation(t, y), withoutAnnotation(t, y2)) {
				t.Fatalf("%s -> %s differs through %s:\ndirect  %v\nthrough %v", from, to, mid, y, y2)
			}
		}
		// A round trip to and back from the other version, applied twice.
		z := roundTrip(t, y, from, to)
		if z2 := roundTrip(t, z, from, to); !reflect.DeepEqual(withoutAnnotation(t, z2), withoutAnnotation(t, z)) {
			t.Fatalf("a second round trip %s -> %s -> %s changes more:\nonce  %v\ntwice %v", to, from, to, z, z2)
		}
	})
}

// roundTrip converts obj (of version to) to from and back.
func roundTrip(t *testing.T, obj map[string]any, from, to string) map[string]any {
	t.Helper()
	back, err := Convert(obj, from)
	if err != nil {
		t.Fatalf("converting back from %s to %s failed: %v", to, from, err)
	}
	again, err := Convert(back, to)
	if err != nil {
		t.Fatalf("%s -> %s -> %s: the last step failed: %v", to, from, to, err)
	}
	return again
}
