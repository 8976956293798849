package validate

import (
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

func TestConversionRefusal(t *testing.T) {
	objs, err := Decode([]byte("apiVersion: oda.tmforum.org/v1beta3\nkind: Component\nmetadata: {name: x}\nspec:\n  coreFunction:\n    exposedAPIs:\n    - name: a\n      specification: 5\n"))
	if err != nil {
		t.Fatal(err)
	}
	rep := Component(objs[0], "")
	if !rep.Failed() || len(rep.Problems) == 0 || !strings.Contains(rep.Problems[0].Message, "conversion webhook refuses") {
		t.Errorf("problems %+v, want the conversion's refusal", rep.Problems)
	}
}
