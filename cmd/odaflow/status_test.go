package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/tools/clientcmd"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/odaflow/odaflow/oda"
)

func TestParseStatus(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		kinds   int
		kind    string
		name    string
		all     bool
		output  string
		ns      string
		wantErr string
	}{
		{args: nil, kinds: len(oda.Kinds)},
		{args: []string{"-A"}, kinds: len(oda.Kinds), all: true},
		{args: []string{"components", "-A", "-o", "wide"}, kinds: 1, kind: "Component", all: true, output: "wide"},
		{args: []string{"-n", "odacompns-1", "ExposedAPI", "r1-api", "-o", "json"}, kinds: 1, kind: "ExposedAPI", name: "r1-api", output: "json", ns: "odacompns-1"},
		{args: []string{"sman", "--namespace=x"}, kinds: 1, kind: "SecretsManagement", ns: "x"},
		{args: []string{"depapis", "--all-namespaces"}, kinds: 1, kind: "DependentAPI", all: true},
		{args: []string{"-o", "yaml", "-l", "app=x", "-w", "--no-headers"}, kinds: len(oda.Kinds), output: "yaml"},
		{args: []string{"--output=jsonpath={.items[*].metadata.name}"}, kinds: len(oda.Kinds), output: "jsonpath={.items[*].metadata.name}"},
		{args: []string{"-o", "table"}, wantErr: `-o "table"`},
		{args: []string{"-o", "jsonpath"}, wantErr: "a template is required"},
		{args: []string{"-o", "jsonpath={.items[}"}, wantErr: "-o jsonpath"},
		{args: []string{"-l", "app in (x"}, wantErr: `-l "app in (x"`},
		{args: []string{"widgets"}, wantErr: `unknown kind "widgets"`},
		{args: []string{"component", "a", "b"}, wantErr: "unexpected arguments [b]"},
	} {
		o, err := parseStatus(tc.args, io.Discard)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%v: error %v, want %q", tc.args, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%v: %v", tc.args, err)
			continue
		}
		if len(o.kinds) != tc.kinds || (tc.kind != "" && o.kinds[0].Name != tc.kind) {
			t.Errorf("%v: kinds %v, want %d (%s)", tc.args, o.kinds, tc.kinds, tc.kind)
		}
		if o.name != tc.name || o.allNamespaces != tc.all || o.output != tc.output || o.namespace != tc.ns {
			t.Errorf("%v: name %q all %v output %q ns %q", tc.args, o.name, o.allNamespaces, o.output, o.namespace)
		}
	}
}

// TestStatusTemporalNamespaceFollowsTheStack: the links name the Temporal
// namespace the worker uses, from the same ODAFLOW_TEMPORAL_NAMESPACE, and
// the flag wins over it.
func TestStatusTemporalNamespaceFollowsTheStack(t *testing.T) {
	for _, tc := range []struct {
		env  string
		args []string
		want string
	}{
		{want: "default"},
		{env: "canvas-prod", want: "canvas-prod"},
		{env: "canvas-prod", args: []string{"--temporal-namespace", "other"}, want: "other"},
	} {
		t.Setenv("ODAFLOW_TEMPORAL_NAMESPACE", tc.env)
		o, err := parseStatus(tc.args, io.Discard)
		if err != nil {
			t.Fatalf("env %q args %v: %v", tc.env, tc.args, err)
		}
		if o.temporalNamespace != tc.want {
			t.Errorf("env %q args %v: temporal namespace %q, want %q", tc.env, tc.args, o.temporalNamespace, tc.want)
		}
	}
}

// TestStatusKubeconfigAsKubectl: without --kubeconfig the files of
// $KUBECONFIG are read (not the in-cluster account), the current context's
// namespace is the default namespace, --context picks another context and
// its namespace, and --kubeconfig wins over $KUBECONFIG.
func TestStatusKubeconfigAsKubectl(t *testing.T) {
	dir := t.TempDir()
	write := func(name, current string) string {
		p := filepath.Join(dir, name)
		body := `apiVersion: v1
kind: Config
clusters:
- name: a
  cluster: {server: "https://a.example:6443"}
- name: b
  cluster: {server: "https://b.example:6443"}
users:
- name: u
  user: {token: t}
contexts:
- name: ctx-a
  context: {cluster: a, user: u, namespace: components}
- name: ctx-b
  context: {cluster: b, user: u}
current-context: ` + current + "\n"
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	envFile := write("env", "ctx-a")
	explicit := write("explicit", "ctx-b")
	t.Setenv("KUBECONFIG", envFile)
	t.Setenv("HOME", dir)

	for _, tc := range []struct {
		kubeconfig, context, host, ns string
	}{
		{"", "", "https://a.example:6443", "components"},
		{"", "ctx-b", "https://b.example:6443", "default"},
		{explicit, "", "https://b.example:6443", "default"},
		{explicit, "ctx-a", "https://a.example:6443", "components"},
	} {
		loader := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(statusLoadingRules(tc.kubeconfig), &clientcmd.ConfigOverrides{CurrentContext: tc.context})
		rc, err := loader.ClientConfig()
		if err != nil {
			t.Fatalf("%+v: %v", tc, err)
		}
		ns, _, err := loader.Namespace()
		if err != nil {
			t.Fatal(err)
		}
		if rc.Host != tc.host || ns != tc.ns {
			t.Errorf("kubeconfig %q context %q: host %s namespace %s, want %s %s", filepath.Base(tc.kubeconfig), tc.context, rc.Host, ns, tc.host, tc.ns)
		}
	}
}

func odaObject(kind oda.Kind, ns, name string, created time.Time, status map[string]any) unstructured.Unstructured {
	u := unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "oda.tmforum.org/v1", "kind": kind.Name,
		"metadata": map[string]any{"namespace": ns, "name": name},
		"status":   status,
	}}
	u.SetCreationTimestamp(metav1.NewTime(created))
	return u
}

// TestPrintStatus: READY and REASON come from the Ready condition wherever
// it is in the list, AGE from the creation time, NAMESPACE only with -A,
// kind/name with several kinds, and -o wide adds the APIs, the message and
// the Web UI link.
func TestPrintStatus(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	comp := odaObject(oda.KindComponent, "components", "r1-productcatalog", now.Add(-5*time.Minute), map[string]any{
		"summary/status": map[string]any{"deployment_status": "In-Progress-IDConfOp"},
		"conditions": []any{
			map[string]any{"type": "Progressing", "status": "True", "reason": "Applying"},
			map[string]any{"type": "Ready", "status": "False", "reason": "WaitingForIdentity", "message": "the IdentityConfig is not ready"},
		},
		"coreAPIs": []any{
			map[string]any{"name": "a", "url": "https://x/a", "ready": true},
			map[string]any{"name": "b", "url": "", "ready": false},
		},
	})
	api := odaObject(oda.KindExposedAPI, "components", "r1-productcatalog-api", now.Add(-49*time.Hour), map[string]any{
		"implementation": map[string]any{"ready": true},
		"conditions":     []any{map[string]any{"type": "Ready", "status": "True", "reason": "Exposed"}},
	})
	fresh := odaObject(oda.KindDependentAPI, "other", "r2-dep", now.Add(-30*time.Second), nil)
	items := []unstructured.Unstructured{comp, api, fresh}
	kinds := []oda.Kind{oda.KindComponent, oda.KindExposedAPI, oda.KindDependentAPI}

	table := func(o statusOptions) [][]string {
		var b bytes.Buffer
		if err := printStatus(&b, o, items, kinds, now); err != nil {
			t.Fatal(err)
		}
		var rows [][]string
		for _, l := range strings.Split(strings.TrimSpace(b.String()), "\n") {
			rows = append(rows, strings.Fields(l))
		}
		return rows
	}
	o := statusOptions{kinds: oda.Kinds, allNamespaces: true, ui: "http://ui:8233/", temporalNamespace: "prod"}
	got := table(o)
	want := [][]string{
		{"NAMESPACE", "NAME", "READY", "STATUS", "REASON", "AGE"},
		{"components", "component/r1-productcatalog", "False", "In-Progress-IDConfOp", "WaitingForIdentity", "5m"},
		{"components", "exposedapi/r1-productcatalog-api", "True", "implementation", "ready", "Exposed", "2d1h"},
		{"other", "dependentapi/r2-dep", "Unknown", "<none>", "<none>", "30s"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("-A table:\n got %q\nwant %q", got, want)
	}

	o = statusOptions{kinds: []oda.Kind{oda.KindComponent}, output: "wide", ui: "http://ui:8233/", temporalNamespace: "prod"}
	items, kinds = items[:1], kinds[:1]
	var b bytes.Buffer
	if err := printStatus(&b, o, items, kinds, now); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, s := range []string{"NAME ", "APIS", "MESSAGE", "WEB UI", "\nr1-productcatalog ", "1/2", "the IdentityConfig is not ready",
		"http://ui:8233/namespaces/prod/workflows/Component%2Fcomponents%2Fr1-productcatalog"} {
		if !strings.Contains(out, s) {
			t.Errorf("-o wide lacks %q:\n%s", s, out)
		}
	}
	if strings.Contains(out, "NAMESPACE") || strings.Contains(out, "component/") {
		t.Errorf("one kind, one namespace: no NAMESPACE column and no kind prefix:\n%s", out)
	}

	b.Reset()
	o.output = "json"
	if err := printStatus(&b, o, items, kinds, now); err != nil {
		t.Fatal(err)
	}
	var list struct {
		Kind  string           `json:"kind"`
		Items []map[string]any `json:"items"`
	}
	if err := json.Unmarshal(b.Bytes(), &list); err != nil {
		t.Fatalf("-o json: %v\n%s", err, b.String())
	}
	if list.Kind != "List" || len(list.Items) != 1 || list.Items[0]["kind"] != "Component" {
		t.Errorf("-o json: %s", b.String())
	}
}

// statusFixtures are two Components and an ExposedAPI, one Component
// labelled app=catalog, in a fake apiserver.
func statusFixtures(now time.Time) (*fake.FakeDynamicClient, []unstructured.Unstructured) {
	a := odaObject(oda.KindComponent, "components", "r1-catalog", now.Add(-time.Hour), map[string]any{
		"summary/status": map[string]any{"deployment_status": "Complete"},
		"conditions":     []any{map[string]any{"type": "Ready", "status": "True", "reason": "Deployed"}},
	})
	a.SetLabels(map[string]string{"app": "catalog"})
	b := odaObject(oda.KindComponent, "components", "r2-order", now.Add(-time.Minute), nil)
	api := odaObject(oda.KindExposedAPI, "components", "r1-catalog-api", now.Add(-time.Hour), nil)
	listKinds := map[schema.GroupVersionResource]string{}
	for _, k := range oda.Kinds {
		listKinds[k.GVR()] = k.Name + "List"
	}
	objs := []unstructured.Unstructured{a, b, api}
	dyn := fake.NewSimpleDynamicClientWithCustomListKinds(k8sruntime.NewScheme(), listKinds, &a, &b, &api)
	return dyn, objs
}

// TestStatusPrinters: -o json, yaml, name and jsonpath print what kubectl
// get prints for the same objects (a v1 List, or the object alone when a
// name was asked for), -l filters the list and --no-headers drops the
// table's header.
func TestStatusPrinters(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	dyn, objs := statusFixtures(now)
	comp := []oda.Kind{oda.KindComponent}
	get := func(o statusOptions) string {
		t.Helper()
		if o.kinds == nil {
			o.kinds = comp
		}
		var b bytes.Buffer
		if err := getStatus(context.Background(), dyn, &b, o, "components", func() time.Time { return now }); err != nil {
			t.Fatalf("%+v: %v", o, err)
		}
		return b.String()
	}
	// What kubectl's printers write for a List of the two Components.
	list := &unstructured.UnstructuredList{Object: map[string]any{"apiVersion": "v1", "kind": "List", "metadata": map[string]any{"resourceVersion": ""}}, Items: objs[:2]}
	wantJSON, err := json.MarshalIndent(list, "", "    ")
	if err != nil {
		t.Fatal(err)
	}
	wantYAML, err := sigsyaml.Marshal(list)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		o    statusOptions
		want string
	}{
		{"json", statusOptions{output: "json"}, string(wantJSON) + "\n"},
		{"yaml", statusOptions{output: "yaml"}, string(wantYAML)},
		{"name", statusOptions{output: "name"}, "component.oda.tmforum.org/r1-catalog\ncomponent.oda.tmforum.org/r2-order\n"},
		{"name, every kind", statusOptions{output: "name", kinds: oda.Kinds, selector: "app"},
			"component.oda.tmforum.org/r1-catalog\n"},
		{"jsonpath", statusOptions{output: "jsonpath={range .items[*]}{.metadata.name} {.status.conditions[0].reason}{\"\\n\"}{end}"},
			"r1-catalog Deployed\nr2-order \n"},
		{"jsonpath of one name", statusOptions{output: "jsonpath={.metadata.name}", name: "r2-order"}, "r2-order"},
		{"json of one name is the object", statusOptions{output: "json", name: "r1-catalog", selector: "app=catalog"}, func() string {
			b, _ := json.MarshalIndent(&objs[0], "", "    ")
			return string(b) + "\n"
		}()},
		{"selector", statusOptions{selector: "app=catalog"}, "NAME         READY   STATUS     REASON     AGE\nr1-catalog   True    Complete   Deployed   60m\n"},
		{"selector matching nothing", statusOptions{selector: "app=none"}, "No ODA resources found in the context's namespace.\n"},
		{"no headers", statusOptions{noHeaders: true}, "r1-catalog   True      Complete   Deployed   60m\nr2-order     Unknown   <none>     <none>     60s\n"},
	} {
		if got := get(tc.o); got != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, got, tc.want)
		}
	}

	file := filepath.Join(t.TempDir(), "names.jsonpath")
	if err := os.WriteFile(file, []byte(`{.items[*].metadata.name}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := get(statusOptions{output: "jsonpath-file=" + file}); got != "r1-catalog r2-order" {
		t.Errorf("jsonpath-file: %q", got)
	}
}

// chanWriter hands each Write of a watch to the test that reads it.
type chanWriter chan string

func (w chanWriter) Write(p []byte) (int, error) {
	w <- string(p)
	return len(p), nil
}

// startWatch runs odaflow status -w components in ns of a fake apiserver
// holding statusFixtures; it returns the writes, the end of the watch and
// what ends it.
func startWatch(t *testing.T, ns string, now time.Time) (dynamic.Interface, []unstructured.Unstructured, chanWriter, chan error, context.Context, context.CancelFunc) {
	dyn, objs := statusFixtures(now)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	writes := make(chanWriter, 1000)
	done := make(chan error, 1)
	o := statusOptions{kinds: []oda.Kind{oda.KindComponent}, watch: true}
	go func() { done <- getStatus(ctx, dyn, writes, o, ns, func() time.Time { return now }) }()
	return dyn, objs, writes, done, ctx, cancel
}

// TestStatusWatch: -w prints the table, then a row without a header for
// each change, and ends without an error when its context does.
func TestStatusWatch(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	dyn, objs, writes, done, ctx, cancel := startWatch(t, "components", now)
	var out strings.Builder
	seen := func(s string, wait time.Duration) bool {
		t.Helper()
		deadline := time.After(wait)
		for !strings.Contains(out.String(), s) {
			select {
			case w := <-writes:
				out.WriteString(w)
			case err := <-done:
				t.Fatalf("watch ended (%v) before printing %q:\n%s", err, s, out.String())
			case <-deadline:
				return false
			}
		}
		return true
	}
	if !seen("r2-order", 10*time.Second) {
		t.Fatalf("no list printed:\n%s", out.String())
	}
	// The fake apiserver's watch starts after the list: retry the change
	// until the watch has seen it.
	changed := objs[1].DeepCopy()
	changed.Object["status"] = map[string]any{
		"summary/status": map[string]any{"deployment_status": "Failed"},
		"conditions":     []any{map[string]any{"type": "Ready", "status": "False", "reason": "DeployFailed"}},
	}
	for i := 0; !seen("DeployFailed", 50*time.Millisecond); i++ {
		changed.SetResourceVersion("")
		changed.SetAnnotations(map[string]string{"try": strings.Repeat("x", i+1)})
		if _, err := dyn.Resource(oda.KindComponent.GVR()).Namespace("components").Update(ctx, changed, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		if ctx.Err() != nil {
			t.Fatalf("no update printed:\n%s", out.String())
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("watch ended with %v", err)
	}
	for len(writes) > 0 { // the rest of the last row
		out.WriteString(<-writes)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if strings.Count(out.String(), "NAME") != 1 || !strings.HasPrefix(lines[0], "NAME") {
		t.Errorf("one header, first:\n%s", out.String())
	}
	if f := strings.Fields(lines[len(lines)-1]); !reflect.DeepEqual(f, []string{"r2-order", "False", "Failed", "DeployFailed", "60s"}) {
		t.Errorf("last line %q, want the change", f)
	}
}

// TestRowOf: what a row shows, kind by kind, decided from the object alone.
func TestRowOf(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	o := statusOptions{ui: "http://ui:8233", temporalNamespace: "default"}
	noAge := odaObject(oda.KindSecretsManagement, "ns", "s", now, map[string]any{"implementation": map[string]any{"ready": false}})
	noAge.SetCreationTimestamp(metav1.Time{})
	for _, tc := range []struct {
		name string
		obj  unstructured.Unstructured
		kind oda.Kind
		want statusRow
	}{
		{"component", odaObject(oda.KindComponent, "ns", "c", now.Add(-2*time.Hour), map[string]any{
			"summary/status": map[string]any{"deployment_status": "Complete"},
			"conditions":     []any{map[string]any{"type": "Ready", "status": "True", "reason": "Deployed", "message": "all ready"}},
			"coreAPIs":       []any{map[string]any{"url": "https://x", "ready": true}},
			"managementAPIs": []any{map[string]any{"url": "https://y", "ready": false}},
		}), oda.KindComponent, statusRow{Namespace: "ns", Name: "c", Ready: "True", Status: "Complete", Reason: "Deployed", Message: "all ready",
			Age: "120m", APIs: "1/2", WebUI: "http://ui:8233/namespaces/default/workflows/Component%2Fns%2Fc"}},
		{"notification: its status, no workflow link", odaObject(oda.KindPublishedNotification, "ns", "p", now.Add(-time.Second), map[string]any{"status": "Ready"}),
			oda.KindPublishedNotification, statusRow{Namespace: "ns", Name: "p", Ready: "Unknown", Status: "Ready", Age: "1s"}},
		{"secrets: implementation not ready, no creation time", noAge, oda.KindSecretsManagement,
			statusRow{Namespace: "ns", Name: "s", Ready: "Unknown", Status: "implementation not ready", Age: "<unknown>",
				WebUI: "http://ui:8233/namespaces/default/workflows/SecretsManagement%2Fns%2Fs"}},
	} {
		if got := rowOf(&tc.obj, tc.kind, o, now); got != tc.want {
			t.Errorf("%s:\n got %+v\nwant %+v", tc.name, got, tc.want)
		}
	}
}

// TestStatusWatchFromNothing: when the list printed no row, the header
// comes with the first change's row.
func TestStatusWatchFromNothing(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	dyn, _, writes, done, ctx, cancel := startWatch(t, "empty", now)
	var out strings.Builder
	for !strings.Contains(out.String(), "No ODA resources found") {
		out.WriteString(<-writes)
	}
	// The fake apiserver's watch starts after the list: create until seen.
	for i := 0; !strings.Contains(out.String(), "r3-new"); i++ {
		obj := odaObject(oda.KindComponent, "empty", "r3-new", now.Add(-time.Second), nil)
		if i > 0 {
			_ = dyn.Resource(oda.KindComponent.GVR()).Namespace("empty").Delete(ctx, "r3-new", metav1.DeleteOptions{})
		}
		if _, err := dyn.Resource(oda.KindComponent.GVR()).Namespace("empty").Create(ctx, &obj, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		for wait := time.After(50 * time.Millisecond); ; {
			select {
			case w := <-writes:
				out.WriteString(w)
				continue
			case <-wait:
			case <-ctx.Done():
				t.Fatalf("no row printed:\n%s", out.String())
			}
			break
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("watch ended with %v", err)
	}
	for len(writes) > 0 {
		out.WriteString(<-writes)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) < 3 || !strings.HasPrefix(lines[1], "NAME") || strings.Fields(lines[2])[0] != "r3-new" || strings.Count(out.String(), "NAME") != 1 {
		t.Errorf("want the message, then one header with the first row:\n%s", out.String())
	}
}
