// Package validate checks Component manifests offline, with no cluster and
// no Temporal. First what the apiserver checks, with its own code on the
// Component CRD odaflow ships (schema.go); then the decisions the workflows
// take on a Component and on each child (oda.DesiredChildren,
// oda.GatewayProblems, gateway.ParseSpec, dependency.RequestOf,
// identity.FromSpec, secrets.ParseSpec), run on the manifest as the
// apiserver would hand it to odaflow (converted to v1 by the conversion
// webhook's own code). It is what `odaflow validate` prints, and it adds no
// rule of its own: a manifest it passes is one the apiserver and those
// decisions accept.
package validate

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"

	utiljson "k8s.io/apimachinery/pkg/util/json"
	yamlutil "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/odaflow/odaflow/api"
	"github.com/odaflow/odaflow/dependency"
	"github.com/odaflow/odaflow/gateway"
	"github.com/odaflow/odaflow/identity"
	"github.com/odaflow/odaflow/oda"
	"github.com/odaflow/odaflow/secrets"
	"github.com/odaflow/odaflow/webhook/conversion"
)

// Severity says what a problem does to the Component.
type Severity string

const (
	// FailsComponent: the Component goes Failed (InvalidSpec), or the
	// apiserver refuses it, and no child is created.
	FailsComponent Severity = "fails the Component"
	// FailsChild: the child goes Failed (InvalidSpec), so the Component
	// never reaches Complete.
	FailsChild Severity = "fails a child"
	// Note: nothing fails; said because it is easy to misread.
	Note Severity = "note"
)

// Problem is one finding, with the path of the field in the manifest.
type Problem struct {
	Severity Severity `json:"severity"`
	// Path is the field's path in the Component (for a child, the
	// declaration that asks for it and the child's own field).
	Path    string `json:"path"`
	Message string `json:"message"`
}

// Fails reports whether the problem keeps the Component from Complete.
func (p Problem) Fails() bool { return p.Severity != Note }

// Report is what odaflow would do with one Component.
type Report struct {
	// Document is the 1-based position of the object in its input.
	Document   int    `json:"document"`
	APIVersion string `json:"apiVersion"`
	Name       string `json:"name"`
	Namespace  string `json:"namespace,omitempty"`
	// Children are the children odaflow would create, in creation order.
	Children []oda.Child `json:"children"`
	Problems []Problem   `json:"problems"`
}

// Failed reports whether any problem keeps the Component from Complete.
func (r Report) Failed() bool {
	for _, p := range r.Problems {
		if p.Fails() {
			return true
		}
	}
	return false
}

// Decode splits multi-document YAML (or JSON) into objects, numbers decoded
// as the apiserver decodes them (int64 for integers), skipping empty
// documents.
func Decode(data []byte) ([]map[string]any, error) {
	r := yamlutil.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var out []map[string]any
	for i := 1; ; i++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		if line, expr, ok := helmTemplate(doc); ok {
			return nil, fmt.Errorf("document %d, line %d holds a Helm template expression %s: validate the rendered chart (helm template <release> <chart> | odaflow validate -f -), not its templates", i, line, expr)
		}
		js, err := yaml.YAMLToJSON(doc)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		if t := bytes.TrimSpace(js); len(t) == 0 || bytes.Equal(t, []byte("null")) {
			continue
		}
		var m map[string]any
		if err := utiljson.Unmarshal(js, &m); err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		if len(m) > 0 {
			out = append(out, m)
		}
	}
}

// templateExpr is a Helm (Go template) action: {{ ... }}, {{- ... -}}.
var templateExpr = regexp.MustCompile(`\{\{-?\s*[^{}]*?-?\}\}`)

// helmTemplate finds the first template action outside comments in a YAML
// document: such a file is a chart's template, which YAML either cannot
// parse or reads as a literal "{{ .Values.x }}". It answers its 1-based
// line and the action.
func helmTemplate(doc []byte) (line int, expr string, ok bool) {
	for i, l := range strings.Split(string(doc), "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "#") {
			continue
		}
		if m := templateExpr.FindString(l); m != "" {
			return i + 1, m, true
		}
	}
	return 0, "", false
}

// IsComponent reports whether obj is an ODA Component of any version.
func IsComponent(obj map[string]any) bool {
	av, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	return kind == oda.KindComponent.Name && strings.HasPrefix(av, oda.Group+"/")
}

// Objects validates every Component among objs; other objects are skipped.
// namespace is used for objects without metadata.namespace; empty means the
// namespace is not known and the checks that need it are not made.
func Objects(objs []map[string]any, namespace string) []Report {
	var out []Report
	for i, obj := range objs {
		if !IsComponent(obj) {
			continue
		}
		r := Component(obj, namespace)
		r.Document = i + 1
		out = append(out, r)
	}
	return out
}

// Component validates one Component object.
func Component(obj map[string]any, namespace string) Report {
	var r Report
	r.APIVersion, _ = obj["apiVersion"].(string)
	meta, _ := obj["metadata"].(map[string]any)
	r.Name, _ = meta["name"].(string)
	r.Namespace, _ = meta["namespace"].(string)
	if r.Namespace == "" {
		r.Namespace = namespace
	}
	fail := func(path, format string, args ...any) {
		r.Problems = append(r.Problems, Problem{Severity: FailsComponent, Path: path, Message: fmt.Sprintf(format, args...)})
	}
	if r.Name == "" {
		fail("metadata.name", "is required")
		return r
	}
	// What the apiserver refuses never reaches odaflow: its reasons are
	// the only ones worth telling.
	refusals, err := apiserverProblems(obj)
	if err != nil {
		fail("", "cannot check the object against the Component CRD: %v", err)
		return r
	}
	if len(refusals) > 0 {
		r.Problems = append(r.Problems, refusals...)
		return r
	}
	v1 := obj
	if r.APIVersion != conversion.V1 {
		// The apiserver stores v1; odaflow reads what the conversion
		// webhook made of the object.
		converted, err := conversion.Convert(obj, conversion.V1)
		if err != nil {
			fail("apiVersion", "the conversion webhook refuses the object, so the apiserver does: %v", err)
			return r
		}
		v1 = converted
	}
	spec, ok := v1["spec"].(map[string]any)
	if !ok {
		fail("spec", "is required")
		return r
	}
	desired, errs := oda.DesiredChildren(r.Name, spec)
	if len(errs) == 0 {
		errs = oda.GatewayProblems(desired)
	}
	for _, e := range errs {
		fail(e.Path, "%s", e.Message)
	}
	if len(errs) > 0 {
		return r
	}
	r.Children = desired.Children
	for _, c := range desired.Children {
		r.Problems = append(r.Problems, childProblems(c, source(spec, c), r.Name, r.Namespace)...)
	}
	return r
}

// source is the path of the declaration in the (v1) spec that asks for an
// API child, "" for the others.
func source(spec map[string]any, c oda.Child) string {
	key := map[string]string{oda.KindExposedAPI.Name: "exposedAPIs", oda.KindDependentAPI.Name: "dependentAPIs"}[c.Kind]
	if key == "" {
		return ""
	}
	seg, _ := spec[string(c.Segment)].(map[string]any)
	list, _ := seg[key].([]any)
	for i, item := range list {
		if m, ok := item.(map[string]any); ok && m["name"] == c.Spec["name"] {
			return fmt.Sprintf("spec.%s.%s[%d]", c.Segment, key, i)
		}
	}
	return ""
}

// childProblems runs the decision the child's own workflow takes first; at
// is the path of its declaration in the Component.
func childProblems(c oda.Child, at, component, namespace string) []Problem {
	what := c.Kind + " " + c.Name
	if at == "" {
		at = what
	} else {
		at += " (" + what + ")"
	}
	var out []Problem
	bad := func(format string, args ...any) {
		out = append(out, Problem{Severity: FailsChild, Path: at, Message: fmt.Sprintf(format, args...)})
	}
	switch c.Kind {
	case oda.KindExposedAPI.Name:
		if _, err := gateway.ParseSpec(c.Spec); err != nil {
			var fes api.FieldErrors
			if errors.As(err, &fes) {
				for _, fe := range fes {
					bad("%s: %s", fe.Path, fe.Message)
				}
			} else {
				bad("%v", err)
			}
		}
	case oda.KindDependentAPI.Name:
		if _, ok := dependency.RequestOf(namespace, component, c.Spec); !ok {
			bad("spec.specification.url is required: it is what a providing ExposedAPI is matched on")
		}
	case oda.KindIdentityConfig.Name:
		if _, err := identity.FromSpec(c.Name, c.Spec); err != nil {
			bad("%v", err)
		}
	case oda.KindSecretsManagement.Name:
		s, err := secrets.ParseSpec(c.Spec)
		switch {
		case err != nil:
			bad("%v", err)
		case namespace == "":
			out = append(out, Problem{Severity: Note, Path: at, Message: fmt.Sprintf(
				"spec.podSelector.namespace %q is not checked: the namespace is not known (give one)", s.PodSelector.Namespace)})
		case !s.PodSelector.SelectsNamespace(namespace):
			bad("spec.podSelector.namespace %q does not match the namespace %s: only pods in its own namespace can be given its secrets", s.PodSelector.Namespace, namespace)
		}
	}
	return out
}
