package chart

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/odaflow/odaflow/internal/localstack"
)

// TestOneVersionEverywhere: the release lives in the VERSION file; the
// binary built from the tree prints it (`odaflow version`), the chart names
// it as appVersion (and its own version without the v), and the CHANGELOG's
// latest release is it. make image and make image-push tag the image with
// the same file (Makefile VERSION := $(shell cat VERSION)).
func TestOneVersionEverywhere(t *testing.T) {
	root, err := localstack.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(root, "VERSION"))
	if err != nil {
		t.Fatal(err)
	}
	version := strings.TrimSpace(string(raw))
	if !regexp.MustCompile(`^v\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$`).MatchString(version) {
		t.Fatalf("VERSION %q is not v<semver>", version)
	}

	bin := filepath.Join(t.TempDir(), "odaflow")
	build := exec.Command("go", "build", "-o", bin, "./cmd/odaflow")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatalf("odaflow version: %v", err)
	}
	if got := strings.TrimSpace(string(out)); got != version {
		t.Errorf("odaflow version prints %q, VERSION says %q", got, version)
	}

	chartRaw, err := os.ReadFile(filepath.Join(root, "charts", "odaflow", "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var chart struct {
		Version    string `json:"version"`
		AppVersion string `json:"appVersion"`
	}
	if err := yaml.Unmarshal(chartRaw, &chart); err != nil {
		t.Fatal(err)
	}
	if chart.AppVersion != version || chart.Version != strings.TrimPrefix(version, "v") {
		t.Errorf("Chart.yaml has version %q, appVersion %q; VERSION is %q", chart.Version, chart.AppVersion, version)
	}

	changelog, err := os.ReadFile(filepath.Join(root, "CHANGELOG.md"))
	if err != nil {
		t.Fatal(err)
	}
	latest := regexp.MustCompile(`(?m)^## \[(\d[^\]]*)\]`).FindSubmatch(changelog)
	if latest == nil || "v"+string(latest[1]) != version {
		t.Errorf("the CHANGELOG's latest release is %q, VERSION is %q", latest, version)
	}

	makefile, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^VERSION\s*:=\s*\$\(shell cat VERSION\)$`).Match(makefile) {
		t.Error("the Makefile does not take VERSION from the VERSION file: make image would tag another version")
	}
}
