package chart

import (
	"regexp"
	"sort"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	"sigs.k8s.io/yaml"

	"github.com/odaflow/odaflow/tests/helmtemplate"
)

// The chart is rendered and linted by the helm library in odaflow's go.mod
// (helm.sh/helm/v3, the code behind the helm binary's `template` and
// `lint`), so the tests need no helm binary.
const chartDir = "../../charts/odaflow"

// kubeVersion is what the chart is rendered and linted for: the apiserver
// the tests run (tools/envtest, hack/tools.sh K8S_VERSION), not helm's
// client-only default, which is below the chart's kubeVersion.
const kubeVersion = "v1.37.2"

// helmLint runs `helm lint --strict` on the chart with a values file (or
// none) and returns every message at warning level or above: the messages
// --strict fails on.
func helmLint(valuesFile string) ([]string, error) {
	vals, err := helmtemplate.Values(helmtemplate.Options{ValuesFile: valuesFile})
	if err != nil {
		return nil, err
	}
	kv, err := chartutil.ParseKubeVersion(kubeVersion)
	if err != nil {
		return nil, err
	}
	var problems []string
	for _, m := range lint.AllWithKubeVersion(chartDir, vals, "default", kv).Messages {
		if m.Severity >= support.WarningSev {
			problems = append(problems, m.Error())
		}
	}
	return problems, nil
}

// object is one rendered manifest.// object is one rendered manifest.
type object map[string]any

func (o object) kind() string { return str(o, "kind") }
func (o object) name() string { return str(o, "metadata", "name") }
func (o object) namespace() string {
	return str(o, "metadata", "namespace")
}
func (o object) id() string {
	if ns := o.namespace(); ns != "" {
		return o.kind() + " " + ns + "/" + o.name()
	}
	return o.kind() + " " + o.name()
}

func mapOf(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

// render runs helm template with a values file (or none) and extra --set
// flags, and returns the objects it rendered (CRDs included).
func render(t *testing.T, release, namespace, valuesFile string, sets ...string) []object {
	t.Helper()
	out, err := renderRaw(t, release, namespace, valuesFile, sets...)
	if err != nil {
		t.Fatal(err)
	}
	return parse(t, out)
}

// renderRaw renders the chart as `helm template <release> <chart>
// --namespace <namespace> --include-crds --kube-version <kubeVersion>
// [--values <valuesFile>] [--set <set>]...` prints it.
func renderRaw(t *testing.T, release, namespace, valuesFile string, sets ...string) (string, error) {
	t.Helper()
	return helmtemplate.Template(chartDir, helmtemplate.Options{
		Release: release, Namespace: namespace, KubeVersion: kubeVersion,
		ValuesFile: valuesFile, Set: sets, IncludeCRDs: true,
	})
}

func parse(t *testing.T, manifests string) []object {
	t.Helper()
	var objs []object
	for _, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(manifests, -1) {
		if strings.TrimSpace(stripComments(doc)) == "" {
			continue
		}
		var o object
		if err := yaml.Unmarshal([]byte(doc), &o); err != nil {
			t.Fatalf("rendered manifest is not YAML: %v\n%s", err, doc)
		}
		if o == nil {
			continue
		}
		objs = append(objs, o)
	}
	return objs
}

func stripComments(doc string) string {
	var b strings.Builder
	for _, l := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "#") {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

func ids(objs []object, skipCRDs bool) []string {
	var out []string
	for _, o := range objs {
		if skipCRDs && o.kind() == "CustomResourceDefinition" {
			continue
		}
		out = append(out, o.id())
	}
	sort.Strings(out)
	return out
}

func find(t *testing.T, objs []object, kind, name string) object {
	t.Helper()
	for _, o := range objs {
		if o.kind() == kind && o.name() == name {
			return o
		}
	}
	t.Fatalf("no %s %s rendered; have %v", kind, name, ids(objs, true))
	return nil
}

func findAll(objs []object, kind string) []object {
	var out []object
	for _, o := range objs {
		if o.kind() == kind {
			out = append(out, o)
		}
	}
	return out
}

// container returns the only container of a Deployment.
func container(t *testing.T, d object) map[string]any {
	t.Helper()
	cs := list(get(d, "spec", "template", "spec", "containers"))
	if len(cs) != 1 {
		t.Fatalf("%s: want 1 container, got %d", d.id(), len(cs))
	}
	return mapOf(cs[0])
}

// envOf maps a container's env names to their values ("" for valueFrom).
func envOf(c map[string]any) map[string]string {
	env := map[string]string{}
	for _, e := range list(c["env"]) {
		m := mapOf(e)
		v, _ := m["value"].(string)
		env[m["name"].(string)] = v
	}
	return env
}

func argsOf(c map[string]any) []string {
	var out []string
	for _, a := range list(c["args"]) {
		out = append(out, a.(string))
	}
	return out
}
