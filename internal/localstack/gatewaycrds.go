package localstack

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// GatewayCRDs copies the gateways' CRDs into dir: Istio's and the Gateway
// API's real ones from their Go modules, and minimal CRDs of the real
// group/version/kind for Kong, APISIX and the Prometheus operator. The
// modules must be in the module cache (odaflow's go.mod requires them;
// hack/tools.sh downloads them).
func GatewayCRDs(dir string) error {
	root, err := RepoRoot()
	if err != nil {
		return err
	}
	// One `go list` for both modules: each call costs the go command's
	// start-up, which `odaflow dev` waits for.
	dirs, err := moduleDirs(root, "istio.io/api", "sigs.k8s.io/gateway-api")
	if err != nil {
		return err
	}
	istio, gw := dirs["istio.io/api"], dirs["sigs.k8s.io/gateway-api"]
	if err := copyFile(filepath.Join(istio, "kubernetes", "customresourcedefinitions.gen.yaml"), filepath.Join(dir, "istio.yaml")); err != nil {
		return err
	}
	files, _ := filepath.Glob(filepath.Join(gw, "config", "crd", "standard", "gateway.networking.k8s.io_*.yaml"))
	for _, f := range files {
		if strings.Contains(f, "_vap_") {
			continue // a ValidatingAdmissionPolicy, not a CRD
		}
		if err := copyFile(f, filepath.Join(dir, "gatewayapi-"+filepath.Base(f))); err != nil {
			return err
		}
	}
	minimal, _ := filepath.Glob(filepath.Join(root, "gateway", "testdata", "crds", "*.yaml"))
	for _, f := range minimal {
		switch filepath.Base(f) {
		case "virtualservices.yaml", "httproutes.yaml", "referencegrants.yaml":
			continue // the real CRDs above serve these kinds
		}
		if err := copyFile(f, filepath.Join(dir, "minimal-"+filepath.Base(f))); err != nil {
			return err
		}
	}
	return nil
}

// moduleDirs is where the module cache holds each module, as odaflow's
// go.mod (in root) requires it.
func moduleDirs(root string, modules ...string) (map[string]string, error) {
	cmd := exec.Command("go", append([]string{"list", "-m", "-f", "{{.Path}} {{.Dir}}"}, modules...)...)
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("locate modules %s: %w", strings.Join(modules, ", "), err)
	}
	dirs := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if path, dir, ok := strings.Cut(strings.TrimSpace(line), " "); ok && dir != "" {
			dirs[path] = dir
		}
	}
	for _, m := range modules {
		if dirs[m] == "" {
			return nil, fmt.Errorf("module %s is not downloaded (hack/tools.sh downloads it)", m)
		}
	}
	return dirs, nil
}

func copyFile(from, to string) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, b, 0o600)
}
