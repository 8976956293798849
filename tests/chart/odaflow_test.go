package chart

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/odaflow/odaflow/internal/localstack"
)

// TestMain stops the apiserver and removes the odaflow binary the tests
// started or built, whichever tests ran.
func TestMain(m *testing.M) {
	code := m.Run()
	if kubeStack != nil {
		_ = kubeStack.Stop()
	}
	if binDir != "" {
		_ = os.RemoveAll(binDir)
	}
	os.Exit(code)
}

var (
	binOnce sync.Once
	binDir  string
	binPath string
	binErr  error
)

// odaflowBinary builds cmd/odaflow once for the tests that ask the real
// binary which subcommands and flags exist.
func odaflowBinary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		root, err := localstack.RepoRoot()
		if err != nil {
			binErr = err
			return
		}
		if binDir, binErr = os.MkdirTemp("", "odaflow-chart-test-"); binErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "odaflow")
		ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "go", "build", "-o", binPath, "./cmd/odaflow")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			binErr = fmt.Errorf("go build ./cmd/odaflow: %w\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

// usage is what `odaflow <cmd> -h` says a subcommand accepts.
type usage struct {
	flags map[string]bool // without dashes
	envs  map[string]bool // ODAFLOW_*, POD_*, KUBECONFIG named as "(env X)"
}

var (
	usageMu    sync.Mutex
	usageCache = map[string]usage{}
	flagLine   = regexp.MustCompile(`(?m)^\s+-([a-z0-9-]+)`)
	envRef     = regexp.MustCompile(`env ([A-Z][A-Z0-9_]+)`)
)

// usageOf runs `odaflow <cmd> -h`; a subcommand the binary does not know
// fails the test (it prints the top-level usage and exits 2 without flags).
func usageOf(t *testing.T, cmd string) usage {
	t.Helper()
	usageMu.Lock()
	defer usageMu.Unlock()
	if u, ok := usageCache[cmd]; ok {
		return u
	}
	out, _ := exec.Command(odaflowBinary(t), cmd, "-h").CombinedOutput()
	if strings.Contains(string(out), "unknown command") {
		t.Fatalf("odaflow has no subcommand %q:\n%s", cmd, out)
	}
	u := usage{flags: map[string]bool{}, envs: map[string]bool{}}
	for _, m := range flagLine.FindAllStringSubmatch(string(out), -1) {
		u.flags[m[1]] = true
	}
	for _, m := range envRef.FindAllStringSubmatch(string(out), -1) {
		u.envs[m[1]] = true
	}
	if len(u.flags) == 0 {
		t.Fatalf("odaflow %s -h listed no flags:\n%s", cmd, out)
	}
	usageCache[cmd] = u
	return u
}

// checkArgs fails for any --flag the subcommand does not define.
func checkArgs(t *testing.T, where, cmd string, args []string) {
	t.Helper()
	u := usageOf(t, cmd)
	for _, a := range args {
		if !strings.HasPrefix(a, "-") {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !u.flags[name] {
			t.Errorf("%s: odaflow %s has no flag %q", where, cmd, a)
		}
	}
}
