// Package compose loads docker-compose.yaml with compose-go (the library
// Docker Compose itself uses) and checks the local stack: the services, their
// published ports, health checks and start order, and that odaflow's worker
// and watcher are given the settings the real binary reads. No container
// engine runs here; this is the check that the file is what it claims.
//
// It is a module of its own so that compose-go stays out of odaflow's go.mod:
//
//	cd tests/compose && go test ./...
package compose

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"
)

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "docker-compose.yaml")); err != nil {
		t.Fatal(err)
	}
	return root
}

func load(t *testing.T, root string) *types.Project {
	t.Helper()
	opts, err := cli.NewProjectOptions([]string{filepath.Join(root, "docker-compose.yaml")},
		cli.WithWorkingDirectory(root),
		// A fixed environment: the host's KUBECONFIG or ODAFLOW_UID must not
		// change what is checked.
		cli.WithEnv([]string{"KUBECONFIG=/home/dev/.kube/config"}),
		cli.WithInterpolation(true),
		cli.WithResolvedPaths(true),
	)
	if err != nil {
		t.Fatal(err)
	}
	p, err := cli.ProjectFromOptions(context.Background(), opts)
	if err != nil {
		t.Fatalf("docker-compose.yaml does not load: %v", err)
	}
	return p
}

func service(t *testing.T, p *types.Project, name string) types.ServiceConfig {
	t.Helper()
	s, err := p.GetService(name)
	if err != nil {
		t.Fatalf("no service %s: %v", name, err)
	}
	return s
}

func TestComposeStack(t *testing.T) {
	root := repoRoot(t)
	p := load(t, root)

	want := []string{"keycloak", "kong", "postgresql", "temporal", "temporal-ui", "vault", "watcher", "worker"}
	if got := p.ServiceNames(); !slices.Equal(sorted(got), want) {
		t.Fatalf("services %v, want %v", sorted(got), want)
	}

	// Published ports: loopback only, at the addresses the README and the
	// tests use.
	ports := map[string]map[uint32]string{
		"temporal":    {7233: "7233"},
		"temporal-ui": {8080: "8233"},
		"keycloak":    {8083: "8083"},
		"vault":       {8200: "8200"},
		"kong":        {8000: "8000", 8001: "8001"},
		"worker":      {8080: "8080"},
		"watcher":     {8080: "8081"},
	}
	for name, want := range ports {
		s := service(t, p, name)
		got := map[uint32]string{}
		for _, pc := range s.Ports {
			if pc.HostIP != "127.0.0.1" {
				t.Errorf("%s publishes %d on %q; only 127.0.0.1", name, pc.Target, pc.HostIP)
			}
			got[pc.Target] = pc.Published
		}
		for target, pub := range want {
			if got[target] != pub {
				t.Errorf("%s: container port %d published on %q, want %s", name, target, got[target], pub)
			}
		}
	}
	if len(service(t, p, "postgresql").Ports) != 0 {
		t.Error("postgresql publishes a port; only Temporal needs it")
	}

	// Every service has a health check, so depends_on can wait for it.
	for _, name := range want {
		s := service(t, p, name)
		if s.HealthCheck == nil || s.HealthCheck.Disable || len(s.HealthCheck.Test) < 2 {
			t.Errorf("%s has no health check", name)
		}
	}
	deps := map[string][]string{
		"temporal":    {"postgresql"},
		"temporal-ui": {"temporal"},
		"worker":      {"temporal", "keycloak", "vault", "kong"},
		"watcher":     {"temporal", "worker"},
	}
	for name, on := range deps {
		s := service(t, p, name)
		for _, d := range on {
			if dep, ok := s.DependsOn[d]; !ok || dep.Condition != types.ServiceConditionHealthy {
				t.Errorf("%s must wait for %s to be healthy (depends_on %v)", name, d, s.DependsOn)
			}
		}
	}

	// Temporal on PostgreSQL; Keycloak imports the odari realm with the
	// canvassystem client; Vault in dev mode; Kong DB-less with its config.
	if env := service(t, p, "temporal").Environment; deref(env["DB"]) != "postgres12" || deref(env["POSTGRES_SEEDS"]) != "postgresql" {
		t.Errorf("temporal is not on the postgresql service: %v", env)
	}
	kc := service(t, p, "keycloak")
	if !slices.Contains(kc.Command, "--import-realm") || !slices.Contains(kc.Command, "--http-relative-path=/auth") {
		t.Errorf("keycloak command %v", kc.Command)
	}
	realm := mountedFile(t, kc, "/opt/keycloak/data/import", "odari-realm.json")
	for _, s := range []string{`"realm": "odari"`, `"clientId": "canvassystem"`} {
		if !strings.Contains(realm, s) {
			t.Errorf("the imported realm lacks %s", s)
		}
	}
	if v := service(t, p, "vault"); !slices.Contains(v.Command, "-dev") {
		t.Errorf("vault command %v: want dev mode", v.Command)
	}
	kong := service(t, p, "kong")
	if deref(kong.Environment["KONG_DATABASE"]) != "off" {
		t.Errorf("kong KONG_DATABASE %q", deref(kong.Environment["KONG_DATABASE"]))
	}
	mountedFile(t, kong, "/kong/declarative", "kong.yaml")
}

// TestComposeOdaflow checks the worker and watcher against the real binary:
// the subcommands and flags exist, each ODAFLOW_* variable is one it reads,
// the addresses point at the services of this file, and the containers run
// hardened with the host kubeconfig mounted.
func TestComposeOdaflow(t *testing.T) {
	root := repoRoot(t)
	p := load(t, root)
	bin := buildOdaflow(t, root)

	for _, name := range []string{"worker", "watcher"} {
		s := service(t, p, name)
		if len(s.Command) == 0 {
			t.Fatalf("%s has no command", name)
		}
		sub := s.Command[0]
		if sub != name {
			t.Errorf("service %s runs odaflow %s", name, sub)
		}
		u := usageOf(t, bin, sub)
		for _, a := range s.Command[1:] {
			flag, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
			if !u.flags[flag] {
				t.Errorf("%s: odaflow %s has no flag %s", name, sub, a)
			}
		}
		for k := range s.Environment {
			if k == "KUBECONFIG" {
				continue
			}
			if !u.envs[k] {
				t.Errorf("%s: odaflow %s reads no %s", name, sub, k)
			}
		}
		env := s.Environment
		if deref(env["ODAFLOW_TEMPORAL_ADDRESS"]) != "temporal:7233" || deref(env["KUBECONFIG"]) != "/kube/config" {
			t.Errorf("%s env %v", name, env)
		}
		kube := false
		for _, v := range s.Volumes {
			if v.Target == "/kube/config" && v.ReadOnly && v.Source == "/home/dev/.kube/config" {
				kube = true
			}
		}
		if !kube {
			t.Errorf("%s does not mount the host kubeconfig read-only at /kube/config: %v", name, s.Volumes)
		}
		if !s.ReadOnly || !slices.Contains(s.CapDrop, "ALL") || strings.HasPrefix(s.User, "0") || s.User == "" {
			t.Errorf("%s: read_only %v, cap_drop %v, user %q", name, s.ReadOnly, s.CapDrop, s.User)
		}
		hc := s.HealthCheck.Test
		if len(hc) < 3 || hc[0] != "CMD" || hc[2] != "healthcheck" {
			t.Fatalf("%s health check %v: want the binary's own healthcheck", name, hc)
		}
		hu := usageOf(t, bin, "healthcheck")
		for _, a := range hc[3:] {
			flag, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
			if !hu.flags[flag] {
				t.Errorf("%s health check: odaflow healthcheck has no flag %s", name, a)
			}
		}
	}

	w := service(t, p, "worker").Environment
	for k, v := range map[string]string{
		"ODAFLOW_KEYCLOAK_URL":          "http://keycloak:8083/auth",
		"ODAFLOW_KEYCLOAK_REALM":        "odari",
		"ODAFLOW_KEYCLOAK_ADMIN_SECRET": "canvas/keycloak-admin",
		"ODAFLOW_VAULT_ADDRESS":         "http://vault:8200",
		"ODAFLOW_VAULT_SKIP_VERIFY":     "false",
		"ODAFLOW_KONG_ADMIN_URL":        "http://kong:8001",
	} {
		if deref(w[k]) != v {
			t.Errorf("worker %s = %q, want %q", k, deref(w[k]), v)
		}
	}
	// The Vault token is a file from a compose config, never a variable.
	tokenFile := deref(w["ODAFLOW_VAULT_TOKEN_FILE"])
	found := false
	for _, c := range service(t, p, "worker").Configs {
		found = found || c.Target == tokenFile
	}
	if tokenFile == "" || !found {
		t.Errorf("ODAFLOW_VAULT_TOKEN_FILE %q is not a mounted config", tokenFile)
	}
	for k := range w {
		if regexp.MustCompile(`(PASSWORD|TOKEN|SECRET)$`).MatchString(k) && k != "ODAFLOW_KEYCLOAK_ADMIN_SECRET" {
			t.Errorf("worker env %s carries a credential; use a file", k)
		}
	}
}

func mountedFile(t *testing.T, s types.ServiceConfig, target, file string) string {
	t.Helper()
	for _, v := range s.Volumes {
		if v.Target == target || strings.HasPrefix(target, v.Target+"/") {
			b, err := os.ReadFile(filepath.Join(v.Source, strings.TrimPrefix(target, v.Target), file))
			if err != nil {
				t.Fatalf("%s: %v", s.Name, err)
			}
			return string(b)
		}
		if v.Target == target+"/"+file {
			b, err := os.ReadFile(v.Source)
			if err != nil {
				t.Fatalf("%s: %v", s.Name, err)
			}
			return string(b)
		}
	}
	t.Fatalf("%s mounts nothing at %s", s.Name, target)
	return ""
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

func buildOdaflow(t *testing.T, root string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "odaflow")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/odaflow")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/odaflow: %v\n%s", err, out)
	}
	return bin
}

type usage struct{ flags, envs map[string]bool }

func usageOf(t *testing.T, bin, sub string) usage {
	t.Helper()
	out, _ := exec.Command(bin, sub, "-h").CombinedOutput()
	if strings.Contains(string(out), "unknown command") {
		t.Fatalf("odaflow has no subcommand %s", sub)
	}
	u := usage{flags: map[string]bool{}, envs: map[string]bool{}}
	for _, m := range regexp.MustCompile(`(?m)^\s+-([a-z0-9-]+)`).FindAllStringSubmatch(string(out), -1) {
		u.flags[m[1]] = true
	}
	for _, m := range regexp.MustCompile(`env ([A-Z][A-Z0-9_]+)`).FindAllStringSubmatch(string(out), -1) {
		u.envs[m[1]] = true
	}
	if len(u.flags) == 0 {
		t.Fatalf("odaflow %s -h lists no flags:\n%s", sub, out)
	}
	return u
}
