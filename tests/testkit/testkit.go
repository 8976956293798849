// Package testkit renders the ODA Canvas test kit's Component charts
// (testkit/ in the folder CanvasDir names) with their default
// values through Helm's own chart loader and template engine (tests/helmtemplate), so tests run
// odaflow on exactly what a Canvas user installs. Every chart folder is
// found by listing the directory: a chart added there is tested without code.
package testkit

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/odaflow/odaflow/internal/localstack"
	"github.com/odaflow/odaflow/tests/helmtemplate"
	"github.com/odaflow/odaflow/validate"
)

// CanvasDirEnv names the folder that holds the ODA Canvas's files as data:
// testkit/ (the Component charts of the Canvas repository's
// feature-definition-and-test-kit/testData), crds/ and examples/.
// docs/testing.md says how to make one.
const CanvasDirEnv = "ODAFLOW_CANVAS_DIR"

// defaultCanvasDir is where CanvasDirEnv points when unset, relative to the
// repository root.
const defaultCanvasDir = "../shared/oda-canvas"

// Namespace and Release are what the Canvas's own test suite installs the
// charts with (the -sman chart's podSelector names namespace components).
const (
	Namespace = "components"
	Release   = "r1"
)

// CRDRefused lists the charts whose Component the Canvas's Component CRD
// itself refuses, with the reason: the apiserver never stores them, so
// odaflow never sees them (the integration test asserts the refusal).
var CRDRefused = map[string]string{
	"productinventory-v1": "spec.managementFunction is a list ([]); the Component CRD requires an object",
}

// Chart is one test-kit chart folder.
type Chart struct {
	// Name is the folder name (productcatalog-v1).
	Name string
	// Dir is the folder's path.
	Dir string
}

// Rendered is a chart rendered with its default values.
type Rendered struct {
	Chart Chart
	// Manifest is the multi-document YAML helm template would print.
	Manifest []byte
	// Objects are the manifest's documents, in manifest order.
	Objects []*unstructured.Unstructured
}

// Components returns the rendered Component objects.
func (r Rendered) Components() []*unstructured.Unstructured { return r.ofKind("Component") }

// Services returns the rendered Services.
func (r Rendered) Services() []*unstructured.Unstructured { return r.ofKind("Service") }

func (r Rendered) ofKind(kind string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range r.Objects {
		if o.GetKind() == kind {
			out = append(out, o)
		}
	}
	return out
}

// Dir returns the test kit's folder, testkit/ in $ODAFLOW_CANVAS_DIR
// (default ../shared/oda-canvas from the repository root). A missing folder
// skips the test with one line saying how to provide it, except with CI
// set, where it fails: a skip must never count as a pass there.
func Dir(t testing.TB) string {
	t.Helper()
	canvas := os.Getenv(CanvasDirEnv)
	if canvas == "" {
		root, err := localstack.RepoRoot()
		if err != nil {
			t.Fatalf("repository root: %v", err)
		}
		canvas = filepath.Join(root, defaultCanvasDir)
	}
	dir := filepath.Join(canvas, "testkit")
	if _, err := os.Stat(dir); err != nil {
		msg := fmt.Sprintf("the ODA Canvas test kit is not at %s: set %s to a folder whose testkit/ holds the Canvas repository's feature-definition-and-test-kit/testData charts (docs/testing.md)", dir, CanvasDirEnv)
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip("SKIPPED: " + msg)
	}
	return dir
}

// Charts lists every chart folder (one with a Chart.yaml) of the test kit,
// by name.
func Charts(t testing.TB) []Chart {
	t.Helper()
	dir := Dir(t)
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("listing the test kit: %v", err)
	}
	var out []Chart
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		if _, err := os.Stat(filepath.Join(p, "Chart.yaml")); err == nil {
			out = append(out, Chart{Name: e.Name(), Dir: p})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	if len(out) == 0 {
		t.Fatalf("the test kit at %s holds no chart", dir)
	}
	return out
}

// Render renders a chart with its default values as `helm template
// <release> <dir> --namespace <namespace>` would.
func Render(c Chart, release, namespace string) (Rendered, error) {
	manifest, err := helmtemplate.Template(c.Dir, helmtemplate.Options{Release: release, Namespace: namespace})
	if err != nil {
		return Rendered{}, fmt.Errorf("test-kit chart %s: %w", c.Name, err)
	}
	docs, err := validate.Decode([]byte(manifest))
	if err != nil {
		return Rendered{}, fmt.Errorf("chart %s: %w", c.Name, err)
	}
	objs := make([]*unstructured.Unstructured, len(docs))
	for i, d := range docs {
		objs[i] = &unstructured.Unstructured{Object: d}
		if objs[i].GetNamespace() == "" {
			objs[i].SetNamespace(namespace)
		}
	}
	return Rendered{Chart: c, Manifest: []byte(manifest), Objects: objs}, nil
}

// MustRender renders a chart or fails the test.
func MustRender(t testing.TB, c Chart, release, namespace string) Rendered {
	t.Helper()
	r, err := Render(c, release, namespace)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// Find returns the chart named name, failing the test when the test kit has
// none (the upgrade tests name the charts they upgrade between).
func Find(t testing.TB, name string) Chart {
	t.Helper()
	for _, c := range Charts(t) {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("the test kit has no chart %s", name)
	return Chart{}
}
