package main

import (
	"context"
	_ "embed"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"go.uber.org/fx"
	"k8s.io/client-go/tools/clientcmd"

	odaflowchart "github.com/odaflow/odaflow/charts/odaflow"
	"github.com/odaflow/odaflow/internal/config"
	"github.com/odaflow/odaflow/internal/kubeapply"
	"github.com/odaflow/odaflow/internal/localstack"
	"github.com/odaflow/odaflow/watcher"
	"github.com/odaflow/odaflow/worker"
	"github.com/odaflow/odaflow/workflows"
)

//go:embed samples/component-productcatalog.yaml
var sampleComponent []byte

func runDev(args []string) error {
	fset := flag.NewFlagSet("odaflow dev", flag.ContinueOnError)
	kubeconfig := fset.String("kubeconfig", os.Getenv("KUBECONFIG"), "use this cluster instead of starting one (env KUBECONFIG); the ODA CRDs are installed there")
	dataDir := fset.String("data-dir", defaultDataDir(), "state of the local stack (etcd data, Temporal database, logs)")
	sample := fset.Bool("sample", true, "apply the sample productcatalog Component")
	namespace := fset.String("sample-namespace", "components", "namespace of the sample Component")
	logLevel := fset.String("log-level", "info", "log level of the worker and the watcher")
	if err := fset.Parse(args); err != nil {
		return exitError(2)
	}
	ctx, stop := notifyContext()
	defer stop()

	tools, err := localstack.FindTools()
	if err != nil {
		return err
	}
	started := time.Now()
	step := func(what string) {
		if *logLevel == "debug" {
			fmt.Printf("%-24s %s\n", what, time.Since(started).Round(time.Millisecond))
		}
	}
	kubeconfigPath := *kubeconfig
	if kubeconfigPath == "" {
		kube, err := localstack.StartKube(ctx, localstack.Options{
			ToolsDir: tools, DataDir: filepath.Join(*dataDir, "kube"), Persist: true, KubePort: 6443, EtcdPort: 2379,
		})
		if err != nil {
			return fmt.Errorf("start kube-apiserver: %w", err)
		}
		defer logStop("kubernetes", kube.Stop)
		kubeconfigPath = kube.KubeconfigPath
		fmt.Printf("kube-apiserver ready at %s (%s)\n", kube.Host, time.Since(started).Round(time.Millisecond))
	} else {
		fmt.Printf("using the cluster of %s\n", kubeconfigPath)
	}
	restCfg, err := clientcmd.BuildConfigFromFlags("", kubeconfigPath)
	if err != nil {
		return fmt.Errorf("load kubeconfig %s: %w", kubeconfigPath, err)
	}
	crdDir, err := os.MkdirTemp("", "odaflow-crds-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(crdDir)
	if err := odaflowchart.WriteCRDs(crdDir); err != nil {
		return err
	}
	if err := localstack.GatewayCRDs(crdDir); err != nil {
		fmt.Fprintf(os.Stderr, "warning: the Istio and Gateway API CRDs are not installed (%v); ExposedAPIs will report why they cannot be exposed\n", err)
	}
	if err := localstack.InstallCRDs(ctx, restCfg, crdDir); err != nil {
		return fmt.Errorf("install the ODA CRDs: %w", err)
	}
	step("CRDs installed")

	if *kubeconfig == "" {
		// Components applied as v1beta2..v1beta4 are converted by odaflow's
		// own webhook, as in a cluster with the chart's webhook enabled.
		stopWebhook, err := startConversionWebhook(ctx, restCfg)
		if err != nil {
			return fmt.Errorf("start the conversion webhook: %w", err)
		}
		defer stopWebhook()
	}

	temporal, err := localstack.StartTemporal(ctx, localstack.Options{
		ToolsDir: tools, DataDir: filepath.Join(*dataDir, "temporal"), Persist: true,
		TemporalPort: 7233, TemporalUIPort: 8233, SearchAttributes: workflows.SearchAttributeTypes(),
	})
	if err != nil {
		return fmt.Errorf("start the Temporal dev server: %w", err)
	}
	defer logStop("temporal", temporal.Stop)
	step("Temporal ready")

	common := config.Common{
		Kubeconfig: kubeconfigPath, TemporalAddress: temporal.Address, TemporalNamespace: temporal.Namespace,
		TaskQueue: "odaflow", LogLevel: *logLevel, IngressSelector: "istio=ingressgateway",
		SearchAttributes: true,
	}
	wcfg := config.Worker{Common: common, Gateway: "istio", IstioGateway: "components/component-gateway"}
	wcfg.HTTPAddress = "127.0.0.1:8081"
	vcfg := config.Watcher{Common: common}
	vcfg.HTTPAddress = "127.0.0.1:8082"
	apps := []*fx.App{worker.New(wcfg), watcher.NewApp(vcfg)}
	for _, app := range apps {
		if err := app.Start(ctx); err != nil {
			return err
		}
		defer func(app *fx.App) {
			stopCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_ = app.Stop(stopCtx)
		}(app)
	}

	step("worker and watcher started")
	if *sample && *kubeconfig == "" {
		// The local cluster has no load balancer and no kubelet: stand in for
		// them so the sample's APIs get a url and a ready implementation.
		if err := simulateCluster(ctx, restCfg, *namespace); err != nil {
			return fmt.Errorf("simulate the gateway and endpoints: %w", err)
		}
	}
	if *sample {
		if err := kubeapply.Apply(ctx, restCfg, namespaceManifest(*namespace), ""); err != nil {
			return fmt.Errorf("create namespace %s: %w", *namespace, err)
		}
		if err := kubeapply.Apply(ctx, restCfg, sampleComponent, *namespace); err != nil {
			return fmt.Errorf("apply the sample Component: %w", err)
		}
	}
	fmt.Printf(`
odaflow dev is running (ready in %s). Ctrl-C stops everything it started.

  Temporal Web UI   %s/namespaces/default/workflows
  kubeconfig        %s
  watch components  kubectl --kubeconfig %s get components -A -w
  worker metrics    http://127.0.0.1:8081/metrics   watcher metrics http://127.0.0.1:8082/metrics
  state and logs    %s

`, time.Since(started).Round(time.Millisecond), temporal.UIAddress, kubeconfigPath, kubeconfigPath, *dataDir)
	<-ctx.Done()
	fmt.Println("\nstopping...")
	return nil
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
