package chart

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/odaflow/odaflow/internal/localstack"
)

// helmVersion is the helm the chart is tested with (tools/helm/go.mod).
const helmVersion = "v3.22.0"

const chartDir = "../../charts/odaflow"

// kubeVersion is passed to helm lint and template: helm built from the
// module proxy (no release ldflags) assumes Kubernetes v1.20, below the
// chart's kubeVersion; the tests render for the apiserver they run
// (tools/envtest, hack/tools.sh K8S_VERSION).
const kubeVersion = "v1.37.2"

var (
	helmOnce sync.Once
	helmPath string
	helmErr  error
)

// helm finds the helm binary built by `hack/tools.sh helm` (bin/helm/helm),
// building it when missing. A missing helm fails the test: skipping needs
// ODAFLOW_SKIP_HELM and is refused under CI.
func helm(t *testing.T) string {
	t.Helper()
	helmOnce.Do(func() { helmPath, helmErr = findHelm() })
	if helmErr != nil {
		if os.Getenv("ODAFLOW_SKIP_HELM") != "" && os.Getenv("CI") == "" {
			t.Skipf("SKIPPED on request (ODAFLOW_SKIP_HELM): %v", helmErr)
		}
		t.Fatalf("helm is missing: %v", helmErr)
	}
	return helmPath
}

func findHelm() (string, error) {
	if p := os.Getenv("ODAFLOW_HELM"); p != "" {
		return p, checkHelmVersion(p)
	}
	root, err := localstack.RepoRoot()
	if err != nil {
		return "", err
	}
	p := filepath.Join(root, "bin", "helm", "helm")
	if _, err := os.Stat(p); err != nil {
		cmd := exec.Command(filepath.Join(root, "hack", "tools.sh"), "helm")
		cmd.Dir = root
		cmd.Stderr = os.Stderr
		if _, err := cmd.Output(); err != nil {
			return "", fmt.Errorf("hack/tools.sh helm: %w", err)
		}
	}
	return p, checkHelmVersion(p)
}

func checkHelmVersion(p string) error {
	out, err := exec.Command(p, "version", "--template", "{{.Version}}").Output()
	if err != nil {
		return fmt.Errorf("%s version: %w", p, err)
	}
	if got := strings.TrimSpace(string(out)); got != helmVersion {
		return fmt.Errorf("%s is helm %s, the chart is tested with %s", p, got, helmVersion)
	}
	return nil
}

func runHelm(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(helm(t), args...)
	// No user's helm state (repositories, plugins) leaks into the test.
	home := t.TempDir()
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+home, "HELM_CONFIG_HOME="+home, "HELM_DATA_HOME="+home)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err != nil {
		return stdout.String(), fmt.Errorf("helm %s: %w\n%s%s", strings.Join(args, " "), err, stderr.String(), stdout.String())
	}
	return stdout.String(), nil
}

// object is one rendered manifest.
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

func renderRaw(t *testing.T, release, namespace, valuesFile string, sets ...string) (string, error) {
	t.Helper()
	args := []string{"template", release, chartDir, "--namespace", namespace, "--include-crds", "--kube-version", kubeVersion}
	if valuesFile != "" {
		args = append(args, "--values", valuesFile)
	}
	for _, s := range sets {
		args = append(args, "--set", s)
	}
	return runHelm(t, args...)
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
