// Package integration runs odaflow end to end on real parts: etcd,
// kube-apiserver and kube-controller-manager (garbage collector and
// namespace controller), the Temporal dev server, and odaflow's own worker
// and watcher, all started by TestMain.
package integration

import (
	"context"
	"fmt"
	"net"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	vaultapi "github.com/hashicorp/vault/api"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/testsuite"
	"go.uber.org/fx"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	odaflowchart "github.com/odaflow/odaflow/charts/odaflow"
	"github.com/odaflow/odaflow/internal/config"
	"github.com/odaflow/odaflow/internal/doubles/keycloak"
	"github.com/odaflow/odaflow/internal/doubles/serviceinventory"
	"github.com/odaflow/odaflow/internal/localstack"
	"github.com/odaflow/odaflow/internal/testartifacts"
	"github.com/odaflow/odaflow/watcher"
	"github.com/odaflow/odaflow/worker"
	"github.com/odaflow/odaflow/workflows"
)

// stack is the running system under test.
var stack struct {
	kube     *localstack.Kube
	temporal *testsuite.DevServer
	tc       client.Client
	dyn      dynamic.Interface
	core     kubernetes.Interface
	common   config.Common
	worker   *fx.App
	watcher  *fx.App
	// keycloak and inventory are the doubles of the identity platform and
	// the Canvas's TMF638 Service Inventory the worker talks to.
	keycloak  *keycloak.Server
	inventory *serviceinventory.Double
	// keycloakPassword is a secret value: the secrets scan looks for it.
	keycloakPassword string
	// statusKey seals the status writes of the stack's worker and watcher
	// (--status-key-file); a secret value, registered for the scan.
	statusKey    []byte
	inventoryURL string
	// vault is the real Vault dev server of SecretsManagement (nil only
	// when skipped on request, see startVault); the worker reaches it
	// through vaultProxy, which counts its requests.
	vault      *localstack.Vault
	vaultRoot  *vaultapi.Client
	vaultProxy *vaultProxy
	vaultCfg   config.Vault
	// workerHTTP and watcherHTTP serve the processes' /readyz and metrics.
	workerHTTP, watcherHTTP string
}

// Where the worker finds the Keycloak admin credentials, and the realm.
const (
	systemNamespace     = "odaflow-system"
	keycloakAdminSecret = "keycloak-admin"
	keycloakRealm       = "odari"
	inventoryBasePath   = "/tmf-api/serviceInventoryManagement/v4"
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	tools, err := localstack.LookupTools()
	if err != nil {
		// A missing server is a failure, never a silent pass: `make test`
		// builds them. Opting out has to be explicit.
		if os.Getenv("ODAFLOW_SKIP_INTEGRATION") != "" && os.Getenv("CI") == "" {
			fmt.Fprintf(os.Stderr, "integration: SKIPPED on request (ODAFLOW_SKIP_INTEGRATION): %v\n", err)
			return 0
		}
		fmt.Fprintf(os.Stderr, "integration: the real servers are missing (run make test or hack/tools.sh): %v\n", err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	logDir, _ := os.MkdirTemp("", "odaflow-it-logs-")
	fmt.Fprintf(os.Stderr, "integration: server logs in %s\n", logDir)
	start := time.Now()
	// Keycloak's JVM start is the slowest of all: it runs alongside the
	// other servers' and is joined before the workers start.
	// The stop waits for the start, so that a run ended early by another
	// server's failure leaves no JVM behind.
	kcDone, kcFinished := make(chan error, 1), make(chan struct{})
	go func() {
		defer close(kcFinished)
		kcDone <- startRealKeycloak(context.Background(), logDir)
	}()
	defer func() {
		<-kcFinished
		stopRealKeycloak()
	}()
	crdDir := filepath.Join(logDir, "crds")
	if err := odaflowchart.WriteCRDs(crdDir); err != nil {
		fmt.Fprintf(os.Stderr, "integration: %v\n", err)
		return 1
	}
	if err := localstack.GatewayCRDs(crdDir); err != nil {
		fmt.Fprintf(os.Stderr, "integration: gateway CRDs: %v\n", err)
		return 1
	}
	// CRDs go in before the controller manager starts, so its garbage
	// collector knows the ODA kinds from the first second.
	stack.kube, err = localstack.StartKube(ctx, localstack.Options{ToolsDir: tools, DataDir: filepath.Join(logDir, "kube"), CRDDir: crdDir})
	if err != nil {
		fmt.Fprintf(os.Stderr, "integration: start kube: %v\n", err)
		return 1
	}
	defer func() { _ = stack.kube.Stop() }()
	// The Temporal CLI built by hack/tools.sh, started the SDK's way: in
	// memory, on a free port, without any download.
	stack.temporal, err = testsuite.StartDevServer(ctx, testsuite.DevServerOptions{
		ExistingPath:  filepath.Join(tools, "temporal"),
		LogLevel:      "error",
		ExtraArgs:     localstack.DevServerArgs(workflows.SearchAttributeTypes()),
		ClientOptions: &client.Options{Namespace: "default", Logger: quietLogger{}},
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "integration: start temporal: %v\n", err)
		return 1
	}
	defer func() { _ = stack.temporal.Stop() }()
	fmt.Fprintf(os.Stderr, "integration: apiserver, controller-manager and Temporal ready in %s\n", time.Since(start).Round(time.Millisecond))
	stack.dyn = dynamic.NewForConfigOrDie(stack.kube.RESTConfig)
	stack.core = kubernetes.NewForConfigOrDie(stack.kube.RESTConfig)
	stack.tc = stack.temporal.Client()
	// No IngressNamespace: the watcher reads "" as istio-ingress, never as
	// every namespace (TestAttackerIngressServiceIsIgnored).
	stack.common = config.Common{
		Kubeconfig: stack.kube.KubeconfigPath, TemporalAddress: stack.temporal.FrontendHostPort(),
		TemporalNamespace: "default", TaskQueue: "odaflow-it",
		HTTPAddress: "127.0.0.1:0", LogLevel: logLevel(), IngressSelector: "istio=ingressgateway",
		SearchAttributes: true, Gateway: "istio",
	}
	// Outside logDir: the key must show up in no artifact.
	keyDir, err := os.MkdirTemp("", "odaflow-it-status-key-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "integration: status key: %v\n", err)
		return 1
	}
	defer os.RemoveAll(keyDir)
	keyFile, key, err := localstack.StatusKeyFile(keyDir)
	if err == nil {
		err = testartifacts.RegisterSecret("status seal key", key)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "integration: status key: %v\n", err)
		return 1
	}
	stack.common.StatusKeyFile, stack.statusKey = keyFile, []byte(key)
	if err := startDoubles(ctx); err != nil {
		fmt.Fprintf(os.Stderr, "integration: doubles: %v\n", err)
		return 1
	}
	defer stack.keycloak.Close()
	if err := startVault(ctx, logDir); err != nil {
		fmt.Fprintf(os.Stderr, "integration: start vault: %v\n", err)
		return 1
	}
	defer stopVault()
	if stack.worker, err = startWorker(ctx); err != nil {
		fmt.Fprintf(os.Stderr, "integration: start worker: %v\n", err)
		return 1
	}
	defer func() { stopApp(stack.worker) }()
	if stack.watcher, err = startWatcher(ctx); err != nil {
		fmt.Fprintf(os.Stderr, "integration: start watcher: %v\n", err)
		return 1
	}
	defer func() { stopApp(stack.watcher) }()
	if err := <-kcDone; err != nil {
		fmt.Fprintf(os.Stderr, "integration: start keycloak: %v\n", err)
		return 1
	}
	kctx, kcancel := context.WithTimeout(context.Background(), time.Minute)
	defer kcancel()
	if err := startRealKeycloakStack(kctx); err != nil {
		fmt.Fprintf(os.Stderr, "integration: the real Keycloak's worker and watcher: %v\n", err)
		return 1
	}
	code := m.Run()
	if err := collectArtifacts(logDir); err != nil {
		fmt.Fprintf(os.Stderr, "integration: artifacts for the secrets scan: %v\n", err)
		return 1
	}
	return code
}

// startDoubles starts the Keycloak and Service Inventory doubles and puts
// the Keycloak admin credentials in a Secret, as a Canvas install does.
func startDoubles(ctx context.Context) error {
	stack.keycloakPassword = "it-" + rand.String(24)
	kc, err := keycloak.New(keycloak.Options{AdminPassword: stack.keycloakPassword})
	if err != nil {
		return err
	}
	stack.keycloak = kc
	if err := kc.SeedCanvas(keycloakRealm); err != nil {
		return err
	}
	stack.inventory = serviceinventory.New(inventoryBasePath)
	inv := httptest.NewServer(stack.inventory)
	stack.inventoryURL = inv.URL + inventoryBasePath
	if _, err := stack.core.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: systemNamespace}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	_, err = stack.core.CoreV1().Secrets(systemNamespace).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: keycloakAdminSecret},
		Data:       map[string][]byte{"username": []byte(keycloak.AdminUser), "password": []byte(stack.keycloakPassword)},
	}, metav1.CreateOptions{})
	return err
}

func startWorker(ctx context.Context) (*fx.App, error) {
	cfg := config.Worker{Common: stack.common, IstioGateway: "components/component-gateway",
		ServiceInventoryURL: stack.inventoryURL,
		Keycloak: config.Keycloak{URL: stack.keycloak.URL(), Realm: keycloakRealm, AdminRealm: "master",
			AdminSecret: systemNamespace + "/" + keycloakAdminSecret, Timeout: 10 * time.Second},
		Vault: stack.vaultCfg,
	}
	cfg.HTTPAddress, stack.workerHTTP = listenAddress()
	app := worker.New(cfg)
	return app, app.Start(ctx)
}

func startWatcher(ctx context.Context) (*fx.App, error) {
	// Namespaces it-g* belong to the gateway tests' own worker and watcher,
	// it-k* and it-t* to the fault tests' (the killed worker, Temporal
	// restarted), it-p* to the apiserver fault tests' (behind the fault proxy),
	// it-r* to the identity tests on the real Keycloak (realkeycloak_test.go).
	// components is the Canvas's own namespace, where the test-kit charts
	// go (the -sman chart's pod selector names it).
	common := stack.common
	common.Namespaces = []string{"it-[^gkprtx]*", "components"}
	common.HTTPAddress, stack.watcherHTTP = listenAddress()
	// Namespaces it-shared-* are shared with every namespace, as a Canvas
	// operator shares a platform team's (the adversarial dependency tests).
	app := watcher.NewApp(config.Watcher{Common: common, IdentityCheckInterval: 10 * time.Minute, WorkflowTaskTimeout: config.DefaultWorkflowTaskTimeout,
		SharedAPINamespaces: []string{sharedAPINamespaces}})
	return app, app.Start(ctx)
}

// listenAddress picks a free local port for a process's HTTP server, so
// that tests can probe its /readyz; "127.0.0.1:0" when none can be found.
func listenAddress() (string, string) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "127.0.0.1:0", ""
	}
	defer l.Close()
	return l.Addr().String(), l.Addr().String()
}

func stopApp(app *fx.App) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_ = app.Stop(ctx)
}

// logLevel is debug when the run keeps its logs for the secrets scan (the
// more odaflow says, the more the scan covers), warn otherwise.
func logLevel() string {
	if testartifacts.Dir() != "" {
		return "debug"
	}
	return "warn"
}

// quietLogger keeps the SDK client's info lines out of the test output.
type quietLogger struct{}

func (quietLogger) Debug(string, ...any) {}
func (quietLogger) Info(string, ...any)  {}
func (quietLogger) Warn(string, ...any)  {}
func (quietLogger) Error(string, ...any) {}
