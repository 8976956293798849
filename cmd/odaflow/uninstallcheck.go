package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/odaflow/odaflow/internal/uninstallguard"
)

// runUninstallCheck exits non-zero while ODA resources that need odaflow to
// be deleted remain in the watched namespaces: the chart's pre-delete hook,
// so that `helm uninstall` refuses instead of leaving them stuck on
// odaflow's finalizer.
func runUninstallCheck(args []string) error {
	fs := flag.NewFlagSet("odaflow uninstall-check", flag.ContinueOnError)
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig file; empty: $KUBECONFIG, then ~/.kube/config, then the in-cluster service account")
	// The same variable as the worker's and the watcher's, so the hook
	// checks exactly the namespaces odaflow manages.
	namespaces := fs.String("namespaces", os.Getenv("ODAFLOW_NAMESPACES"), "comma-separated namespaces or globs to check (env ODAFLOW_NAMESPACES); empty: all")
	timeout := fs.Duration("timeout", time.Minute, "give up after this long")
	if err := fs.Parse(args); err != nil {
		return flagError(err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %v", fs.Args())
	}
	rc, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		statusLoadingRules(*kubeconfig), &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return fmt.Errorf("kubernetes client configuration: %w", err)
	}
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return fmt.Errorf("kubernetes client: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	objs, err := uninstallguard.List(ctx, dyn, strings.Split(*namespaces, ","))
	if err != nil {
		return fmt.Errorf("list the ODA resources: %w", err)
	}
	if err := uninstallguard.Decide(objs); err != nil {
		return err
	}
	fmt.Println("no ODA resource needs odaflow: uninstall may proceed")
	return nil
}
