package localstack

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// ToolNames are the binaries a tools folder must contain.
var ToolNames = []string{"etcd", "kube-apiserver", "kube-controller-manager", "temporal"}

// ModulePath identifies the repository root (the go.mod with this module).
const ModulePath = "github.com/odaflow/odaflow"

// FindTools resolves the tools folder: $ODAFLOW_TOOLS_DIR, else
// <repo root>/bin/tools when complete, else the output of hack/tools.sh,
// which builds whatever is missing (a cold build takes 20-30 minutes; its
// progress goes to this process's stderr).
func FindTools() (string, error) {
	if dir, err := LookupTools(); err == nil {
		return dir, nil
	} else if os.Getenv("ODAFLOW_TOOLS_DIR") != "" {
		return "", err
	}
	root, err := RepoRoot()
	if err != nil {
		return "", fmt.Errorf("localstack: no tools: set ODAFLOW_TOOLS_DIR or run inside the odaflow repository: %w", err)
	}
	cmd := exec.Command(filepath.Join(root, "hack", "tools.sh"))
	cmd.Dir = root
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("localstack: hack/tools.sh: %w", err)
	}
	dir := lastLine(out)
	if err := checkTools(dir); err != nil {
		return "", fmt.Errorf("localstack: hack/tools.sh printed %q: %w", dir, err)
	}
	return dir, nil
}

// LookupTools is FindTools without building: $ODAFLOW_TOOLS_DIR (which must
// be complete), else <repo root>/bin/tools, else the cache folder that
// `hack/tools.sh --path` names, if it holds every binary.
func LookupTools() (string, error) {
	if dir := os.Getenv("ODAFLOW_TOOLS_DIR"); dir != "" {
		if err := checkTools(dir); err != nil {
			return "", fmt.Errorf("localstack: ODAFLOW_TOOLS_DIR=%s: %w", dir, err)
		}
		return filepath.Abs(dir)
	}
	root, err := RepoRoot()
	if err != nil {
		return "", fmt.Errorf("localstack: tools not found: set ODAFLOW_TOOLS_DIR or run inside the odaflow repository: %w", err)
	}
	var errs []error
	dir := filepath.Join(root, "bin", "tools")
	if err := checkTools(dir); err == nil {
		return dir, nil
	} else {
		errs = append(errs, fmt.Errorf("%s: %w", dir, err))
	}
	out, err := exec.Command(filepath.Join(root, "hack", "tools.sh"), "--path").Output()
	if err == nil {
		dir := lastLine(out)
		if err := checkTools(dir); err == nil {
			return dir, nil
		} else {
			errs = append(errs, fmt.Errorf("%s: %w", dir, err))
		}
	} else {
		errs = append(errs, fmt.Errorf("hack/tools.sh --path: %w", err))
	}
	return "", fmt.Errorf("localstack: tools not built (run hack/tools.sh): %w", errors.Join(errs...))
}

// RepoRoot walks up from the working directory to the go.mod of ModulePath.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if data, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && modulePathOf(data) == ModulePath {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod of module %s above the working directory", ModulePath)
		}
		dir = parent
	}
}

func modulePathOf(gomod []byte) string {
	sc := bufio.NewScanner(bytes.NewReader(gomod))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 && f[0] == "module" {
			return strings.Trim(f[1], `"`)
		}
	}
	return ""
}

func checkTools(dir string) error {
	var missing []string
	for _, n := range ToolNames {
		if !isExecutable(filepath.Join(dir, n)) {
			missing = append(missing, n)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("missing %s", strings.Join(missing, ", "))
	}
	return nil
}

func lastLine(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

func isExecutable(path string) bool {
	st, err := os.Stat(path)
	return err == nil && !st.IsDir() && st.Mode()&0o111 != 0
}
