package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"go.temporal.io/sdk/client"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/cli-runtime/pkg/printers"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/odaflow/odaflow/internal/config"
	"github.com/odaflow/odaflow/internal/runtime"
	"github.com/odaflow/odaflow/oda"
	"github.com/odaflow/odaflow/workflows"
)

// statusOptions are the flags of `odaflow status`, named as kubectl's.
type statusOptions struct {
	kubeconfig, context, namespace string
	allNamespaces                  bool
	output                         string // "", wide, or a printer's: json, yaml, name, jsonpath=…, jsonpath-file=…
	selector                       string // -l, a label selector
	watch, noHeaders               bool
	ui, temporalNamespace          string
	kinds                          []oda.Kind
	name                           string
}

// runStatus lists the ODA resources as kubectl get does, with the Ready
// condition and the link to each workflow in the Temporal Web UI.
//
//	odaflow status [flags] [kind [name]]
func runStatus(args []string) error {
	o, err := parseStatus(args, os.Stderr)
	if err != nil {
		return err
	}
	loader := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		statusLoadingRules(o.kubeconfig), &clientcmd.ConfigOverrides{CurrentContext: o.context})
	rc, err := loader.ClientConfig()
	if err != nil {
		return fmt.Errorf("kubernetes client configuration: %w", err)
	}
	ns := ""
	if !o.allNamespaces {
		if ns = o.namespace; ns == "" {
			if ns, _, err = loader.Namespace(); err != nil {
				return fmt.Errorf("namespace of the current context: %w", err)
			}
		}
	}
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	if o.watch {
		// -w lasts until interrupted, as kubectl get -w does.
		ctx, cancel = signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	}
	defer cancel()
	return getStatus(ctx, dyn, os.Stdout, o, ns, time.Now)
}

// getStatus lists the resources of o's kinds in ns (every namespace when
// empty) and prints them; with -w it then prints each change as it comes,
// until ctx ends.
func getStatus(ctx context.Context, dyn dynamic.Interface, out io.Writer, o statusOptions, ns string, now func() time.Time) error {
	var items []unstructured.Unstructured
	var kindsOf []oda.Kind
	versions := make([]string, len(o.kinds))
	for i, k := range o.kinds {
		list, err := dyn.Resource(k.GVR()).Namespace(ns).List(ctx, metav1.ListOptions{LabelSelector: o.selector})
		if err != nil {
			return fmt.Errorf("list %s: %w", k.Resource, err)
		}
		versions[i] = list.GetResourceVersion()
		for _, it := range list.Items {
			if o.name != "" && it.GetName() != o.name {
				continue
			}
			items = append(items, it)
			kindsOf = append(kindsOf, k)
		}
	}
	if err := printStatus(out, o, items, kindsOf, now()); err != nil || !o.watch {
		return err
	}
	return watchStatus(ctx, dyn, out, o, ns, versions, len(items) > 0, now)
}

// statusEvent is one change of one kind's resource, for -w.
type statusEvent struct {
	kind oda.Kind
	ev   watch.Event
}

// watchStatus prints each change after the list, as kubectl get -w does:
// table rows without a header (the header comes with the first row when
// the list printed none), or each object through the -o printer. It ends
// when ctx ends (nil) or every watch has closed.
func watchStatus(ctx context.Context, dyn dynamic.Interface, out io.Writer, o statusOptions, ns string, versions []string, headed bool, now func() time.Time) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // ends the forwarders below when this returns early
	events := make(chan statusEvent)
	open := 0
	for i, k := range o.kinds {
		w, err := dyn.Resource(k.GVR()).Namespace(ns).Watch(ctx, metav1.ListOptions{LabelSelector: o.selector, ResourceVersion: versions[i]})
		if err != nil {
			return fmt.Errorf("watch %s: %w", k.Resource, err)
		}
		defer w.Stop()
		open++
		go func() {
			for ev := range w.ResultChan() {
				select {
				case events <- statusEvent{kind: k, ev: ev}:
				case <-ctx.Done():
					return
				}
			}
			select {
			case events <- statusEvent{kind: k}: // closed
			case <-ctx.Done():
			}
		}()
	}
	row := o
	row.noHeaders = o.noHeaders || headed
	for open > 0 {
		select {
		case <-ctx.Done():
			return nil
		case e := <-events:
			if e.ev.Type == "" { // that kind's watch closed
				open--
				continue
			}
			if e.ev.Type == watch.Error {
				return fmt.Errorf("watch %s: %w", e.kind.Resource, apierrors.FromObject(e.ev.Object))
			}
			obj, ok := e.ev.Object.(*unstructured.Unstructured)
			if !ok || (o.name != "" && obj.GetName() != o.name) {
				continue
			}
			if err := printObjects(out, row, []unstructured.Unstructured{*obj}, []oda.Kind{e.kind}, now(), true); err != nil {
				return err
			}
			row.noHeaders = true
		}
	}
	return nil
}

// statusLoadingRules are kubectl's: --kubeconfig when given, else
// $KUBECONFIG (a list of files), else ~/.kube/config; in a pod with none
// of them, the in-cluster service account.
func statusLoadingRules(kubeconfig string) *clientcmd.ClientConfigLoadingRules {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	return rules
}

// parseStatus reads flags and up to two arguments, a kind and a name, in
// any order as kubectl does (Go's flag package stops at the first argument).
func parseStatus(args []string, stderr io.Writer) (statusOptions, error) {
	var o statusOptions
	fs := flag.NewFlagSet("odaflow status", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: odaflow status [flags] [kind [name]]\n\nkind: "+kindChoices()+" (all kinds when omitted)\n"+
			"e.g. odaflow status -A -o wide components; odaflow status -l app=x -o name; odaflow status -w components")
		fs.PrintDefaults()
	}
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig file; empty: $KUBECONFIG, then the running make dev stack's, then ~/.kube/config, then the in-cluster service account")
	fs.StringVar(&o.context, "context", "", "kubeconfig context; empty: the current context")
	fs.StringVar(&o.namespace, "n", "", "namespace; empty: the context's namespace (default when it has none)")
	fs.StringVar(&o.namespace, "namespace", "", "same as -n")
	fs.BoolVar(&o.allNamespaces, "A", false, "every namespace")
	fs.BoolVar(&o.allNamespaces, "all-namespaces", false, "same as -A")
	fs.StringVar(&o.output, "o", "", "output: wide, json, yaml, name, jsonpath=TEMPLATE or jsonpath-file=FILE, as kubectl's; empty: a table")
	fs.StringVar(&o.output, "output", "", "same as -o")
	fs.StringVar(&o.selector, "l", "", "label selector to filter on, as kubectl's (e.g. -l app=x,tier!=db)")
	fs.StringVar(&o.selector, "selector", "", "same as -l")
	fs.BoolVar(&o.watch, "w", false, "after listing, print each change as it comes, until interrupted")
	fs.BoolVar(&o.watch, "watch", false, "same as -w")
	fs.BoolVar(&o.noHeaders, "no-headers", false, "no header line in the table")
	fs.StringVar(&o.ui, "ui", "http://127.0.0.1:8233", "Temporal Web UI address, for the links (-o wide)")
	// The worker's own setting and variable, so the links follow the same
	// ODAFLOW_TEMPORAL_NAMESPACE as the stack.
	config.Flags{FS: fs, Errs: new([]error)}.String(&o.temporalNamespace, "temporal-namespace", "default", "Temporal namespace of the workflows, for the links")
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return o, flagError(err)
		}
		if fs.NArg() == 0 {
			break
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if o.kubeconfig == "" {
		o.kubeconfig = devStackKubeconfig()
	}
	if o.output != "" && o.output != "wide" {
		if _, err := objectPrinter(o.output); err != nil {
			return o, err
		}
	}
	if _, err := labels.Parse(o.selector); err != nil {
		return o, fmt.Errorf("-l %q: %w", o.selector, err)
	}
	if len(pos) > 2 {
		return o, fmt.Errorf("unexpected arguments %v: want [kind [name]]", pos[2:])
	}
	o.kinds = oda.Kinds
	if len(pos) > 0 {
		k, ok := kindByArg(pos[0])
		if !ok {
			return o, fmt.Errorf("unknown kind %q: want one of %s", pos[0], kindChoices())
		}
		o.kinds = []oda.Kind{k}
	}
	if len(pos) > 1 {
		o.name = pos[1]
	}
	return o, nil
}

// statusShortNames are the CRDs' short names (charts/odaflow/files/crds).
var statusShortNames = map[string]oda.Kind{
	"depapi": oda.KindDependentAPI, "depapis": oda.KindDependentAPI,
	"sman": oda.KindSecretsManagement, "smans": oda.KindSecretsManagement,
}

// kindByArg accepts a kind as kubectl does: Kind, singular, plural or a
// short name, in any case.
func kindByArg(arg string) (oda.Kind, bool) {
	a := strings.ToLower(arg)
	for _, k := range oda.Kinds {
		if a == strings.ToLower(k.Name) || a == k.Resource {
			return k, true
		}
	}
	k, ok := statusShortNames[a]
	return k, ok
}

func kindChoices() string {
	var names []string
	for _, k := range oda.Kinds {
		names = append(names, k.Resource)
	}
	return strings.Join(names, ", ")
}

// statusRow is one resource's line.
type statusRow struct {
	Namespace, Name                     string
	Ready, Status, Reason, Age, Message string
	APIs                                string // Component only: ready/total
	WebUI                               string
}

// readyCondition is the Ready condition of an ODA resource's status.
func readyCondition(obj map[string]any) (status, reason, message string, ok bool) {
	conds, _, _ := unstructured.NestedSlice(obj, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Ready" {
			status, _ = m["status"].(string)
			reason, _ = m["reason"].(string)
			message, _ = m["message"].(string)
			return status, reason, message, true
		}
	}
	return "", "", "", false
}

// rowOf reads a resource's line: READY is its Ready condition (Unknown
// before odaflow wrote one); STATUS the kind's own phase (a Component's
// deployment_status, a notification's status, the implementation's
// readiness of the API and secrets kinds).
func rowOf(obj *unstructured.Unstructured, k oda.Kind, o statusOptions, now time.Time) statusRow {
	r := statusRow{Namespace: obj.GetNamespace(), Name: obj.GetName(), Ready: "Unknown"}
	if st, reason, msg, ok := readyCondition(obj.Object); ok {
		r.Ready, r.Reason, r.Message = st, reason, msg
	}
	switch k {
	case oda.KindComponent:
		r.Status, _, _ = unstructured.NestedString(obj.Object, "status", "summary/status", "deployment_status")
		ready, total := 0, 0
		for _, seg := range oda.Segments {
			items, _, _ := unstructured.NestedSlice(obj.Object, "status", seg.ExposedStatusKey())
			for _, it := range items {
				m, _ := it.(map[string]any)
				total++
				if url, _ := m["url"].(string); url != "" && m["ready"] == true {
					ready++
				}
			}
		}
		r.APIs = fmt.Sprintf("%d/%d", ready, total)
	case oda.KindPublishedNotification, oda.KindSubscribedNotification:
		r.Status, _, _ = unstructured.NestedString(obj.Object, "status", "status")
	default:
		if ready, found, _ := unstructured.NestedBool(obj.Object, "status", "implementation", "ready"); found {
			r.Status = map[bool]string{true: "implementation ready", false: "implementation not ready"}[ready]
		}
	}
	if ts := obj.GetCreationTimestamp(); !ts.IsZero() {
		r.Age = duration.HumanDuration(now.Sub(ts.Time))
	} else {
		r.Age = "<unknown>"
	}
	if k != oda.KindPublishedNotification && k != oda.KindSubscribedNotification {
		id := oda.WorkflowID(k.Name, obj.GetNamespace(), obj.GetName())
		r.WebUI = fmt.Sprintf("%s/namespaces/%s/workflows/%s", strings.TrimSuffix(o.ui, "/"), o.temporalNamespace, strings.ReplaceAll(id, "/", "%2F"))
	}
	return r
}

// objectPrinter is kubectl's printer for an -o other than the table's:
// json, yaml, name, jsonpath=TEMPLATE or jsonpath-file=FILE.
func objectPrinter(output string) (printers.ResourcePrinter, error) {
	format, arg, _ := strings.Cut(output, "=")
	switch format {
	case "json":
		return &printers.JSONPrinter{}, nil
	case "yaml":
		return &printers.YAMLPrinter{}, nil
	case "name":
		return &printers.NamePrinter{}, nil
	case "jsonpath", "jsonpath-file":
		if arg == "" {
			return nil, fmt.Errorf("-o %s: a template is required, as %s=<template>", format, format)
		}
		if format == "jsonpath-file" {
			b, err := os.ReadFile(arg)
			if err != nil {
				return nil, fmt.Errorf("-o %s: %w", format, err)
			}
			arg = string(b)
		}
		p, err := printers.NewJSONPathPrinter(arg)
		if err != nil {
			return nil, fmt.Errorf("-o %s: %w", format, err)
		}
		p.AllowMissingKeys(true) // kubectl's --allow-missing-template-keys default
		return p, nil
	}
	return nil, fmt.Errorf("-o %q: want wide, json, yaml, name, jsonpath=TEMPLATE or jsonpath-file=FILE", output)
}

// printStatus writes the table, or with an -o printer what kubectl get
// writes: a List of the objects, or the object alone when a name was asked
// for. With more than one kind each NAME is kind/name, as kubectl get
// prints several kinds.
func printStatus(out io.Writer, o statusOptions, items []unstructured.Unstructured, kinds []oda.Kind, now time.Time) error {
	return printObjects(out, o, items, kinds, now, false)
}

// printObjects is printStatus; each says whether objects are printed one
// by one (a watch's events) rather than as a List.
func printObjects(out io.Writer, o statusOptions, items []unstructured.Unstructured, kinds []oda.Kind, now time.Time, each bool) error {
	if o.output != "" && o.output != "wide" {
		p, err := objectPrinter(o.output)
		if err != nil {
			return err
		}
		if each || (o.name != "" && len(items) == 1) {
			for i := range items {
				if err := p.PrintObj(&items[i], out); err != nil {
					return err
				}
			}
			return nil
		}
		list := &unstructured.UnstructuredList{Object: map[string]any{
			"apiVersion": "v1", "kind": "List", "metadata": map[string]any{"resourceVersion": ""},
		}, Items: items}
		return p.PrintObj(list, out)
	}
	if len(items) == 0 && !each {
		where := "in namespace " + o.namespace
		if o.allNamespaces {
			where = "in any namespace"
		} else if o.namespace == "" {
			where = "in the context's namespace"
		}
		_, err := fmt.Fprintf(out, "No ODA resources found %s.\n", where)
		return err
	}
	w := tabwriter.NewWriter(out, 0, 0, 3, ' ', 0)
	var head []string
	if o.allNamespaces {
		head = append(head, "NAMESPACE")
	}
	head = append(head, "NAME", "READY", "STATUS", "REASON", "AGE")
	if o.output == "wide" {
		head = append(head, "APIS", "MESSAGE", "WEB UI")
	}
	if !o.noHeaders {
		fmt.Fprintln(w, strings.Join(head, "\t"))
	}
	for i := range items {
		fmt.Fprintln(w, strings.Join(statusCells(rowOf(&items[i], kinds[i], o, now), kinds[i], o), "\t"))
	}
	return w.Flush()
}

// statusCells are a row's table cells under o's columns.
func statusCells(r statusRow, k oda.Kind, o statusOptions) []string {
	name := r.Name
	if len(o.kinds) > 1 {
		name = strings.ToLower(k.Name) + "/" + name
	}
	var cols []string
	if o.allNamespaces {
		cols = append(cols, r.Namespace)
	}
	cols = append(cols, name, r.Ready, orNone(r.Status), orNone(r.Reason), r.Age)
	if o.output == "wide" {
		cols = append(cols, orNone(r.APIs), orNone(r.Message), orNone(r.WebUI))
	}
	return cols
}

// orNone is kubectl's <none> for an empty cell.
func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

// runExplain asks a resource's workflow why it is not done.
//
//	odaflow explain Component/<namespace>/<name>
func runExplain(args []string) error {
	var cfg config.Common
	fs := flag.NewFlagSet("odaflow explain", flag.ContinueOnError)
	cfg.Bind(fs)
	if err := fs.Parse(args); err != nil {
		return flagError(err)
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("usage: odaflow explain <Kind>/<namespace>/<name>")
	}
	if _, err := oda.ParseWorkflowID(fs.Arg(0)); err != nil {
		return err
	}
	cfg.ApplyTemporalEnv(fs)
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("invalid configuration:\n%w", err)
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

// devStackKubeconfig is the kubeconfig of the stack `odaflow dev` runs, when
// one is running from this checkout and neither $KUBECONFIG nor an in-cluster
// service account says otherwise: after `make dev`, `odaflow status` shows
// that stack without flags. Empty otherwise (kubectl's loading rules apply).
func devStackKubeconfig() string {
	if os.Getenv("KUBECONFIG") != "" || os.Getenv("KUBERNETES_SERVICE_HOST") != "" {
		return ""
	}
	p := devKubeconfig()
	if _, err := os.Stat(p); err != nil {
		return ""
	}
	return p
}
