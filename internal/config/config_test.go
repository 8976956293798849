package config

import (
	"errors"
	"flag"
	"os"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/odaflow/odaflow/gateway"
	"github.com/odaflow/odaflow/internal/config/configtest"
)

// parsed is a configuration of type C bound to its flags and parsed from
// args, the environment read.
func parsed[C any, P interface {
	*C
	Bind(*flag.FlagSet)
}](t *testing.T, args ...string) C {
	t.Helper()
	var c C
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	P(&c).Bind(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return c
}

func parseWorker(t *testing.T, args ...string) Worker {
	t.Helper()
	return parsed[Worker](t, args...)
}

func TestWorkerDefaultsAreValid(t *testing.T) {
	t.Setenv("KUBECONFIG", "")
	w := parseWorker(t)
	if err := w.Validate(); err != nil {
		t.Fatalf("defaults invalid: %v", err)
	}
	if w.TaskQueue != "odaflow" || w.Gateway != "istio" || w.KubeQPS != 500 || w.TemporalCompression != "none" {
		t.Errorf("defaults = %+v", w)
	}
}

func TestValidateReportsEveryProblemAtOnce(t *testing.T) {
	t.Setenv("KUBECONFIG", "")
	w := parseWorker(t, "--temporal-address", "nohostport", "--task-queue", "", "--log-level", "loud",
		"--gateway", "nginx", "--temporal-tls-cert", "/nope/cert", "--kube-qps", "0", "--http-address", "8080",
		"--temporal-grpc-compression", "zstd")
	err := w.Validate()
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"--temporal-address", "--task-queue", "--log-level", "--gateway", "--temporal-tls-cert and --temporal-tls-key", "--kube-qps", "--http-address", "--temporal-grpc-compression"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not mention %s:\n%v", want, err)
		}
	}
}

func TestEnvironmentAndFlags(t *testing.T) {
	t.Setenv("KUBECONFIG", "")
	t.Setenv("ODAFLOW_NAMESPACES", "components, odacompns-*")
	t.Setenv("ODAFLOW_TASK_QUEUE", "from-env")
	w := parseWorker(t, "--task-queue", "from-flag")
	if w.TaskQueue != "from-flag" {
		t.Errorf("a flag must win over its variable: %q", w.TaskQueue)
	}
	if strings.Join(w.Namespaces, "|") != "components|odacompns-*" {
		t.Errorf("namespaces = %q", w.Namespaces)
	}
}

func TestWatcherLeaderElectionNeedsAnIdentity(t *testing.T) {
	t.Setenv("KUBECONFIG", "")
	t.Setenv("ODAFLOW_IDENTITY", "")
	var w Watcher
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	w.Bind(fs)
	if err := fs.Parse([]string{"--identity", "", "--leader-elect=true"}); err != nil {
		t.Fatal(err)
	}
	if err := w.Validate(); err == nil || !strings.Contains(err.Error(), "leader election") {
		t.Errorf("err = %v", err)
	}
}

func parseWatcher(t *testing.T, args ...string) Watcher {
	t.Helper()
	return parsed[Watcher](t, args...)
}

func TestWatcherWorkflowTaskTimeout(t *testing.T) {
	t.Setenv("KUBECONFIG", "")
	t.Setenv("ODAFLOW_IDENTITY", "watcher-0")
	if w := parseWatcher(t); w.WorkflowTaskTimeout != 30*time.Second || w.Validate() != nil {
		t.Errorf("default %s (valid: %v), want 30s", w.WorkflowTaskTimeout, w.Validate())
	}
	t.Setenv("ODAFLOW_WORKFLOW_TASK_TIMEOUT", "20s")
	if w := parseWatcher(t); w.WorkflowTaskTimeout != 20*time.Second {
		t.Errorf("from the environment: %s, want 20s", w.WorkflowTaskTimeout)
	}
	for _, bad := range []string{"500ms", "3m"} {
		err := parseWatcher(t, "--workflow-task-timeout", bad).Validate()
		if err == nil || !strings.Contains(err.Error(), "--workflow-task-timeout") {
			t.Errorf("%s: err = %v, want one naming --workflow-task-timeout", bad, err)
		}
	}
}

// The watcher makes the same URLs as the worker, so it takes the gateway
// flags too; its trust settings are lists of globs, checked at start.
func TestWatcherURLAndTrustSettings(t *testing.T) {
	t.Setenv("KUBECONFIG", "")
	t.Setenv("ODAFLOW_IDENTITY", "watcher-0")
	w := parseWatcher(t, "--gateway", "apisix", "--public-hostname", "apis.example.com",
		"--shared-api-namespaces", "canvas-shared,platform-*", "--allowed-hostnames", "*.apps.example.com")
	if err := w.Validate(); err != nil {
		t.Fatalf("valid settings refused: %v", err)
	}
	if w.Gateway != "apisix" || w.PublicHostname != "apis.example.com" ||
		strings.Join(w.SharedAPINamespaces, ",") != "canvas-shared,platform-*" || strings.Join(w.AllowedHostnames, ",") != "*.apps.example.com" {
		t.Errorf("parsed %+v", w)
	}
	if d := parseWatcher(t); len(d.SharedAPINamespaces) != 0 || len(d.AllowedHostnames) != 0 || d.Gateway != "istio" {
		t.Errorf("defaults share namespaces %v, allow host names %v, gateway %q; want none, none, istio", d.SharedAPINamespaces, d.AllowedHostnames, d.Gateway)
	}
	err := parseWatcher(t, "--gateway", "nginx", "--shared-api-namespaces", "team-[", "--allowed-hostnames", "[x").Validate()
	for _, want := range []string{"--gateway", "--shared-api-namespaces", "--allowed-hostnames"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v, want one naming %s", err, want)
		}
	}
}

func TestSearchAttributesAndTracingSwitches(t *testing.T) {
	t.Setenv("KUBECONFIG", "")
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	t.Setenv("ODAFLOW_SEARCH_ATTRIBUTES", "")
	if w := parseWorker(t); !w.SearchAttributes || w.OTLPEndpoint != "" {
		t.Errorf("defaults: search attributes %v, otlp endpoint %q; want on and tracing off", w.SearchAttributes, w.OTLPEndpoint)
	}
	t.Setenv("ODAFLOW_SEARCH_ATTRIBUTES", "false")
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4317")
	w := parseWorker(t)
	if w.SearchAttributes || w.OTLPEndpoint != "http://collector:4317" {
		t.Errorf("from the environment: search attributes %v, otlp endpoint %q", w.SearchAttributes, w.OTLPEndpoint)
	}
	if err := w.Validate(); err != nil {
		t.Errorf("valid settings refused: %v", err)
	}
	if w := parseWorker(t, "--search-attributes=true"); !w.SearchAttributes {
		t.Error("--search-attributes=true must win over its variable")
	}
	t.Setenv("ODAFLOW_SEARCH_ATTRIBUTES", "maybe")
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "collector:4317")
	err := parseWorker(t).Validate()
	for _, want := range []string{"ODAFLOW_SEARCH_ATTRIBUTES", "--otlp-endpoint"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %v, want it to mention %s", err, want)
		}
	}
}

func TestEveryFlagHasOneVariable(t *testing.T) {
	t.Setenv("KUBECONFIG", "")
	t.Run("worker", func(t *testing.T) {
		configtest.CheckEnvMapping(t, EnvName, func(fs *flag.FlagSet) func() error {
			var w Worker
			w.Bind(fs)
			return func() error { return errors.Join(w.envErrs...) }
		})
	})
	t.Run("watcher", func(t *testing.T) {
		configtest.CheckEnvMapping(t, EnvName, func(fs *flag.FlagSet) func() error {
			var w Watcher
			w.Bind(fs)
			return func() error { return errors.Join(w.envErrs...) }
		})
	})
}

// TestUnparsableVariablesAreReportedTogether: a variable that does not parse
// neither passes silently nor stops at the first one; Validate lists each
// with the other problems.
func TestUnparsableVariablesAreReportedTogether(t *testing.T) {
	t.Setenv("KUBECONFIG", "")
	t.Setenv("ODAFLOW_LEADER_ELECT", "yes")
	t.Setenv("ODAFLOW_KUBE_QPS", "fast")
	t.Setenv("ODAFLOW_CHILD_STATUS_WINDOW", "250")
	w := parseWatcher(t, "--log-level", "loud")
	if !w.LeaderElect {
		t.Error("ODAFLOW_LEADER_ELECT=yes turned leader election off")
	}
	err := w.Validate()
	for _, want := range []string{`ODAFLOW_LEADER_ELECT="yes" (--leader-elect) must be true or false`,
		`ODAFLOW_KUBE_QPS="fast"`, `ODAFLOW_CHILD_STATUS_WINDOW="250"`, "--log-level"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %v, want it to mention %s", err, want)
		}
	}
}

// TestWorkerMetricsMode: the Canvas's three modes and none are accepted, by
// flag or variable, and are the modes the gateway rules know; anything else
// is refused naming the flag.
func TestWorkerMetricsMode(t *testing.T) {
	t.Setenv("KUBECONFIG", "")
	if w := parseWorker(t); w.MetricsMode != "ServiceMonitor" {
		t.Errorf("default --metrics-mode = %q, want ServiceMonitor (the Canvas operator's code default)", w.MetricsMode)
	}
	for _, mode := range MetricsModes {
		w := parseWorker(t, "--metrics-mode", mode)
		if err := w.Validate(); err != nil {
			t.Errorf("--metrics-mode %s: %v", mode, err)
		}
		if err := (gateway.Config{Gateway: gateway.GatewayIstio, MetricsMode: mode}).WithDefaults().Validate(); err != nil {
			t.Errorf("gateway rules refuse %s: %v", mode, err)
		}
	}
	t.Setenv("ODAFLOW_METRICS_MODE", "PrometheusAnnotation")
	if w := parseWorker(t); w.MetricsMode != "PrometheusAnnotation" {
		t.Errorf("ODAFLOW_METRICS_MODE gives %q", w.MetricsMode)
	}
	err := parseWorker(t, "--metrics-mode", "prometheus").Validate()
	if err == nil || !strings.Contains(err.Error(), `--metrics-mode "prometheus" must be one of ServiceMonitor, PrometheusAnnotation, DataDogAnnotation, none`) {
		t.Errorf("--metrics-mode prometheus: %v", err)
	}
}

// TestIngressNamespaceIsTheChartsAndNeverAll: the binary's default is the
// chart's, and an empty namespace (which the informer reads as every
// namespace, where a tenant's Service could become the ingress) is refused.
func TestIngressNamespaceIsTheChartsAndNeverAll(t *testing.T) {
	t.Setenv("KUBECONFIG", "")
	t.Setenv("ODAFLOW_IDENTITY", "watcher-0")
	raw, err := os.ReadFile("../../charts/odaflow/values.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var values struct {
		Gateway struct {
			Ingress struct {
				Namespace string `json:"namespace"`
			} `json:"ingress"`
		} `json:"gateway"`
	}
	if err := yaml.Unmarshal(raw, &values); err != nil {
		t.Fatal(err)
	}
	if w := parseWatcher(t); w.IngressNamespace != values.Gateway.Ingress.Namespace || w.IngressNamespace != DefaultIngressNamespace {
		t.Errorf("default --ingress-namespace %q, chart's %q", w.IngressNamespace, values.Gateway.Ingress.Namespace)
	}
	for _, err := range []error{
		parseWatcher(t, "--ingress-namespace=").Validate(),
		parseWorker(t, "--ingress-namespace=").Validate(),
	} {
		if err == nil || !strings.Contains(err.Error(), "--ingress-namespace must name") {
			t.Errorf("empty --ingress-namespace: %v, want a refusal", err)
		}
	}
}
