// Package config reads odaflow's configuration from flags and environment
// variables (a flag wins over its variable) and validates it at start.
package config

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
)

// Common is shared by every odaflow process.
type Common struct {
	Kubeconfig        string
	TemporalAddress   string
	TemporalNamespace string
	TaskQueue         string
	Namespaces        []string
	HTTPAddress       string
	LogLevel          string
	TLSCert           string
	TLSKey            string
	TLSCA             string
	TLSServerName     string
	// APIKeyFile holds the Temporal API key; the key itself never passes
	// through flags or the environment.
	APIKeyFile string
	// IngressSelector and IngressNamespace find the gateway's ingress
	// Service, whose address makes the ExposedAPI URLs.
	IngressSelector  string
	IngressNamespace string
	// KubeQPS and KubeBurst bound this process's apiserver requests. The
	// apiserver's own priority and fairness protects it; this is a guard.
	KubeQPS   float64
	KubeBurst int
	// SearchAttributes has the watcher start workflows with OdaComponent,
	// K8sNamespace and OdaKind and the workflows keep DeploymentStatus
	// current; both processes register the attributes at start. Off, no
	// workflow carries any (for a namespace where they cannot be created).
	SearchAttributes bool
	// OTLPEndpoint is the OTLP/gRPC collector URL traces go to; empty turns
	// tracing off.
	OTLPEndpoint string
	// TemporalCompression is the gRPC compression of requests to Temporal
	// (and so of its replies): "none" or "gzip". odaflow's messages are
	// small (a workflow task carries tens of events) and usually stay in
	// the cluster, where compressing them costs CPU on both ends and saves
	// nothing; gzip is for a Temporal across a metered link.
	TemporalCompression string
	// envErrs are environment variables Bind could not parse, reported by
	// Validate with everything else.
	envErrs []error
}

// Worker configures `odaflow worker`.
type Worker struct {
	Common
	Gateway        string
	IstioGateway   string
	PublicHostname string
	// ServiceInventoryURL is the TMF638 API base where resolved
	// dependencies are recorded ("" = do not record).
	ServiceInventoryURL string
	// KongAdminURL and KongAdminTokenFile reach Kong's Admin API for the
	// kong-admin gateway; the token is read from a file (a mounted Secret).
	KongAdminURL       string
	KongAdminTokenFile string
	// Keycloak is the identity platform of IdentityConfigs.
	Keycloak Keycloak
	// ListenerBaseURL is where a component's hub reaches this worker's
	// identity listener; ListenerKeyFile holds the keys its tokens are
	// derived from (a mounted Secret shared by every worker replica).
	ListenerBaseURL string
	ListenerKeyFile string
	// Vault is the secret store of SecretsManagements.
	Vault Vault
}

// Vault locates Vault and says how odaflow logs in: a token file (a mounted
// Secret) or Vault's kubernetes auth; never a token in plain config.
type Vault struct {
	Address                          string
	CACertFile                       string
	SkipVerify                       bool
	TokenFile                        string
	LoginAuthPath, LoginRole         string
	AuthPath                         string
	KubernetesHost, KubernetesCAFile string
	TokenReviewerJWTFile             string
	Audience                         string
}

// Keycloak locates the identity platform and its admin credentials.
type Keycloak struct {
	URL        string
	Realm      string
	AdminRealm string
	// AdminSecret is "<namespace>/<name>" of a Secret with keys username
	// and password, read by the activities when they need a token.
	AdminSecret string
	Timeout     time.Duration
}

// Watcher configures `odaflow watcher`.
type Watcher struct {
	Common
	LeaderElect             bool
	LeaderElectionNamespace string
	LeaderElectionID        string
	Identity                string
	// IdentityCheckInterval is how often each IdentityConfig's workflow
	// compares Keycloak with the spec and repairs drift.
	IdentityCheckInterval time.Duration
	// SecretsCheckInterval is how often each Ready SecretsManagement's
	// workflow compares Vault with the spec and repairs drift.
	SecretsCheckInterval time.Duration
	// ChildStatusWindow gathers the child-status signals of one Component
	// (watcher.Config.ChildStatusWindow).
	ChildStatusWindow time.Duration
	// WorkflowTaskTimeout is the workflow-task timeout the watcher starts
	// every workflow with (watcher.Config.WorkflowTaskTimeout).
	WorkflowTaskTimeout time.Duration
}

func env(name, def string) string {
	if v, ok := os.LookupEnv(name); ok && v != "" {
		return v
	}
	return def
}

type listFlag struct{ v *[]string }

func (l listFlag) String() string {
	if l.v == nil {
		return ""
	}
	return strings.Join(*l.v, ",")
}

func (l listFlag) Set(s string) error {
	*l.v = SplitList(s)
	return nil
}

// SplitList splits a comma-separated list, dropping empty items.
func SplitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// Bind registers the common flags.
func (c *Common) Bind(fs *flag.FlagSet) {
	fs.StringVar(&c.Kubeconfig, "kubeconfig", env("KUBECONFIG", ""), "kubeconfig file; empty uses the in-cluster service account (env KUBECONFIG)")
	fs.StringVar(&c.TemporalAddress, "temporal-address", env("ODAFLOW_TEMPORAL_ADDRESS", "127.0.0.1:7233"), "Temporal frontend host:port (env ODAFLOW_TEMPORAL_ADDRESS)")
	fs.StringVar(&c.TemporalNamespace, "temporal-namespace", env("ODAFLOW_TEMPORAL_NAMESPACE", "default"), "Temporal namespace (env ODAFLOW_TEMPORAL_NAMESPACE)")
	fs.StringVar(&c.TaskQueue, "task-queue", env("ODAFLOW_TASK_QUEUE", "odaflow"), "Temporal task queue (env ODAFLOW_TASK_QUEUE)")
	c.Namespaces = SplitList(env("ODAFLOW_NAMESPACES", ""))
	fs.Var(listFlag{&c.Namespaces}, "namespaces", "namespaces to serve, comma-separated, globs allowed (components,odacompns-*); empty serves all (env ODAFLOW_NAMESPACES)")
	fs.StringVar(&c.HTTPAddress, "http-address", env("ODAFLOW_HTTP_ADDRESS", ":8080"), "address of /healthz, /readyz and /metrics (env ODAFLOW_HTTP_ADDRESS)")
	fs.StringVar(&c.LogLevel, "log-level", env("ODAFLOW_LOG_LEVEL", "info"), "debug, info, warn or error (env ODAFLOW_LOG_LEVEL)")
	fs.StringVar(&c.TLSCert, "temporal-tls-cert", env("ODAFLOW_TEMPORAL_TLS_CERT", ""), "client certificate file for mTLS to Temporal")
	fs.StringVar(&c.TLSKey, "temporal-tls-key", env("ODAFLOW_TEMPORAL_TLS_KEY", ""), "client key file for mTLS to Temporal")
	fs.StringVar(&c.TLSCA, "temporal-tls-ca", env("ODAFLOW_TEMPORAL_TLS_CA", ""), "CA file to verify the Temporal server")
	fs.StringVar(&c.TLSServerName, "temporal-tls-server-name", env("ODAFLOW_TEMPORAL_TLS_SERVER_NAME", ""), "server name to verify on the Temporal certificate")
	qps, _ := strconv.ParseFloat(env("ODAFLOW_KUBE_QPS", "500"), 64)
	burst, _ := strconv.Atoi(env("ODAFLOW_KUBE_BURST", "1000"))
	fs.Float64Var(&c.KubeQPS, "kube-qps", qps, "apiserver requests per second this process may make (env ODAFLOW_KUBE_QPS)")
	fs.IntVar(&c.KubeBurst, "kube-burst", burst, "apiserver request burst (env ODAFLOW_KUBE_BURST)")
	fs.StringVar(&c.IngressSelector, "ingress-selector", env("ODAFLOW_INGRESS_SELECTOR", "istio=ingressgateway"), "label selector of the gateway's ingress Service (env ODAFLOW_INGRESS_SELECTOR)")
	fs.StringVar(&c.IngressNamespace, "ingress-namespace", env("ODAFLOW_INGRESS_NAMESPACE", ""), "namespace of the gateway's ingress Service; empty searches all (env ODAFLOW_INGRESS_NAMESPACE)")
	sa, err := strconv.ParseBool(env("ODAFLOW_SEARCH_ATTRIBUTES", "true"))
	if err != nil {
		sa = true
		c.envErrs = append(c.envErrs, fmt.Errorf("ODAFLOW_SEARCH_ATTRIBUTES %q must be true or false", os.Getenv("ODAFLOW_SEARCH_ATTRIBUTES")))
	}
	fs.BoolVar(&c.SearchAttributes, "search-attributes", sa,
		"register and set the OdaComponent, K8sNamespace, OdaKind and DeploymentStatus search attributes (env ODAFLOW_SEARCH_ATTRIBUTES)")
	fs.StringVar(&c.OTLPEndpoint, "otlp-endpoint", env("OTEL_EXPORTER_OTLP_ENDPOINT", ""),
		"OTLP/gRPC collector URL for traces, e.g. http://otel-collector:4317; empty turns tracing off (env OTEL_EXPORTER_OTLP_ENDPOINT)")
	fs.StringVar(&c.APIKeyFile, "temporal-api-key-file", env("ODAFLOW_TEMPORAL_API_KEY_FILE", ""), "file holding a Temporal API key")
	fs.StringVar(&c.TemporalCompression, "temporal-grpc-compression", env("ODAFLOW_TEMPORAL_GRPC_COMPRESSION", "none"),
		"gRPC compression of requests to Temporal: none, or gzip for a Temporal across a metered link such as Temporal Cloud (env ODAFLOW_TEMPORAL_GRPC_COMPRESSION)")
}

// Validate reports every problem at once, so a misconfigured pod says
// everything that is wrong in one log line.
func (c Common) Validate() error {
	errs := append([]error(nil), c.envErrs...)
	if _, port, err := net.SplitHostPort(c.TemporalAddress); err != nil || port == "" {
		errs = append(errs, fmt.Errorf("--temporal-address %q must be host:port", c.TemporalAddress))
	}
	if c.TemporalNamespace == "" {
		errs = append(errs, errors.New("--temporal-namespace must not be empty"))
	}
	if c.TaskQueue == "" {
		errs = append(errs, errors.New("--task-queue must not be empty"))
	}
	if _, _, err := net.SplitHostPort(c.HTTPAddress); err != nil {
		errs = append(errs, fmt.Errorf("--http-address %q must be [host]:port", c.HTTPAddress))
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		errs = append(errs, fmt.Errorf("--log-level %q must be debug, info, warn or error", c.LogLevel))
	}
	if c.KubeQPS <= 0 || c.KubeBurst <= 0 {
		errs = append(errs, fmt.Errorf("--kube-qps %v and --kube-burst %d must be positive", c.KubeQPS, c.KubeBurst))
	}
	switch c.TemporalCompression {
	case "none", "gzip":
	default:
		errs = append(errs, fmt.Errorf("--temporal-grpc-compression %q must be none or gzip", c.TemporalCompression))
	}
	if c.OTLPEndpoint != "" {
		if u, err := url.Parse(c.OTLPEndpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("--otlp-endpoint %q must be an http(s) URL such as http://otel-collector:4317", c.OTLPEndpoint))
		}
	}
	if (c.TLSCert == "") != (c.TLSKey == "") {
		errs = append(errs, errors.New("--temporal-tls-cert and --temporal-tls-key go together"))
	}
	for _, f := range []struct{ flag, path string }{
		{"--kubeconfig", c.Kubeconfig}, {"--temporal-tls-cert", c.TLSCert}, {"--temporal-tls-key", c.TLSKey},
		{"--temporal-tls-ca", c.TLSCA}, {"--temporal-api-key-file", c.APIKeyFile},
	} {
		if f.path == "" {
			continue
		}
		if _, err := os.Stat(f.path); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", f.flag, err))
		}
	}
	return errors.Join(errs...)
}

// Gateways odaflow can drive.
var Gateways = []string{"istio", "kong", "kong-admin", "apisix"}

// Bind registers the worker's flags.
func (w *Worker) Bind(fs *flag.FlagSet) {
	w.Common.Bind(fs)
	fs.StringVar(&w.Gateway, "gateway", env("ODAFLOW_GATEWAY", "istio"), "API gateway: istio, kong, kong-admin or apisix (env ODAFLOW_GATEWAY)")
	fs.StringVar(&w.IstioGateway, "istio-gateway", env("ODAFLOW_ISTIO_GATEWAY", "components/component-gateway"), "Istio Gateway the VirtualServices bind to (env ODAFLOW_ISTIO_GATEWAY)")
	fs.StringVar(&w.PublicHostname, "public-hostname", env("ODAFLOW_PUBLIC_HOSTNAME", ""), "public host name of the gateway; overrides the load-balancer address (env ODAFLOW_PUBLIC_HOSTNAME)")
	fs.StringVar(&w.KongAdminURL, "kong-admin-url", env("ODAFLOW_KONG_ADMIN_URL", ""),
		"Kong Admin API URL, required with --gateway=kong-admin, e.g. http://kong-admin.kong:8001 (env ODAFLOW_KONG_ADMIN_URL)")
	fs.StringVar(&w.KongAdminTokenFile, "kong-admin-token-file", env("ODAFLOW_KONG_ADMIN_TOKEN_FILE", ""),
		"file holding the Kong Admin API token (a mounted Secret), re-read on every request; empty sends none (env ODAFLOW_KONG_ADMIN_TOKEN_FILE)")
	fs.StringVar(&w.Keycloak.URL, "keycloak-url", env("ODAFLOW_KEYCLOAK_URL", ""),
		"Keycloak base URL (with /auth for Keycloak before 17); empty leaves IdentityConfigs Failed with the reason (env ODAFLOW_KEYCLOAK_URL)")
	fs.StringVar(&w.Keycloak.Realm, "keycloak-realm", env("ODAFLOW_KEYCLOAK_REALM", "odari"), "realm of the component clients (env ODAFLOW_KEYCLOAK_REALM)")
	fs.StringVar(&w.Keycloak.AdminRealm, "keycloak-admin-realm", env("ODAFLOW_KEYCLOAK_ADMIN_REALM", "master"), "realm the admin user logs in to (env ODAFLOW_KEYCLOAK_ADMIN_REALM)")
	fs.StringVar(&w.Keycloak.AdminSecret, "keycloak-admin-secret", env("ODAFLOW_KEYCLOAK_ADMIN_SECRET", ""),
		"namespace/name of the Secret holding the Keycloak admin username and password (env ODAFLOW_KEYCLOAK_ADMIN_SECRET)")
	kcTimeout, _ := time.ParseDuration(env("ODAFLOW_KEYCLOAK_TIMEOUT", "20s"))
	fs.DurationVar(&w.Keycloak.Timeout, "keycloak-timeout", kcTimeout, "timeout of one Keycloak request (env ODAFLOW_KEYCLOAK_TIMEOUT)")
	fs.StringVar(&w.ListenerBaseURL, "listener-base-url", env("ODAFLOW_LISTENER_BASE_URL", ""),
		"URL at which component hubs reach this worker's identity listener, e.g. http://odaflow-worker.canvas.svc:8080; empty registers no hub (env ODAFLOW_LISTENER_BASE_URL)")
	fs.StringVar(&w.ListenerKeyFile, "listener-key-file", env("ODAFLOW_LISTENER_KEY_FILE", ""),
		"file of listener keys, one per line, at least 32 bytes each, the first signing (env ODAFLOW_LISTENER_KEY_FILE)")
	fs.StringVar(&w.Vault.Address, "vault-address", env("ODAFLOW_VAULT_ADDRESS", ""), "Vault URL; empty leaves SecretsManagements Failed with the reason (env ODAFLOW_VAULT_ADDRESS)")
	fs.StringVar(&w.Vault.CACertFile, "vault-ca-cert-file", env("ODAFLOW_VAULT_CA_FILE", ""), "PEM bundle that verifies Vault's certificate (env ODAFLOW_VAULT_CA_FILE)")
	skip, _ := strconv.ParseBool(env("ODAFLOW_VAULT_SKIP_VERIFY", "false"))
	fs.BoolVar(&w.Vault.SkipVerify, "vault-skip-verify", skip, "do not verify Vault's certificate: development only (env ODAFLOW_VAULT_SKIP_VERIFY)")
	fs.StringVar(&w.Vault.TokenFile, "vault-token-file", env("ODAFLOW_VAULT_TOKEN_FILE", ""), "file holding odaflow's Vault token, a mounted Secret re-read on every call (env ODAFLOW_VAULT_TOKEN_FILE)")
	fs.StringVar(&w.Vault.LoginAuthPath, "vault-login-auth-path", env("ODAFLOW_VAULT_LOGIN_AUTH_PATH", ""), "kubernetes auth mount odaflow logs in through when no token file is given (env ODAFLOW_VAULT_LOGIN_AUTH_PATH)")
	fs.StringVar(&w.Vault.LoginRole, "vault-login-role", env("ODAFLOW_VAULT_AUTH_ROLE", ""), "Vault role of odaflow's kubernetes login (env ODAFLOW_VAULT_AUTH_ROLE)")
	fs.StringVar(&w.Vault.AuthPath, "vault-auth-path", env("ODAFLOW_VAULT_AUTH_PATH", ""), "kubernetes auth mount the sidecars log in through (default kubernetes-sman) (env ODAFLOW_VAULT_AUTH_PATH)")
	fs.StringVar(&w.Vault.KubernetesHost, "vault-kubernetes-host", env("ODAFLOW_VAULT_KUBERNETES_HOST", ""), "apiserver URL Vault calls for TokenReview, written to the auth method's config (env ODAFLOW_VAULT_KUBERNETES_HOST)")
	fs.StringVar(&w.Vault.KubernetesCAFile, "vault-kubernetes-ca-file", env("ODAFLOW_VAULT_KUBERNETES_CA_FILE", ""), "CA of that apiserver (env ODAFLOW_VAULT_KUBERNETES_CA_FILE)")
	fs.StringVar(&w.Vault.TokenReviewerJWTFile, "vault-token-reviewer-jwt-file", env("ODAFLOW_VAULT_TOKEN_REVIEWER_JWT_FILE", ""), "token Vault uses for TokenReview (env ODAFLOW_VAULT_TOKEN_REVIEWER_JWT_FILE)")
	fs.StringVar(&w.Vault.Audience, "vault-audience", env("ODAFLOW_VAULT_AUDIENCE", ""), "audience required in the sidecars' tokens (env ODAFLOW_VAULT_AUDIENCE)")
	fs.StringVar(&w.ServiceInventoryURL, "service-inventory-url", env("ODAFLOW_SERVICE_INVENTORY_URL", ""),
		"TMF638 Service Inventory (Canvas Info) API base, up to /service, where resolved dependencies are recorded; empty records nothing (env ODAFLOW_SERVICE_INVENTORY_URL)")
}

// Validate checks the worker's configuration.
func (w Worker) Validate() error {
	errs := []error{w.Common.Validate()}
	ok := false
	for _, g := range Gateways {
		ok = ok || g == w.Gateway
	}
	if !ok {
		errs = append(errs, fmt.Errorf("--gateway %q must be one of %s", w.Gateway, strings.Join(Gateways, ", ")))
	}
	if w.Gateway == "kong-admin" {
		if parsed, err := url.Parse(w.KongAdminURL); err != nil || (parsed.Scheme != "http" && parsed.Scheme != "https") || parsed.Host == "" {
			errs = append(errs, fmt.Errorf("--gateway=kong-admin needs --kong-admin-url as an http(s) URL, got %q", w.KongAdminURL))
		}
	}
	if w.Keycloak.URL != "" {
		if parsed, err := url.Parse(w.Keycloak.URL); err != nil || (parsed.Scheme != "http" && parsed.Scheme != "https") || parsed.Host == "" {
			errs = append(errs, fmt.Errorf("--keycloak-url %q must be an http(s) URL", w.Keycloak.URL))
		}
		if ns, name, ok := strings.Cut(w.Keycloak.AdminSecret, "/"); !ok || ns == "" || name == "" {
			errs = append(errs, fmt.Errorf("--keycloak-url needs --keycloak-admin-secret as namespace/name, got %q", w.Keycloak.AdminSecret))
		}
	}
	if (w.ListenerBaseURL == "") != (w.ListenerKeyFile == "") {
		errs = append(errs, errors.New("--listener-base-url and --listener-key-file go together"))
	} else if w.ListenerBaseURL != "" {
		if parsed, err := url.Parse(w.ListenerBaseURL); err != nil || (parsed.Scheme != "http" && parsed.Scheme != "https") || parsed.Host == "" || parsed.RawQuery != "" {
			errs = append(errs, fmt.Errorf("--listener-base-url %q must be an http(s) URL without a query", w.ListenerBaseURL))
		}
	}
	if w.Vault.Address != "" {
		if parsed, err := url.Parse(w.Vault.Address); err != nil || (parsed.Scheme != "http" && parsed.Scheme != "https") || parsed.Host == "" {
			errs = append(errs, fmt.Errorf("--vault-address %q must be an http(s) URL", w.Vault.Address))
		}
		if w.Vault.TokenFile == "" && (w.Vault.LoginAuthPath == "" || w.Vault.LoginRole == "") {
			errs = append(errs, errors.New("--vault-address needs --vault-token-file, or --vault-login-auth-path with --vault-login-role"))
		}
	}
	if u := w.ServiceInventoryURL; u != "" {
		if parsed, err := url.Parse(u); err != nil || (parsed.Scheme != "http" && parsed.Scheme != "https") || parsed.Host == "" {
			errs = append(errs, fmt.Errorf("--service-inventory-url %q must be an http(s) URL", u))
		}
	}
	return errors.Join(errs...)
}

// Bind registers the watcher's flags.
func (w *Watcher) Bind(fs *flag.FlagSet) {
	w.Common.Bind(fs)
	le, _ := strconv.ParseBool(env("ODAFLOW_LEADER_ELECT", "true"))
	fs.BoolVar(&w.LeaderElect, "leader-elect", le, "elect one active watcher with a Lease (env ODAFLOW_LEADER_ELECT)")
	fs.StringVar(&w.LeaderElectionNamespace, "leader-election-namespace", env("POD_NAMESPACE", "default"), "namespace of the Lease (env POD_NAMESPACE)")
	fs.StringVar(&w.LeaderElectionID, "leader-election-id", env("ODAFLOW_LEADER_ELECTION_ID", "odaflow-watcher"), "name of the Lease")
	host, _ := os.Hostname()
	fs.StringVar(&w.Identity, "identity", env("POD_NAME", host), "this replica's identity in the Lease (env POD_NAME)")
	check, _ := time.ParseDuration(env("ODAFLOW_IDENTITY_CHECK_INTERVAL", "10m"))
	fs.DurationVar(&w.IdentityCheckInterval, "identity-check-interval", check, "how often Keycloak is checked against each IdentityConfig and drift repaired (env ODAFLOW_IDENTITY_CHECK_INTERVAL)")
	secretsCheck, _ := time.ParseDuration(env("ODAFLOW_SECRETS_CHECK_INTERVAL", "10m"))
	fs.DurationVar(&w.SecretsCheckInterval, "secrets-check-interval", secretsCheck, "how often Vault is checked against each ready SecretsManagement and drift repaired (env ODAFLOW_SECRETS_CHECK_INTERVAL)")
	window, _ := time.ParseDuration(env("ODAFLOW_CHILD_STATUS_WINDOW", "250ms"))
	fs.DurationVar(&w.ChildStatusWindow, "child-status-window", window,
		"how long a child's status change waits for its siblings' before their Component is told of them together, in one workflow task; 0 tells each at once (env ODAFLOW_CHILD_STATUS_WINDOW)")
	taskTimeout, _ := time.ParseDuration(env("ODAFLOW_WORKFLOW_TASK_TIMEOUT", DefaultWorkflowTaskTimeout.String()))
	fs.DurationVar(&w.WorkflowTaskTimeout, "workflow-task-timeout", taskTimeout,
		"the workflow-task timeout each workflow starts with: how long a worker has for one task, its local activities (apiserver calls) included, before Temporal gives the task to another (env ODAFLOW_WORKFLOW_TASK_TIMEOUT)")
}

// DefaultWorkflowTaskTimeout is the watcher's --workflow-task-timeout.
// Temporal's own default, 10s, is short for odaflow's workflow tasks, which
// run their apiserver calls as local activities: past 80% of the timeout
// the SDK must heartbeat the task (complete it and ask for a new one) to
// keep it, and on a loaded apiserver and Temporal many tasks pass 8 s. Each
// heartbeat is a workflow-task completion for Temporal to write, and one
// that fails (Temporal slower than the SDK's 10 s call deadline) loses the
// task, so its local activities run, and their writes are made, again. The
// cost of a longer timeout: a task whose worker died while running it waits
// this long before another worker takes it (a task not yet started moves
// after the sticky queue's 5 s).
const DefaultWorkflowTaskTimeout = 30 * time.Second

// Validate checks the watcher's configuration.
func (w Watcher) Validate() error {
	errs := []error{w.Common.Validate()}
	if w.LeaderElect && (w.LeaderElectionNamespace == "" || w.LeaderElectionID == "" || w.Identity == "") {
		errs = append(errs, errors.New("leader election needs --leader-election-namespace, --leader-election-id and --identity"))
	}
	if w.IdentityCheckInterval < time.Minute {
		errs = append(errs, fmt.Errorf("--identity-check-interval %s must be at least 1m: each check calls Keycloak for every component", w.IdentityCheckInterval))
	}
	if w.SecretsCheckInterval < time.Minute {
		errs = append(errs, fmt.Errorf("--secrets-check-interval %s must be at least 1m: each check calls Vault for every component", w.SecretsCheckInterval))
	}
	if w.ChildStatusWindow < 0 || w.ChildStatusWindow > 10*time.Second {
		errs = append(errs, fmt.Errorf("--child-status-window %s must be between 0 and 10s: it delays every Component's status by up to that long", w.ChildStatusWindow))
	}
	if w.WorkflowTaskTimeout < time.Second || w.WorkflowTaskTimeout > 2*time.Minute {
		errs = append(errs, fmt.Errorf("--workflow-task-timeout %s must be between 1s and 2m (Temporal's limit)", w.WorkflowTaskTimeout))
	}
	return errors.Join(errs...)
}
