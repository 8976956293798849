// Package production runs odaflow's fault tests in the shape production
// runs it: the Temporal server binary (go.temporal.io/server v1.32.1, built
// by hack/tools.sh temporal-server) on PostgreSQL from Debian's packages,
// a real kube-apiserver, and odaflow as separate processes built from
// cmd/odaflow: two workers and two watchers electing a leader with a Lease.
// Each test interrupts one Component's lifecycle half way (one worker or the
// leading watcher SIGKILLed, the Temporal server or kube-apiserver
// restarted) and checks that the same workflow run completes it with
// nothing created twice.
package production

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	odaflowchart "github.com/odaflow/odaflow/charts/odaflow"
	"github.com/odaflow/odaflow/internal/doubles/keycloak"
	"github.com/odaflow/odaflow/internal/localstack"
	"github.com/odaflow/odaflow/internal/testartifacts"
	"github.com/odaflow/odaflow/tests/kit"
	"github.com/odaflow/odaflow/workflows"
)

const (
	systemNamespace     = "odaflow-system"
	keycloakAdminSecret = "keycloak-admin"
	keycloakRealm       = "odari"
	taskQueue           = "odaflow-prod"
	// leaseName is the watchers' Lease, in systemNamespace.
	leaseName = "odaflow-watcher"
)

// env is the running system under test.
var env struct {
	kube     *localstack.Kube
	pg       *localstack.Postgres
	temporal *localstack.Temporal
	tc       client.Client
	core     kubernetes.Interface
	c        *kit.Cluster
	keycloak *keycloak.Server
	// bin is cmd/odaflow built once for every worker and watcher process.
	bin string
	// logDir holds every server's and process's log.
	logDir string
	// workers and watchers are the odaflow processes; a test that kills
	// one leaves the slot to ensureProcesses, which starts a new one as a
	// Deployment would.
	workers  [2]*proc
	watchers [2]*proc
}

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	fail := func(format string, a ...any) int {
		fmt.Fprintf(os.Stderr, "production: "+format+"\n", a...)
		return 1
	}
	tools, err := localstack.LookupTools()
	var serverDir, pgBin string
	if err == nil {
		serverDir, err = localstack.FindTemporalServer()
	}
	if err == nil {
		pgBin, err = localstack.FindPostgres()
	}
	if err != nil {
		// A missing server is a failure, never a silent pass: `make test`
		// builds them. Opting out has to be explicit, and is refused in CI.
		if os.Getenv("ODAFLOW_SKIP_INTEGRATION") != "" && os.Getenv("CI") == "" {
			fmt.Fprintf(os.Stderr, "production: SKIPPED on request (ODAFLOW_SKIP_INTEGRATION): %v\n", err)
			return 0
		}
		return fail("the real servers are missing (run make tools): %v", err)
	}
	root, err := localstack.RepoRoot()
	if err != nil {
		return fail("%v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	env.logDir, _ = os.MkdirTemp("", "odaflow-prod-logs-")
	fmt.Fprintf(os.Stderr, "production: logs in %s\n", env.logDir)
	start := time.Now()

	env.bin = filepath.Join(env.logDir, "odaflow")
	build := exec.Command("go", "build", "-o", env.bin, "./cmd/odaflow")
	build.Dir, build.Stdout, build.Stderr = root, os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return fail("build odaflow: %v", err)
	}
	fmt.Fprintf(os.Stderr, "production: odaflow built in %s\n", time.Since(start).Round(time.Millisecond))

	crdDir := filepath.Join(env.logDir, "crds")
	if err := odaflowchart.WriteCRDs(crdDir); err != nil {
		return fail("%v", err)
	}
	if err := localstack.GatewayCRDs(crdDir); err != nil {
		return fail("gateway CRDs: %v", err)
	}
	env.kube, err = localstack.StartKube(ctx, localstack.Options{ToolsDir: tools, DataDir: filepath.Join(env.logDir, "kube"), CRDDir: crdDir})
	if err != nil {
		return fail("start kube: %v", err)
	}
	defer func() { _ = env.kube.Stop() }()
	serverLogs, err := os.Create(filepath.Join(env.logDir, "temporal-and-postgres.log"))
	if err != nil {
		return fail("%v", err)
	}
	defer serverLogs.Close()
	attrs := workflows.SearchAttributeTypes()
	env.pg, env.temporal, err = localstack.StartTemporalOnPostgres(ctx, serverDir, pgBin, serverLogs, attrs)
	if err != nil {
		return fail("%v", err)
	}
	// Deferred in this order so Temporal stops before PostgreSQL.
	defer func() { _ = env.pg.Stop() }()
	defer func() { _ = env.temporal.Stop() }()
	fmt.Fprintf(os.Stderr, "production: kube-apiserver, PostgreSQL and temporal-server ready in %s\n", time.Since(start).Round(time.Millisecond))

	env.tc, err = env.temporal.Dial(ctx)
	if err != nil {
		return fail("dial temporal: %v", err)
	}
	defer env.tc.Close()
	env.core = kubernetes.NewForConfigOrDie(env.kube.RESTConfig)
	env.c = &kit.Cluster{Dyn: dynamic.NewForConfigOrDie(env.kube.RESTConfig), Core: env.core, Temporal: env.tc}
	if err := startKeycloak(ctx); err != nil {
		return fail("keycloak double: %v", err)
	}
	defer env.keycloak.Close()
	defer stopProcesses()
	if err := ensureProcesses(ctx); err != nil {
		return fail("start odaflow: %v", err)
	}
	fmt.Fprintf(os.Stderr, "production: two workers and two watchers ready in %s\n", time.Since(start).Round(time.Millisecond))
	code := m.Run()
	if err := collectArtifacts(); err != nil {
		return fail("artifacts for the secrets scan: %v", err)
	}
	return code
}

// collectArtifacts registers the run's secrets (every credential in a
// Kubernetes Secret, every client secret and token the Keycloak double
// issued), dumps every history the Temporal server holds and copies the
// processes' logs, for the secrets scan at the end of make test.
func collectArtifacts() error {
	if testartifacts.Dir() == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	secrets, err := env.core.CoreV1().Secrets("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list Secrets: %w", err)
	}
	if err := testartifacts.RegisterKubeSecrets(secrets.Items); err != nil {
		return err
	}
	for _, v := range keycloak.Issued() {
		if err := testartifacts.RegisterSecret("Keycloak client secret or token", v); err != nil {
			return err
		}
	}
	if _, err := testartifacts.DumpHistories(ctx, env.tc, "production"); err != nil {
		return err
	}
	return testartifacts.CopyLogs(env.logDir, "production")
}

// startKeycloak starts the Keycloak double with the Canvas's realm and puts
// its admin credentials in a Secret, as a Canvas install does.
func startKeycloak(ctx context.Context) error {
	password := "prod-" + rand.String(24)
	kc, err := keycloak.New(keycloak.Options{AdminPassword: password})
	if err != nil {
		return err
	}
	env.keycloak = kc
	if err := kc.SeedCanvas(keycloakRealm); err != nil {
		return err
	}
	if _, err := env.core.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: systemNamespace}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	_, err = env.core.CoreV1().Secrets(systemNamespace).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: keycloakAdminSecret},
		Data:       map[string][]byte{"username": []byte(keycloak.AdminUser), "password": []byte(password)},
	}, metav1.CreateOptions{})
	return err
}
