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
	istio, err := moduleDir(root, "istio.io/api")
	if err != nil {
		return err
	}
	if err := copyFile(filepath.Join(istio, "kubernetes", "customresourcedefinitions.gen.yaml"), filepath.Join(dir, "istio.yaml")); err != nil {
		return err
	}
	gw, err := moduleDir(root, "sigs.k8s.io/gateway-api")
	if err != nil {
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

// moduleDir is where the module cache holds module, as odaflow's go.mod
// (in root) requires it.
func moduleDir(root, module string) (string, error) {
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", module)
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("locate module %s: %w", module, err)
	}
	dir := strings.TrimSpace(string(out))
	if dir == "" {
		return "", fmt.Errorf("module %s is not downloaded (hack/tools.sh downloads it)", module)
	}
	return dir, nil
}

func copyFile(from, to string) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, b, 0o600)
}
