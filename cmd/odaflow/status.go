package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"go.temporal.io/sdk/client"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/odaflow/odaflow/internal/config"
	"github.com/odaflow/odaflow/internal/runtime"
	"github.com/odaflow/odaflow/oda"
	"github.com/odaflow/odaflow/workflows"
)

// runStatus prints each Component's phase, its children and its Web UI link.
//
//	odaflow status [-n namespace] [component]
func runStatus(args []string) error {
	var cfg config.Common
	fs := flag.NewFlagSet("odaflow status", flag.ContinueOnError)
	cfg.Bind(fs)
	ns := fs.String("n", "", "namespace (all when empty)")
	ui := fs.String("ui", "http://127.0.0.1:8233", "Temporal Web UI address, for the links")
	if err := fs.Parse(args); err != nil {
		return exitError(2)
	}
	useDevKubeconfig(&cfg)
	rc, err := runtime.RESTConfig(cfg)
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	list, err := dyn.Resource(oda.KindComponent.GVR()).Namespace(*ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list components: %w", err)
	}
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "NAMESPACE\tCOMPONENT\tDEPLOYMENT_STATUS\tAPIS READY\tREASON\tWEB UI")
	for _, c := range list.Items {
		if fs.NArg() > 0 && c.GetName() != fs.Arg(0) {
			continue
		}
		phase, _, _ := unstructured.NestedString(c.Object, "status", "summary/status", "deployment_status")
		ready, total := 0, 0
		for _, seg := range oda.Segments {
			items, _, _ := unstructured.NestedSlice(c.Object, "status", seg.ExposedStatusKey())
			for _, it := range items {
				m, _ := it.(map[string]any)
				total++
				if url, _ := m["url"].(string); url != "" && m["ready"] == true {
					ready++
				}
			}
		}
		reason := ""
		if conds, _, _ := unstructured.NestedSlice(c.Object, "status", "conditions"); len(conds) > 0 {
			m, _ := conds[0].(map[string]any)
			reason, _ = m["reason"].(string)
		}
		id := oda.WorkflowID(oda.KindComponent.Name, c.GetNamespace(), c.GetName())
		link := fmt.Sprintf("%s/namespaces/%s/workflows/%s", strings.TrimSuffix(*ui, "/"), cfg.TemporalNamespace, strings.ReplaceAll(id, "/", "%2F"))
		fmt.Fprintf(w, "%s\t%s\t%s\t%d/%d\t%s\t%s\n", c.GetNamespace(), c.GetName(), phase, ready, total, reason, link)
	}
	return w.Flush()
}

// runExplain asks a resource's workflow why it is not done.
//
//	odaflow explain Component/<namespace>/<name>
func runExplain(args []string) error {
	var cfg config.Common
	fs := flag.NewFlagSet("odaflow explain", flag.ContinueOnError)
	cfg.Bind(fs)
	if err := fs.Parse(args); err != nil {
		return exitError(2)
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("usage: odaflow explain <Kind>/<namespace>/<name>")
	}
	if _, err := oda.ParseWorkflowID(fs.Arg(0)); err != nil {
		return err
	}
	opts, err := runtime.TemporalOptions(cfg, runtime.NewLogger(config.Common{LogLevel: "error"}), nil)
	if err != nil {
		return err
	}
	cl, err := client.Dial(opts)
	if err != nil {
		return fmt.Errorf("connect to Temporal at %s: %w", cfg.TemporalAddress, err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	v, err := cl.QueryWorkflow(ctx, fs.Arg(0), "", workflows.QueryExplain)
	if err != nil {
		return fmt.Errorf("query %s: %w", fs.Arg(0), err)
	}
	var e workflows.Explanation
	if err := v.Get(&e); err != nil {
		return err
	}
	fmt.Printf("%s (uid %s): %s\n", e.Resource, e.UID, e.DeploymentStatus)
	if e.Failure != nil {
		fmt.Printf("  failed: %s: %s\n", e.Failure.Reason, e.Failure.Message)
	}
	for _, ch := range e.Children {
		state := "ready"
		switch {
		case ch.Kind == oda.KindIdentityConfig.Name && ch.IdentityProvider == "":
			state = "waiting for an identity provider"
		case ch.Kind == oda.KindExposedAPI.Name && ch.URL == "":
			state = "no url yet (gateway address)"
		case (ch.Kind == oda.KindExposedAPI.Name || ch.Kind == oda.KindDependentAPI.Name || ch.Kind == oda.KindSecretsManagement.Name) && !ch.Ready:
			state = "not ready"
		}
		fmt.Printf("  %-22s %-60s %s\n", ch.Kind, ch.Name, state)
	}
	return nil
}

// useDevKubeconfig points a command without a kubeconfig, outside a
// cluster, at the stack `odaflow dev` runs, when there is one.
func useDevKubeconfig(cfg *config.Common) {
	if cfg.Kubeconfig != "" || os.Getenv("KUBERNETES_SERVICE_HOST") != "" {
		return
	}
	if p := devKubeconfig(); fileExists(p) {
		cfg.Kubeconfig = p
	}
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
