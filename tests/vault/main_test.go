// Package vault tests odaflow's secrets management against a REAL Vault dev
// server (built by `hack/tools.sh vault` into bin/vault/vault) and the real
// kube-apiserver of internal/localstack: Vault's kubernetes auth verifies
// the pods' service-account tokens with the apiserver's TokenReview API,
// exactly as in a cluster.
package vault

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	vaultapi "github.com/hashicorp/vault/api"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/odaflow/odaflow/activities"
	odaflowchart "github.com/odaflow/odaflow/charts/odaflow"
	"github.com/odaflow/odaflow/internal/localstack"
	"github.com/odaflow/odaflow/internal/testartifacts"
)

// env is the running system under test.
var env struct {
	kube      *localstack.Kube
	core      kubernetes.Interface
	dyn       dynamic.Interface
	vaultAddr string
	vaultSrv  *localstack.Vault
	root      *vaultapi.Client // root token: only the test itself uses it
	dir       string
	cfg       activities.VaultConfig
	vault     *activities.Vault
	log       *slog.Logger
}

func TestMain(m *testing.M) {
	code := run(m)
	if code == 0 && env.dir != "" {
		// The servers have stopped; logs are kept only on failure.
		_ = os.RemoveAll(env.dir)
	}
	os.Exit(code)
}

func run(m *testing.M) int {
	bin, err := localstack.VaultBinary()
	tools, terr := localstack.LookupTools()
	if err == nil {
		err = terr
	}
	if err != nil {
		// A missing server is a failure, never a silent pass; opting out
		// has to be explicit, and is refused under CI.
		if os.Getenv("ODAFLOW_SKIP_VAULT") != "" && os.Getenv("CI") == "" {
			fmt.Fprintf(os.Stderr, "tests/vault: SKIPPED on request (ODAFLOW_SKIP_VAULT): %v\n", err)
			return 0
		}
		fmt.Fprintf(os.Stderr, "tests/vault: the real servers are missing: %v\n", err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	env.dir, _ = os.MkdirTemp("", "odaflow-vault-test-")
	fmt.Fprintf(os.Stderr, "tests/vault: logs in %s\n", env.dir)
	env.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	if os.Getenv("ODAFLOW_TEST_VERBOSE") != "" {
		env.log = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}

	crdDir := filepath.Join(env.dir, "crds")
	if err := odaflowchart.WriteCRDs(crdDir); err != nil {
		fmt.Fprintf(os.Stderr, "tests/vault: %v\n", err)
		return 1
	}
	env.kube, err = localstack.StartKube(ctx, localstack.Options{ToolsDir: tools, DataDir: filepath.Join(env.dir, "kube"), CRDDir: crdDir})
	if err != nil {
		fmt.Fprintf(os.Stderr, "tests/vault: start kube: %v\n", err)
		return 1
	}
	defer func() { _ = env.kube.Stop() }()
	env.core = kubernetes.NewForConfigOrDie(env.kube.RESTConfig)
	env.dyn = dynamic.NewForConfigOrDie(env.kube.RESTConfig)

	started := time.Now()
	if err := startVault(ctx, bin); err != nil {
		fmt.Fprintf(os.Stderr, "tests/vault: start vault: %v\n", err)
		return 1
	}
	defer stopVault()
	fmt.Fprintf(os.Stderr, "tests/vault: vault dev server ready in %s at %s\n", time.Since(started).Round(time.Millisecond), env.vaultAddr)

	// odaflow's configuration: every credential from a file.
	write := func(name string, data []byte) string {
		p := filepath.Join(env.dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			panic(err)
		}
		return p
	}
	env.cfg = activities.VaultConfig{
		Address:              env.vaultAddr,
		TokenFile:            env.vaultSrv.TokenFile,
		AuthPath:             "kubernetes-sman",
		KubernetesHost:       env.kube.Host,
		KubernetesCACertFile: write("kube-ca.crt", env.kube.RESTConfig.CAData),
		// The reviewer may call TokenReview: the test apiserver's admin.
		TokenReviewerJWTFile: write("reviewer-token", []byte(env.kube.RESTConfig.BearerToken)),
	}
	env.vault, err = activities.NewVault(env.cfg, env.log)
	if err != nil {
		fmt.Fprintf(os.Stderr, "tests/vault: %v\n", err)
		return 1
	}
	return m.Run()
}

// startVault starts the dev server (localstack, shared with the
// integration tests) and the root client the tests check Vault with.
func startVault(ctx context.Context, bin string) error {
	var err error
	env.vaultSrv, err = localstack.StartVault(ctx, localstack.VaultOptions{Binary: bin, DataDir: filepath.Join(env.dir, "vault")})
	if err != nil {
		return err
	}
	env.vaultAddr = env.vaultSrv.Address
	cfg := vaultapi.DefaultConfig()
	cfg.Address = env.vaultAddr
	env.root, err = vaultapi.NewClient(cfg)
	if err != nil {
		return err
	}
	env.root.SetToken(env.vaultSrv.RootToken())
	// The run's secrets scan (make test) looks for it in every log.
	return testartifacts.RegisterSecret("Vault root token (tests/vault)", env.vaultSrv.RootToken())
}

func stopVault() {
	if env.vaultSrv != nil {
		_ = env.vaultSrv.Stop()
	}
}

// vaultAs is a client of the test Vault with the given token.
func vaultAs(t *testing.T, token string) *vaultapi.Client {
	t.Helper()
	cfg := vaultapi.DefaultConfig()
	cfg.Address = env.vaultAddr
	cfg.MaxRetries = 0
	c, err := vaultapi.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c.SetToken(token)
	return c
}

func statusCode(err error) int {
	var re *vaultapi.ResponseError
	if errors.As(err, &re) {
		return re.StatusCode
	}
	return 0
}

// ready reports whether the Vault server answers health checks.
func vaultUp() bool {
	resp, err := http.Get(env.vaultAddr + "/v1/sys/health")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == 200
}

// vaultapiTokenCreate makes a token with only the default policy.
var vaultapiTokenCreate = vaultapi.TokenCreateRequest{Policies: []string{"default"}, TTL: "10m"}

// freePort is a loopback port nothing listens on (a Vault that is down).
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
