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
// modules must be in the module cache (odaflow's go.mod requires them).
func GatewayCRDs(dir string) error {
	istio, err := moduleDir("istio.io/api")
	if err != nil {
		return err
	}
	if err := copyFile(filepath.Join(istio, "kubernetes", "customresourcedefinitions.gen.yaml"), filepath.Join(dir, "istio.yaml")); err != nil {
		return err
	}
	gw, err := moduleDir("sigs.k8s.io/gateway-api")
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
	root, err := RepoRoot()
	if err != nil {
		return err
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

func moduleDir(module string) (string, error) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", module).Output()
	if err != nil {
		return "", fmt.Errorf("locate module %s: %w", module, err)
	}
	dir := strings.TrimSpace(string(out))
	if dir == "" {
		return "", fmt.Errorf("module %s is not downloaded", module)
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
