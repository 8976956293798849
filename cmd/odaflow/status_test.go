package main

import (
	"bytes"
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
	"k8s.io/client-go/tools/clientcmd"

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
		{args: []string{"-o", "yaml"}, wantErr: `-o "yaml"`},
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
