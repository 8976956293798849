package integration

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	vaultapi "github.com/hashicorp/vault/api"

	"github.com/odaflow/odaflow/activities"
	"github.com/odaflow/odaflow/internal/config"
	"github.com/odaflow/odaflow/internal/localstack"
)

// startVault starts the real Vault dev server (internal/localstack, as
// tests/vault does) with a counting proxy in front, and sets the worker's
// Vault configuration: every credential from a file, kubernetes auth
// pointed at the test apiserver for TokenReview. A missing binary fails
// the run; ODAFLOW_SKIP_VAULT (refused under CI) runs without Vault and
// the secrets tests skip, saying so.
func startVault(ctx context.Context, logDir string) error {
	bin, err := localstack.VaultBinary()
	if err != nil {
		if os.Getenv("ODAFLOW_SKIP_VAULT") != "" && os.Getenv("CI") == "" {
			fmt.Fprintf(os.Stderr, "integration: Vault SKIPPED on request (ODAFLOW_SKIP_VAULT): %v\n", err)
			return nil
		}
		return fmt.Errorf("%w (or set ODAFLOW_SKIP_VAULT outside CI to run without the secrets tests)", err)
	}
	stack.vault, err = localstack.StartVault(ctx, localstack.VaultOptions{Binary: bin, DataDir: filepath.Join(logDir, "vault")})
	if err != nil {
		return err
	}
	cfg := vaultapi.DefaultConfig()
	cfg.Address = stack.vault.Address
	cfg.MaxRetries = 0
	if stack.vaultRoot, err = vaultapi.NewClient(cfg); err != nil {
		return err
	}
	stack.vaultRoot.SetToken(stack.vault.RootToken())
	if stack.vaultProxy, err = newVaultProxy(stack.vault.Address); err != nil {
		return err
	}
	write := func(name string, data []byte) (string, error) {
		p := filepath.Join(stack.vault.DataDir, name)
		return p, os.WriteFile(p, data, 0o600)
	}
	ca, err := write("kube-ca.crt", stack.kube.RESTConfig.CAData)
	if err != nil {
		return err
	}
	// The reviewer may call TokenReview: the test apiserver's admin token.
	reviewer, err := write("token-reviewer.jwt", []byte(stack.kube.RESTConfig.BearerToken))
	if err != nil {
		return err
	}
	stack.vaultCfg = config.Vault{
		Address: stack.vaultProxy.URL, TokenFile: stack.vault.TokenFile, AuthPath: activities.DefaultVaultAuthPath,
		KubernetesHost: stack.kube.Host, KubernetesCAFile: ca, TokenReviewerJWTFile: reviewer,
	}
	return nil
}

func stopVault() {
	if stack.vaultProxy != nil {
		stack.vaultProxy.Close()
	}
	if stack.vault != nil {
		_ = stack.vault.Stop()
	}
}

// requireVault skips a secrets test when the run was started without Vault
// on request (never under CI, where startVault fails instead).
func requireVault(t *testing.T) {
	t.Helper()
	if stack.vault == nil {
		t.Skip("Vault skipped on request (ODAFLOW_SKIP_VAULT)")
	}
}

// vaultProxy is a reverse proxy in front of Vault that counts the worker's
// requests (the test's own root client goes to Vault directly). While Vault
// is down it answers 502, as a load balancer in front of Vault would.
type vaultProxy struct {
	*httptest.Server
	mu     sync.Mutex
	counts map[string]int
}

func newVaultProxy(target string) (*vaultProxy, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, err
	}
	p := &vaultProxy{counts: map[string]int{}}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.ErrorHandler = func(w http.ResponseWriter, _ *http.Request, err error) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadGateway)
		fmt.Fprintf(w, `{"errors":[%q]}`, "vault unreachable: "+err.Error())
	}
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		p.counts[r.Method+" "+routeOf(r.URL.Path)]++
		p.mu.Unlock()
		rp.ServeHTTP(w, r)
	}))
	return p, nil
}

// routeOf names a Vault request by its route, without the store's own
// names: /v1/sys/mounts/kv-sman-x → sys/mounts, /v1/auth/p/role/r →
// auth/role.
func routeOf(path string) string {
	parts := strings.Split(strings.TrimPrefix(path, "/v1/"), "/")
	switch {
	case len(parts) >= 2 && parts[0] == "sys":
		return "sys/" + parts[1]
	case len(parts) >= 3 && parts[0] == "auth":
		return "auth/" + parts[2]
	case len(parts) >= 2:
		return "kv/" + parts[1]
	}
	return strings.Join(parts, "/")
}

// snapshot returns the counts so far and their total.
func (p *vaultProxy) snapshot() (map[string]int, int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string]int, len(p.counts))
	total := 0
	for k, v := range p.counts {
		out[k] = v
		total += v
	}
	return out, total
}

// vaultStore reports which of a store's objects exist in Vault: its kv-v2
// mount, its policy and its login role.
func vaultStore(ctx context.Context, mount, policy, role string) (hasMount, hasPolicy, hasRole bool, err error) {
	mounts, err := stack.vaultRoot.Sys().ListMountsWithContext(ctx)
	if err != nil {
		return false, false, false, err
	}
	if m, ok := mounts[mount+"/"]; ok {
		if m.Type != "kv" || m.Options["version"] != "2" {
			return false, false, false, fmt.Errorf("mount %s is %s version %q, want kv version 2", mount, m.Type, m.Options["version"])
		}
		hasMount = true
	}
	pol, err := stack.vaultRoot.Sys().GetPolicyWithContext(ctx, policy)
	if err != nil {
		return false, false, false, err
	}
	hasPolicy = pol != ""
	r, err := stack.vaultRoot.Logical().ReadWithContext(ctx, "auth/"+activities.DefaultVaultAuthPath+"/role/"+role)
	var re *vaultapi.ResponseError
	if err != nil && !(errors.As(err, &re) && re.StatusCode == http.StatusNotFound) {
		return false, false, false, err
	}
	hasRole = r != nil
	return hasMount, hasPolicy, hasRole, nil
}
