package validate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDecodeNumbersAsTheAPIServer(t *testing.T) {
	objs, err := Decode([]byte("---\n# a comment only\n---\na: 1\nb: 1.5\n---\n\n---\n{\"c\": 2}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 2 {
		t.Fatalf("%d objects, want 2 (empty documents skipped): %v", len(objs), objs)
	}
	if _, ok := objs[0]["a"].(int64); !ok {
		t.Errorf("a = %T, want int64", objs[0]["a"])
	}
	if _, ok := objs[0]["b"].(float64); !ok {
		t.Errorf("b = %T, want float64", objs[0]["b"])
	}
}

const sman = `apiVersion: oda.tmforum.org/v1
kind: Component
metadata: {name: r1-pc}
spec:
  securityFunction:
    canvasSystemRole: Admin
    secretsManagement:
      type: sideCar
      podSelector: {namespace: components, name: "r1-*"}
`

func TestSecretsManagementNamespace(t *testing.T) {
	objs, err := Decode([]byte(sman))
	if err != nil {
		t.Fatal(err)
	}
	for ns, want := range map[string]string{
		"components": "",
		"other":      `fails a child: SecretsManagement r1-pc: spec.podSelector.namespace "components" does not match the namespace other`,
		"":           "note: SecretsManagement r1-pc: spec.podSelector.namespace \"components\" is not checked",
	} {
		reps := Objects(objs, ns)
		if len(reps) != 1 {
			t.Fatalf("%d reports, want 1", len(reps))
		}
		var got []string
		for _, p := range reps[0].Problems {
			got = append(got, string(p.Severity)+": "+p.Path+": "+p.Message)
		}
		all := strings.Join(got, "\n")
		if want == "" && len(got) > 0 || want != "" && !strings.Contains(all, want) {
			t.Errorf("namespace %q: problems %q, want %q", ns, all, want)
		}
		if failed := reps[0].Failed(); failed != (ns == "other") {
			t.Errorf("namespace %q: Failed() = %v", ns, failed)
		}
	}
}

// TestSchemaBeforeConversion: the apiserver checks an object against the
// schema of the version it is sent in before anything converts it, so a
// v1beta3 specification that is no list is refused for its type.
func TestSchemaBeforeConversion(t *testing.T) {
	objs, err := Decode([]byte("apiVersion: oda.tmforum.org/v1beta3\nkind: Component\nmetadata: {name: x}\nspec:\n  coreFunction:\n    exposedAPIs:\n    - name: a\n      specification: 5\n"))
	if err != nil {
		t.Fatal(err)
	}
	rep := Component(objs[0], "")
	if !rep.Failed() || len(rep.Problems) == 0 || rep.Problems[0].Path != "spec.coreFunction.exposedAPIs[0].specification" ||
		!strings.Contains(rep.Problems[0].Message, "must be of type array") {
		t.Errorf("problems %+v, want the schema's refusal of the specification's type", rep.Problems)
	}
}

// TestRefusedCorpus: each manifest in testdata/refused is one the apiserver
// refuses (its first line: "# refused: <field path>: <part of the
// message>"), and validate refuses it at that path, saying why.
func TestRefusedCorpus(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "refused", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no corpus: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			first, _, _ := strings.Cut(string(data), "\n")
			path, want, ok := strings.Cut(strings.TrimPrefix(first, "# refused: "), ": ")
			if !ok {
				t.Fatalf("first line %q is not # refused: <path>: <message>", first)
			}
			objs, err := Decode(data)
			if err != nil {
				t.Fatal(err)
			}
			rep := Component(objs[0], "components")
			if !rep.Failed() {
				t.Fatalf("validate passes it; the apiserver refuses it at %s (%s)", path, want)
			}
			var got []string
			for _, p := range rep.Problems {
				if p.Path == path && strings.Contains(p.Message, want) && strings.HasPrefix(p.Message, "the apiserver refuses it: ") {
					return
				}
				got = append(got, p.Path+": "+p.Message)
			}
			t.Errorf("problems\n  %s\nwant one at %s saying %q", strings.Join(got, "\n  "), path, want)
		})
	}
}

// TestUnrenderedTemplate: a chart's template, not its rendering, is named
// as such with the command that renders it, whether YAML can parse it or
// not; template syntax in a comment is no template.
func TestUnrenderedTemplate(t *testing.T) {
	for name, tc := range map[string]struct {
		in, want string
	}{
		"unparsable": {"apiVersion: oda.tmforum.org/v1\nkind: Component\nmetadata:\n  name: {{ .Release.Name }}-pc\n", `document 1, line 4 holds a Helm template expression {{ .Release.Name }}`},
		"quoted":     {"# {{ a comment }}\n---\nkind: Component\nspec:\n  x: \"{{- .Values.x -}}\"\n", `document 2, line 3 holds a Helm template expression {{- .Values.x -}}`},
	} {
		_, err := Decode([]byte(tc.in))
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "helm template <release> <chart> | odaflow validate -f -") {
			t.Errorf("%s: Decode error %v, want %q and how to render", name, err, tc.want)
		}
	}
	if _, err := Decode([]byte("# helm: {{ .Values.x }} goes here\nkind: Component\n")); err != nil {
		t.Errorf("a comment with template syntax: %v", err)
	}
}

// TestNullWhereTheSchemaAllowsNone: the apiserver drops a null of a
// non-nullable field (a chart's empty value, id: ) instead of refusing it.
func TestNullWhereTheSchemaAllowsNone(t *testing.T) {
	objs, err := Decode([]byte("apiVersion: oda.tmforum.org/v1\nkind: Component\nmetadata: {name: r1-null}\nspec:\n  componentMetadata:\n    id:\n    name: x\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range Component(objs[0], "components").Problems {
		if strings.HasPrefix(p.Message, "the apiserver refuses it") {
			t.Errorf("%s: %s; the apiserver drops the null", p.Path, p.Message)
		}
	}
}
