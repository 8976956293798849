// Package config reads odaflow's configuration from flags and environment
// variables (a flag wins over its variable) and validates it at start.
package config

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/url"
	"os"
	"path"
	"slices"
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
	// APIKeyFile holds the Temporal API key; odaflow's own flags never take
	// the key itself.
	APIKeyFile string
	// APIKey is a Temporal API key from TEMPORAL_API_KEY or a Temporal
	// profile (ApplyTemporalEnv), as Temporal's own tools take it; used
	// when APIKeyFile is empty, and never reloaded.
	APIKey string
	// TemporalTLS is TEMPORAL_TLS or a profile's tls.disabled
	// (ApplyTemporalEnv): nil leaves TLS to the other settings (on with a
	// certificate, a CA, a server name or an API key), true turns it on
	// with the system roots, false off.
	TemporalTLS *bool
	// IngressSelector and IngressNamespace find the gateway's ingress
	// Service, whose address makes the ExposedAPI URLs. The namespace is
	// required: searching every namespace would let a tenant's
	// LoadBalancer Service with the selector's labels become the ingress.
	IngressSelector  string
	IngressNamespace string
	// Gateway and PublicHostname make the ExposedAPI URLs: the worker
	// publishes them and the watcher computes the same URL for each
	// provider of a DependentAPI, so both processes take them.
	Gateway        string
	PublicHostname string
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
	// PayloadKeysDir turns the payload codec on: every payload odaflow
	// puts into Temporal is sealed with AES-256-GCM under a key from this
	// directory (a mounted Secret, one file per key, the file name is the
	// key ID). Empty = payloads are stored as they are.
	PayloadKeysDir string
	// PayloadKeyID is the key new payloads are sealed with; empty = the
	// lexically last key ID in PayloadKeysDir.
	PayloadKeyID string
	// StatusKeyFile holds the key that seals odaflow's status writes
	// (oda.AnnotationStatusSeal): the worker seals with it, the watcher
	// checks with it, so both must read the same key. Empty = no seals:
	// any fence stops odaflow's writes and a forged status stays.
	StatusKeyFile string
	// envErrs are environment variables Bind could not parse, reported by
	// Validate with everything else.
	envErrs []error
}

// Worker configures `odaflow worker`.
type Worker struct {
	Common
	IstioGateway string
	// MetricsMode is how metrics APIs are made scrapable, the Canvas's
	// OPENMETRICS_IMPLEMENTATION (MetricsModes).
	MetricsMode string
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
	// SharedAPINamespaces are globs of the namespaces whose ExposedAPIs
	// may provide for DependentAPIs in every namespace
	// (dependency.Trust); empty shares none.
	SharedAPINamespaces []string
	// AllowedHostnames are the host names, besides the Canvas's own
	// address, an ExposedAPI's spec.hostname may name
	// (gateway.HostnameAllowed).
	AllowedHostnames []string
}

// DefaultIngressNamespace is where the Canvas charts install the Istio
// ingress gateway, and the chart's gateway.ingress.namespace.
const DefaultIngressNamespace = "istio-ingress"

// Bind registers the common flags.
func (c *Common) Bind(fs *flag.FlagSet) {
	f := Flags{FS: fs, Errs: &c.envErrs}
	f.String(&c.Kubeconfig, "kubeconfig", "", "kubeconfig file; empty uses the in-cluster service account")
	f.String(&c.TemporalAddress, "temporal-address", "127.0.0.1:7233", "Temporal frontend host:port")
	f.String(&c.TemporalNamespace, "temporal-namespace", "default", "Temporal namespace")
	f.String(&c.TaskQueue, "task-queue", "odaflow", "Temporal task queue")
	f.List(&c.Namespaces, "namespaces", nil, "namespaces to serve, comma-separated, globs allowed (components,odacompns-*); empty serves all")
	f.String(&c.HTTPAddress, "http-address", ":8080", "address of /healthz, /readyz and /metrics")
	f.String(&c.LogLevel, "log-level", "info", "debug, info, warn or error")
	f.String(&c.TLSCert, "temporal-tls-cert", "", "client certificate file for mTLS to Temporal")
	f.String(&c.TLSKey, "temporal-tls-key", "", "client key file for mTLS to Temporal")
	f.String(&c.TLSCA, "temporal-tls-ca", "", "CA file to verify the Temporal server")
	f.String(&c.TLSServerName, "temporal-tls-server-name", "", "server name to verify on the Temporal certificate")
	f.Float64(&c.KubeQPS, "kube-qps", 500, "apiserver requests per second this process may make")
	f.Int(&c.KubeBurst, "kube-burst", 1000, "apiserver request burst")
	f.String(&c.IngressSelector, "ingress-selector", "istio=ingressgateway", "label selector of the gateway's ingress Service")
	f.String(&c.IngressNamespace, "ingress-namespace", DefaultIngressNamespace, "namespace of the gateway's ingress Service (required: a Service in any other namespace is never the ingress)")
	f.String(&c.Gateway, "gateway", "istio", "API gateway: istio, kong, kong-admin or apisix")
	f.String(&c.PublicHostname, "public-hostname", "", "public host name of the gateway; overrides the load-balancer address")
	f.Bool(&c.SearchAttributes, "search-attributes", true,
		"register and set the OdaComponent, K8sNamespace, OdaKind and DeploymentStatus search attributes")
	f.String(&c.OTLPEndpoint, "otlp-endpoint", "",
		"OTLP/gRPC collector URL for traces, e.g. http://otel-collector:4317; empty turns tracing off")
	f.String(&c.APIKeyFile, "temporal-api-key-file", "", "file holding a Temporal API key")
	f.String(&c.TemporalCompression, "temporal-grpc-compression", "none",
		"gRPC compression of requests to Temporal: none, or gzip for a Temporal across a metered link such as Temporal Cloud")
	f.String(&c.StatusKeyFile, "status-key-file", "",
		"file holding the key (a mounted Secret, at least 32 characters) that seals odaflow's status writes so that a status or status-fence written by anyone else is repaired; the worker and the watcher need the same key; empty turns the check off")
	c.BindPayloadKeys(f)
}

// minStatusKey is the shortest status key accepted: 32 random characters
// are more than HMAC-SHA256 needs.
const minStatusKey = 32

// StatusKey reads --status-key-file: nil when it is empty. The key is read
// once; a new key takes a restart of both the worker and the watcher (until
// then, every status is repaired once under the new key).
func (c Common) StatusKey() ([]byte, error) {
	if c.StatusKeyFile == "" {
		return nil, nil
	}
	b, err := os.ReadFile(c.StatusKeyFile)
	if err != nil {
		return nil, fmt.Errorf("--status-key-file: %w", err)
	}
	key := bytes.TrimSpace(b)
	if len(key) < minStatusKey {
		return nil, fmt.Errorf("--status-key-file %s: the key has %d characters, want at least %d", c.StatusKeyFile, len(key), minStatusKey)
	}
	return key, nil
}

// BindPayloadKeys registers the payload codec's flags with f (also used
// by the codec server, which needs the keys but not the rest of Common).
func (c *Common) BindPayloadKeys(f Flags) {
	f.String(&c.PayloadKeysDir, "payload-keys-dir", "",
		"directory of AES-256 keys (a mounted Secret, one file per key, the file name is the key ID) that encrypt every payload put into Temporal; empty stores payloads unencrypted")
	f.String(&c.PayloadKeyID, "payload-key-id", "",
		"ID of the key new payloads are encrypted with; empty uses the lexically last key in --payload-keys-dir")
}

// ValidatePayloadKeys checks the payload codec's flags.
func (c Common) ValidatePayloadKeys() []error {
	var errs []error
	if c.PayloadKeyID != "" && c.PayloadKeysDir == "" {
		errs = append(errs, errors.New("--payload-key-id needs --payload-keys-dir"))
	}
	if c.PayloadKeysDir != "" {
		if st, err := os.Stat(c.PayloadKeysDir); err != nil {
			errs = append(errs, fmt.Errorf("--payload-keys-dir: %w", err))
		} else if !st.IsDir() {
			errs = append(errs, fmt.Errorf("--payload-keys-dir %s is not a directory", c.PayloadKeysDir))
		}
	}
	return errs
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
	if c.IngressNamespace == "" {
		errs = append(errs, fmt.Errorf("--ingress-namespace must name the namespace of the gateway's ingress Service (the chart's default is %s): odaflow does not search every namespace, where any tenant could publish a Service with the selector's labels", DefaultIngressNamespace))
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
	if c.TemporalTLS != nil && !*c.TemporalTLS && (c.TLSCert != "" || c.TLSCA != "" || c.TLSServerName != "") {
		errs = append(errs, errors.New("TLS to Temporal is disabled (TEMPORAL_TLS or the profile) but --temporal-tls-* settings are given"))
	}
	errs = append(errs, c.ValidatePayloadKeys()...)
	if !slices.Contains(Gateways, c.Gateway) {
		errs = append(errs, fmt.Errorf("--gateway %q must be one of %s", c.Gateway, strings.Join(Gateways, ", ")))
	}
	if (c.TLSCert == "") != (c.TLSKey == "") {
		errs = append(errs, errors.New("--temporal-tls-cert and --temporal-tls-key go together"))
	}
	for _, f := range []struct{ flag, path string }{
		{"--kubeconfig", c.Kubeconfig}, {"--temporal-tls-cert", c.TLSCert}, {"--temporal-tls-key", c.TLSKey},
		{"--temporal-tls-ca", c.TLSCA}, {"--temporal-api-key-file", c.APIKeyFile}, {"--status-key-file", c.StatusKeyFile},
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

// DefaultIstioGateway is the Gateway the Canvas's charts install and point
// their Istio operator at (api-operator-istio componentGateway), so that
// odaflow's VirtualServices land where the Canvas's did.
const DefaultIstioGateway = "canvas/component-gateway"

// Gateways odaflow can drive.
var Gateways = []string{"istio", "kong", "kong-admin", "apisix"}

// MetricsModes are the --metrics-mode values: the Canvas's three
// OPENMETRICS_IMPLEMENTATION modes and none.
var MetricsModes = []string{"ServiceMonitor", "PrometheusAnnotation", "DataDogAnnotation", "none"}

// DefaultMetricsMode is the Canvas component operator's own default
// (the chart sets the umbrella's PrometheusAnnotation instead).
const DefaultMetricsMode = "ServiceMonitor"

// Bind registers the worker's flags.
func (w *Worker) Bind(fs *flag.FlagSet) {
	w.Common.Bind(fs)
	f := Flags{FS: fs, Errs: &w.envErrs}
	f.String(&w.IstioGateway, "istio-gateway", DefaultIstioGateway, "Istio Gateway the VirtualServices bind to, namespace/name")
	f.String(&w.MetricsMode, "metrics-mode", DefaultMetricsMode,
		"how metrics APIs are scraped (the Canvas's openMetricsImplementation): ServiceMonitor, PrometheusAnnotation, DataDogAnnotation or none")
	f.String(&w.KongAdminURL, "kong-admin-url", "",
		"Kong Admin API URL, required with --gateway=kong-admin, e.g. http://kong-admin.kong:8001")
	f.String(&w.KongAdminTokenFile, "kong-admin-token-file", "",
		"file holding the Kong Admin API token (a mounted Secret), re-read on every request; empty sends none")
	f.String(&w.Keycloak.URL, "keycloak-url", "",
		"Keycloak base URL (with /auth for Keycloak before 17); empty leaves IdentityConfigs Failed with the reason")
	f.String(&w.Keycloak.Realm, "keycloak-realm", "odari", "realm of the component clients")
	f.String(&w.Keycloak.AdminRealm, "keycloak-admin-realm", "master", "realm the admin user logs in to")
	f.String(&w.Keycloak.AdminSecret, "keycloak-admin-secret", "",
		"namespace/name of the Secret holding the Keycloak admin username and password")
	f.Duration(&w.Keycloak.Timeout, "keycloak-timeout", 20*time.Second, "timeout of one Keycloak request")
	f.String(&w.ListenerBaseURL, "listener-base-url", "",
		"URL at which component hubs reach this worker's identity listener, e.g. http://odaflow-worker.canvas.svc:8080; empty registers no hub")
	f.String(&w.ListenerKeyFile, "listener-key-file", "",
		"file of listener keys, one per line, at least 32 bytes each, the first signing")
	f.String(&w.Vault.Address, "vault-address", "", "Vault URL; empty leaves SecretsManagements Failed with the reason")
	f.String(&w.Vault.CACertFile, "vault-ca-cert-file", "", "PEM bundle that verifies Vault's certificate")
	f.Bool(&w.Vault.SkipVerify, "vault-skip-verify", false, "do not verify Vault's certificate: development only")
	f.String(&w.Vault.TokenFile, "vault-token-file", "", "file holding odaflow's Vault token, a mounted Secret re-read on every call")
	f.String(&w.Vault.LoginAuthPath, "vault-login-auth-path", "", "kubernetes auth mount odaflow logs in through when no token file is given")
	f.String(&w.Vault.LoginRole, "vault-login-role", "", "Vault role of odaflow's kubernetes login")
	f.String(&w.Vault.AuthPath, "vault-auth-path", "", "kubernetes auth mount the sidecars log in through (default kubernetes-sman)")
	f.String(&w.Vault.KubernetesHost, "vault-kubernetes-host", "", "apiserver URL Vault calls for TokenReview, written to the auth method's config")
	f.String(&w.Vault.KubernetesCAFile, "vault-kubernetes-ca-file", "", "CA of that apiserver")
	f.String(&w.Vault.TokenReviewerJWTFile, "vault-token-reviewer-jwt-file", "", "token Vault uses for TokenReview")
	f.String(&w.Vault.Audience, "vault-audience", "", "audience required in the sidecars' tokens")
	f.String(&w.ServiceInventoryURL, "service-inventory-url", "",
		"TMF638 Service Inventory (Canvas Info) API base, up to /service, where resolved dependencies are recorded; empty records nothing")
}

// Validate checks the worker's configuration.
func (w Worker) Validate() error {
	errs := []error{w.Common.Validate()}
	if !slices.Contains(MetricsModes, w.MetricsMode) {
		errs = append(errs, fmt.Errorf("--metrics-mode %q must be one of %s", w.MetricsMode, strings.Join(MetricsModes, ", ")))
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
	f := Flags{FS: fs, Errs: &w.envErrs}
	f.Bool(&w.LeaderElect, "leader-elect", true, "elect one active watcher with a Lease")
	f.String(&w.LeaderElectionNamespace, "leader-election-namespace", "default", "namespace of the Lease (the chart sets the pod's namespace)")
	f.String(&w.LeaderElectionID, "leader-election-id", "odaflow-watcher", "name of the Lease")
	// A pod's host name is its name, which is what the Lease should show.
	host, _ := os.Hostname()
	f.String(&w.Identity, "identity", host, "this replica's identity in the Lease (the chart sets the pod's name)")
	f.Duration(&w.IdentityCheckInterval, "identity-check-interval", 10*time.Minute, "how often Keycloak is checked against each IdentityConfig and drift repaired")
	f.Duration(&w.SecretsCheckInterval, "secrets-check-interval", 10*time.Minute, "how often Vault is checked against each ready SecretsManagement and drift repaired")
	f.Duration(&w.ChildStatusWindow, "child-status-window", 250*time.Millisecond,
		"how long a child's status change waits for its siblings' before their Component is told of them together, in one workflow task; 0 tells each at once")
	f.List(&w.SharedAPINamespaces, "shared-api-namespaces", nil,
		"namespaces whose ExposedAPIs may provide for DependentAPIs in every namespace, comma-separated, globs allowed; empty: a DependentAPI resolves in its own namespace or the one its selector.namespace names")
	f.List(&w.AllowedHostnames, "allowed-hostnames", nil,
		"host names an ExposedAPI's spec.hostname may put into its URL besides the ingress's address and --public-hostname, comma-separated, globs allowed (*.apps.example.com); any other is refused")
	f.Duration(&w.WorkflowTaskTimeout, "workflow-task-timeout", DefaultWorkflowTaskTimeout,
		"the workflow-task timeout each workflow starts with: how long a worker has for one task, its local activities (apiserver calls) included, before Temporal gives the task to another")
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
	for _, g := range []struct {
		flag     string
		patterns []string
	}{{"--shared-api-namespaces", w.SharedAPINamespaces}, {"--allowed-hostnames", w.AllowedHostnames}} {
		for _, p := range g.patterns {
			if _, err := path.Match(p, ""); err != nil {
				errs = append(errs, fmt.Errorf("%s: %q is not a valid glob: %w", g.flag, p, err))
			}
		}
	}
	if w.WorkflowTaskTimeout < time.Second || w.WorkflowTaskTimeout > 2*time.Minute {
		errs = append(errs, fmt.Errorf("--workflow-task-timeout %s must be between 1s and 2m (Temporal's limit)", w.WorkflowTaskTimeout))
	}
	return errors.Join(errs...)
}
