package main

import (
	"context"
	_ "embed"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"go.uber.org/fx"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	odaflowchart "github.com/odaflow/odaflow/charts/odaflow"
	"github.com/odaflow/odaflow/internal/config"
	"github.com/odaflow/odaflow/internal/kubeapply"
	"github.com/odaflow/odaflow/internal/localstack"
	"github.com/odaflow/odaflow/internal/runtime"
	"github.com/odaflow/odaflow/watcher"
	"github.com/odaflow/odaflow/worker"
	"github.com/odaflow/odaflow/workflows"
)

// The sample: the Canvas's example product catalog (which depends on a
// product catalog API) and another release of it that provides that API,
// applied in this order.
var (
	//go:embed samples/component-productcatalog-provider.yaml
	sampleProvider []byte
	//go:embed samples/component-productcatalog.yaml
	sampleComponent []byte
)

// samples are the sample Components, in the order they are applied.
var samples = [][]byte{sampleProvider, sampleComponent}

// devPorts are where the dev stack listens. The defaults are fixed so that
// links and a kubeconfig stay valid between runs; --free-ports picks free
// ones (to run next to another stack, as the tests do).
type devPorts struct {
	Kube, Etcd, Temporal, TemporalUI, Vault int
	Worker, Watcher, Webhook                string
}

func fixedDevPorts() devPorts {
	return devPorts{Kube: 6443, Etcd: 2379, Temporal: 7233, TemporalUI: 8233, Vault: 8200,
		Worker: "127.0.0.1:8081", Watcher: "127.0.0.1:8082", Webhook: "127.0.0.1:9443"}
}

func freeDevPorts() (devPorts, error) {
	var addrs []string
	for range 3 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return devPorts{}, err
		}
		addrs = append(addrs, l.Addr().String())
		defer l.Close()
	}
	return devPorts{Worker: addrs[0], Watcher: addrs[1], Webhook: addrs[2]}, nil
}

func runDev(args []string) error {
	fset := flag.NewFlagSet("odaflow dev", flag.ContinueOnError)
	// The variables are the ones the worker reads for the same settings
	// (config.EnvName); strings never fail to parse, so no error is kept.
	env := config.Flags{FS: fset, Errs: new([]error)}
	var kubeconfig, keycloakURL string
	env.String(&kubeconfig, "kubeconfig", "", "use this cluster instead of starting one; the ODA CRDs are installed there")
	dataDir := fset.String("data-dir", defaultDataDir(), "state of the local stack (etcd data, Temporal database) and its logs")
	sample := fset.Bool("sample", true, "apply the sample Components")
	namespace := fset.String("sample-namespace", "components", "namespace of the sample Components")
	logLevel := fset.String("log-level", "info", "level of the worker's and the watcher's logs (files in the data folder); debug adds fx's records")
	env.String(&keycloakURL, "keycloak-url", "",
		"a real Keycloak instead of odaflow's stand-in (base URL, with /auth before Keycloak 17); admin user and password from KEYCLOAK_ADMIN and KEYCLOAK_ADMIN_PASSWORD")
	keycloakRealm := fset.String("keycloak-realm", "odari", "Keycloak realm of the component clients")
	free := fset.Bool("free-ports", false, "listen on free ports instead of 6443, 2379, 7233, 8233, 8081, 8082, 8200 and 9443 (to run next to another stack)")
	if err := fset.Parse(args); err != nil {
		return flagError(err)
	}
	if fset.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %v", fset.Args())
	}
	level, err := parseLevel(*logLevel)
	if err != nil {
		return err
	}
	ports := fixedDevPorts()
	if *free {
		if ports, err = freeDevPorts(); err != nil {
			return err
		}
	}
	if *dataDir, err = filepath.Abs(*dataDir); err != nil {
		return err
	}
	ctx, stop := notifyContext()
	defer stop()
	out := &console{out: os.Stdout}
	logDir := filepath.Join(*dataDir, "logs")
	workerLog, err := openDevLog(logDir, "worker.log")
	if err != nil {
		return err
	}
	defer workerLog.Close()
	watcherLog, err := openDevLog(logDir, "watcher.log")
	if err != nil {
		return err
	}
	defer watcherLog.Close()
	workerHandler, watcherHandler := workerLog.handler(level, "worker", out), watcherLog.handler(level, "watcher", out)
	// client-go's own lines (the apiserver's warnings about the CRDs'
	// schemas, informers, leader election) go to the watcher's log from the
	// start, not to the console.
	klog.SetSlogLogger(slog.New(watcherHandler).With("component", "client-go"))

	tools, err := localstack.FindTools()
	if err != nil {
		return err
	}
	started := time.Now()
	// --log-level debug prints when each phase of the start-up ended.
	step := func(what string) {
		if level <= slog.LevelDebug {
			out.Printf("%-28s %s\n", what, time.Since(started).Round(time.Millisecond))
		}
	}
	// The Temporal dev server needs nothing from the cluster: it starts
	// while etcd and the apiserver do, and is awaited once the worker needs
	// it. Whatever happens to the rest of the start-up, it is stopped.
	var temporal *localstack.Temporal
	temporalErr, temporalDone := error(nil), make(chan struct{})
	go func() {
		defer close(temporalDone)
		temporal, temporalErr = localstack.StartTemporal(ctx, localstack.Options{
			ToolsDir: tools, DataDir: filepath.Join(*dataDir, "temporal"), Persist: true,
			TemporalPort: ports.Temporal, TemporalUIPort: ports.TemporalUI, SearchAttributes: workflows.SearchAttributeTypes(),
		})
		if temporalErr == nil {
			step("Temporal ready")
		}
	}()
	defer func() {
		<-temporalDone
		if temporal != nil {
			logStop("temporal", temporal.Stop)
		}
	}()

	// Vault too, when it is built.
	var vault *devVault
	vaultErr, vaultDone := error(nil), make(chan struct{})
	go func() {
		defer close(vaultDone)
		vault, vaultErr = startVault(ctx, filepath.Join(*dataDir, "vault"), ports.Vault)
	}()
	defer func() {
		<-vaultDone
		if vault != nil {
			logStop("vault", vault.Stop)
		}
	}()
	// And the real Keycloak, when it is fetched and no other is named: its
	// JVM start is the longest, so it runs alongside the others.
	var realKeycloak *devKeycloak
	keycloakErr, keycloakDone := error(nil), make(chan struct{})
	go func() {
		defer close(keycloakDone)
		if keycloakURL == "" {
			realKeycloak, keycloakErr = startDevKeycloak(ctx, filepath.Join(*dataDir, "keycloak"), *keycloakRealm)
		}
	}()
	defer func() {
		<-keycloakDone
		if realKeycloak != nil && realKeycloak.kc != nil {
			logStop("keycloak", realKeycloak.kc.Stop)
		}
	}()
	crds := prepareDevCRDs(out)
	defer crds.remove()

	kubeconfigPath := kubeconfig
	if kubeconfigPath == "" {
		kube, err := localstack.StartKube(ctx, localstack.Options{
			ToolsDir: tools, DataDir: filepath.Join(*dataDir, "kube"), Persist: true, KubePort: ports.Kube, EtcdPort: ports.Etcd,
		})
		if err != nil {
			return fmt.Errorf("start kube-apiserver: %w", err)
		}
		defer logStop("kubernetes", kube.Stop)
		kubeconfigPath = kube.KubeconfigPath
		step("kube-apiserver ready")
	}
	restCfg, err := clientcmd.BuildConfigFromFlags("", kubeconfigPath)
	if err != nil {
		return fmt.Errorf("load kubeconfig %s: %w", kubeconfigPath, err)
	}
	// client-go's default of 5 requests a second would throttle the CRD
	// installation (an apply and a few readiness polls per CRD) for seconds;
	// the worker and the watcher run with KubeQPS 500 as well.
	restCfg.QPS, restCfg.Burst = 500, 1000
	if err := crds.install(ctx, restCfg); err != nil {
		return err
	}
	step("CRDs installed")
	if kubeconfig == "" {
		// Components applied as v1beta2..v1beta4 are converted by odaflow's
		// own webhook, as in a cluster with the chart's webhook enabled.
		stopWebhook, err := startConversionWebhook(ctx, restCfg, ports.Webhook)
		if err != nil {
			return fmt.Errorf("start the conversion webhook: %w", err)
		}
		defer stopWebhook()
		step("conversion webhook serving")
	}

	<-keycloakDone
	if keycloakErr != nil {
		return keycloakErr
	}
	identity, err := startIdentity(ctx, restCfg, keycloakURL, *keycloakRealm, realKeycloak)
	if err != nil {
		return err
	}
	defer identity.Stop()
	// The identity listener, and a stand-in for the components' hubs, on
	// the stack's own cluster only: on another cluster the hubs are the
	// components' real ones, which a worker outside it cannot reach.
	hubsBanner := "not configured: with --kubeconfig the worker runs outside the cluster and cannot reach the components' hubs"
	var hubs *devHubs
	if kubeconfig == "" {
		if hubs, err = startHubs(*dataDir, ports.Worker); err != nil {
			return err
		}
		defer hubs.Stop()
		hubsBanner = hubs.Banner
	}
	<-vaultDone
	if vaultErr != nil {
		return vaultErr
	}
	if err := vault.configure(restCfg); err != nil {
		return err
	}
	step("Keycloak, hubs and Vault")
	<-temporalDone
	if temporalErr != nil {
		return fmt.Errorf("start the Temporal dev server: %w", temporalErr)
	}

	// The worker seals status writes, the watcher checks them: one key,
	// kept in the data directory with the rest of the stack's state.
	statusKeyFile, _, err := localstack.StatusKeyFile(*dataDir)
	if err != nil {
		return err
	}
	common := config.Common{
		Kubeconfig: kubeconfigPath, TemporalAddress: temporal.Address, TemporalNamespace: temporal.Namespace,
		TaskQueue: "odaflow", LogLevel: *logLevel, IngressSelector: "istio=ingressgateway", IngressNamespace: config.DefaultIngressNamespace,
		SearchAttributes: true, KubeQPS: 500, KubeBurst: 1000, TemporalCompression: "none", Gateway: "istio",
		StatusKeyFile: statusKeyFile,
	}
	wcfg := config.Worker{Common: common, IstioGateway: "components/component-gateway", MetricsMode: config.DefaultMetricsMode,
		Keycloak: identity.Config, Vault: vault.Config}
	wcfg.HTTPAddress = ports.Worker
	workerOptions := []fx.Option{runtime.WithLogHandler(workerHandler)}
	if hubs != nil {
		wcfg.ListenerBaseURL, wcfg.ListenerKeyFile = hubs.ListenerBaseURL, hubs.KeyFile
		workerOptions = append(workerOptions, worker.WithHubHTTPClient(hubs.HTTP))
	}
	vcfg := config.Watcher{Common: common, IdentityCheckInterval: 10 * time.Minute, SecretsCheckInterval: 10 * time.Minute,
		ChildStatusWindow: 250 * time.Millisecond, WorkflowTaskTimeout: config.DefaultWorkflowTaskTimeout}
	vcfg.HTTPAddress = ports.Watcher
	if err := errors.Join(wcfg.Validate(), vcfg.Validate()); err != nil {
		return fmt.Errorf("the dev stack's own configuration: %w", err)
	}
	apps := []*fx.App{
		worker.New(wcfg, workerOptions...),
		watcher.NewApp(vcfg, runtime.WithLogHandler(watcherHandler)),
	}
	// Building the applications pointed klog at the last one's logger;
	// keep it on the watcher's.
	klog.SetSlogLogger(slog.New(watcherHandler).With("component", "client-go"))
	// The worker, the watcher and the console's informers start together:
	// none waits for another.
	lifecycle := newLifecycleConsole(out)
	dyn, err := dynamic.NewForConfig(restCfg)
	if err != nil {
		return err
	}
	startErrs := make([]error, len(apps)+1)
	var starting sync.WaitGroup
	for i, app := range apps {
		starting.Go(func() { startErrs[i] = app.Start(ctx) })
	}
	starting.Go(func() { startErrs[len(apps)] = lifecycle.watch(ctx, dyn) })
	starting.Wait()
	for i, app := range apps {
		if startErrs[i] != nil {
			continue // fx stopped what it had started
		}
		defer func() {
			stopCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_ = app.Stop(stopCtx)
		}()
	}
	if err := errors.Join(startErrs...); err != nil {
		return err
	}
	step("worker, watcher, console")
	out.Printf(`
odaflow dev is running (ready in %s). Ctrl-C stops everything it started.

  Temporal Web UI   %s/namespaces/%s/workflows
  status            %s
  kubeconfig        %s
  Keycloak          %s
  identity          %s
  Vault             %s
  logs              %s and watcher.log; the servers' in %s

`, time.Since(started).Round(time.Millisecond), temporal.UIAddress, temporal.Namespace,
		statusCommand(kubeconfigPath), kubeconfigPath, identity.Banner, hubsBanner, vault.Banner, workerLog.Path, filepath.Join(*dataDir, "*", "logs"))

	if *sample {
		if kubeconfig == "" {
			// The local cluster has no load balancer and no kubelet: stand in
			// for them so the sample's APIs get a url and a ready implementation.
			if err := simulateCluster(ctx, restCfg, *namespace, samples); err != nil {
				return fmt.Errorf("simulate the gateway and endpoints: %w", err)
			}
		}
		if err := applySamples(ctx, restCfg, *namespace); err != nil {
			return err
		}
		out.Printf("sample: r-cat-productcatalogmanagement provides the product catalog API that ctk-productcatalogmanagement\n"+
			"depends on (namespace %s). Each line: time since the Component appeared, Component, child, step.\n\n", *namespace)
	}
	<-ctx.Done()
	out.Printf("\nstopping...\n")
	return nil
}

// devCRDs are the ODA CRDs and the gateways', written to a folder and
// parsed while the cluster starts: finding the gateways' modules runs the
// go command, and Istio's CRDs are megabytes of YAML.
type devCRDs struct {
	done chan struct{}
	dir  string
	objs []*unstructured.Unstructured
	err  error
}

func prepareDevCRDs(out *console) *devCRDs {
	c := &devCRDs{done: make(chan struct{})}
	go func() {
		defer close(c.done)
		if c.dir, c.err = os.MkdirTemp("", "odaflow-crds-"); c.err != nil {
			return
		}
		if c.err = odaflowchart.WriteCRDs(c.dir); c.err != nil {
			return
		}
		if err := localstack.GatewayCRDs(c.dir); err != nil {
			// hack/tools.sh downloads their modules; this is a stack started
			// some other way.
			out.Printf("warning: the Istio and Gateway API CRDs are not installed (%v); ExposedAPIs will report why they cannot be exposed\n", err)
		}
		c.objs, c.err = localstack.ReadManifests(c.dir)
	}()
	return c
}

// install installs the CRDs once they are written.
func (c *devCRDs) install(ctx context.Context, cfg *rest.Config) error {
	<-c.done
	if c.err != nil {
		return fmt.Errorf("read the ODA CRDs: %w", c.err)
	}
	if err := localstack.InstallManifests(ctx, cfg, c.objs); err != nil {
		return fmt.Errorf("install the ODA CRDs: %w", err)
	}
	return nil
}

// remove removes the folder once the CRDs are written.
func (c *devCRDs) remove() {
	<-c.done
	if c.dir != "" {
		_ = os.RemoveAll(c.dir)
	}
}

func applySamples(ctx context.Context, cfg *rest.Config, namespace string) error {
	if err := kubeapply.Apply(ctx, cfg, namespaceManifest(namespace), ""); err != nil {
		return fmt.Errorf("create namespace %s: %w", namespace, err)
	}
	for _, s := range samples {
		if err := kubeapply.Apply(ctx, cfg, s, namespace); err != nil {
			return fmt.Errorf("apply the sample Components: %w", err)
		}
	}
	return nil
}

// statusCommand is the `odaflow status` command line for this stack, as
// the user started this binary (bin/odaflow from `make dev`).
func statusCommand(kubeconfig string) string {
	name := os.Args[0]
	if wd, err := os.Getwd(); err == nil {
		if rel, err := filepath.Rel(wd, name); err == nil && !strings.HasPrefix(rel, "..") {
			name = rel
		}
	}
	if kubeconfig == devKubeconfig() {
		return name + " status -A -o wide components"
	}
	return name + " status -A -o wide --kubeconfig " + kubeconfig + " components"
}

// devKubeconfig is the kubeconfig `odaflow dev` writes with its default
// data folder; `odaflow status` and `explain` use it when no other is given.
func devKubeconfig() string {
	return filepath.Join(defaultDataDir(), "kube", "kubeconfig")
}

func defaultDataDir() string {
	if root, err := localstack.RepoRoot(); err == nil {
		return filepath.Join(root, ".dev")
	}
	return filepath.Join(os.TempDir(), "odaflow-dev")
}

func namespaceManifest(name string) []byte {
	return fmt.Appendf(nil, "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: %s\n", name)
}

func logStop(what string, stop func() error) {
	if err := stop(); err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintf(os.Stderr, "stopping %s: %v\n", what, err)
	}
}
