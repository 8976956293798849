// Package runtime provides what every odaflow process needs, as fx
// constructors: a structured logger, a Prometheus registry, Kubernetes
// clients, a Temporal client and the HTTP server for health and metrics.
package runtime

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.uber.org/fx"
	"go.uber.org/fx/fxevent"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/odaflow/odaflow/internal/config"
	"github.com/odaflow/odaflow/internal/payloadcodec"
	"github.com/odaflow/odaflow/internal/secretfile"
	"github.com/odaflow/odaflow/webhook"
)

// NewLogger is a JSON slog logger at the configured level.
func NewLogger(c config.Common) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(c.LogLevel))
	log := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	// client-go logs through klog (leader election, reflectors, throttling):
	// the same JSON lines as odaflow's own.
	klog.SetSlogLogger(log)
	return log
}

// logIn is what the application's logger is made from: the configuration
// and, when the application is built WithLogHandler, that handler.
type logIn struct {
	fx.In
	Common  config.Common
	Handler slog.Handler `name:"log-handler" optional:"true"`
}

// newAppLogger is the application's logger: JSON on stderr (NewLogger), or
// the handler given WithLogHandler.
func newAppLogger(in logIn) *slog.Logger {
	if in.Handler != nil {
		return slog.New(in.Handler)
	}
	return NewLogger(in.Common)
}

// WithLogHandler sends an application's log records to h instead of JSON
// on stderr: `odaflow dev` runs the worker and the watcher in one process
// and gives each a file of its own. h applies the level itself.
func WithLogHandler(h slog.Handler) fx.Option {
	return fx.Provide(fx.Annotated{Name: "log-handler", Target: func() slog.Handler { return h }})
}

// FxLogger is fx's event logger for odaflow's applications: what fx
// provides, invokes and starts is a debug record (at info it would be most
// of a process's first screen, with stack traces), its errors stay errors.
func FxLogger(log *slog.Logger) fxevent.Logger {
	l := &fxevent.SlogLogger{Logger: log.With("component", "fx")}
	l.UseLogLevel(slog.LevelDebug)
	return l
}

// routeKlog sends client-go's klog lines (informer, reflector and leader
// election messages) through the application's slog handler, so they come
// out in its format and at its level instead of as klog's text on stderr.
// klog is global: in a process with several applications, the last one
// built receives them.
func routeKlog(log *slog.Logger) {
	klog.SetSlogLogger(log.With("component", "client-go"))
}

// NewRegistry is the process's Prometheus registry, with Go and process metrics.
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	registerKubeRequests(reg)
	return reg
}

// RESTConfig loads the kubeconfig, or the in-cluster config when none is given.
func RESTConfig(c config.Common) (*rest.Config, error) {
	var cfg *rest.Config
	var err error
	if c.Kubeconfig != "" {
		cfg, err = clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
	} else {
		cfg, err = rest.InClusterConfig()
	}
	if err != nil {
		return nil, fmt.Errorf("kubernetes client configuration: %w", err)
	}
	// odaflow batches its writes; these limits only guard against a bug
	// (zero values, as in tests that build Common by hand, get the defaults).
	cfg.QPS, cfg.Burst = float32(c.KubeQPS), c.KubeBurst
	if cfg.QPS <= 0 || cfg.Burst <= 0 {
		cfg.QPS, cfg.Burst = 500, 1000
	}
	cfg.UserAgent = "odaflow"
	// No gzip from the apiserver: it compresses a response of 128 KiB or
	// more and, from Kubernetes 1.37 (WatchListCompression), every event
	// of an informer's watch-list stream, flush by flush. odaflow runs
	// next to the apiserver, where that buys no time and costs CPU on both
	// ends (BENCH_PERF: 3% of the watcher's at N=100, decompressing watch
	// events).
	cfg.DisableCompression = true
	cfg.Wrap(RetryTransient)
	return cfg, nil
}

// Kube bundles the Kubernetes clients.
type Kube struct {
	fx.Out
	Config   *rest.Config
	Dynamic  dynamic.Interface
	Core     kubernetes.Interface
	Metadata metadata.Interface
}

// NewKube builds the Kubernetes clients. It does not contact the apiserver:
// an unreachable apiserver shows in /readyz and in retried calls, not as a
// failed start.
func NewKube(c config.Common) (Kube, error) {
	cfg, err := RESTConfig(c)
	if err != nil {
		return Kube{}, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return Kube{}, fmt.Errorf("dynamic client: %w", err)
	}
	core, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return Kube{}, fmt.Errorf("kubernetes client: %w", err)
	}
	md, err := metadata.NewForConfig(cfg)
	if err != nil {
		return Kube{}, fmt.Errorf("metadata client: %w", err)
	}
	return Kube{Config: cfg, Dynamic: dyn, Core: core, Metadata: md}, nil
}

// apiKeyFile is a Temporal API key read from a file and read again when the
// file changes.
type apiKeyFile struct{ f secretfile.File }

func newAPIKeyFile(path string) *apiKeyFile {
	return &apiKeyFile{f: secretfile.File{Path: path, What: "temporal API key"}}
}

func (a *apiKeyFile) get(context.Context) (string, error) { return a.f.Get() }

// TemporalOptions builds the client options from the configuration.
func TemporalOptions(c config.Common, log *slog.Logger, reg prometheus.Registerer) (client.Options, error) {
	opts := client.Options{
		HostPort:  c.TemporalAddress,
		Namespace: c.TemporalNamespace,
		Logger:    tlog.NewStructuredLogger(log.With("component", "temporal-sdk")),
	}
	if reg != nil {
		h, err := NewTemporalMetrics(reg, log)
		if err != nil {
			return opts, err
		}
		opts.MetricsHandler = h
	}
	if c.PayloadKeysDir != "" {
		keys, err := payloadcodec.NewKeyring(c.PayloadKeysDir, c.PayloadKeyID, log.With("component", "payload-codec"))
		if err != nil {
			return opts, err
		}
		opts.DataConverter = payloadcodec.Codec{Keys: keys}.DataConverter()
		// Failure messages and stack traces can quote a spec (a validation
		// error naming a field's value): they go into the encoded
		// attributes, sealed like every other payload.
		opts.FailureConverter = temporal.NewDefaultFailureConverter(temporal.DefaultFailureConverterOptions{
			DataConverter:          opts.DataConverter,
			EncodeCommonAttributes: true,
		})
	}
	if c.TemporalCompression != "gzip" {
		// The SDK's default is gzip (config.Common.TemporalCompression).
		opts.ConnectionOptions.GrpcCompression = &client.GrpcCompressionNone{}
	}
	tlsOn := c.TLSCert != "" || c.TLSCA != "" || c.TLSServerName != "" || (c.TemporalTLS != nil && *c.TemporalTLS)
	tlsOff := c.TemporalTLS != nil && !*c.TemporalTLS
	if tlsOn && !tlsOff {
		tc := &tls.Config{ServerName: c.TLSServerName, MinVersion: tls.VersionTLS12}
		if c.TLSCert != "" {
			// Read again when the files change: a rotated client
			// certificate is presented at the next connection without a
			// restart.
			cert, err := webhook.NewCertFiles(c.TLSCert, c.TLSKey, log.With("component", "temporal-tls"))
			if err != nil {
				return opts, fmt.Errorf("temporal client certificate: %w", err)
			}
			tc.GetClientCertificate = cert.GetClientCertificate
		}
		if c.TLSCA != "" {
			pem, err := os.ReadFile(c.TLSCA)
			if err != nil {
				return opts, fmt.Errorf("temporal CA: %w", err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return opts, errors.New("temporal CA: no certificate found in " + c.TLSCA)
			}
			tc.RootCAs = pool
		}
		opts.ConnectionOptions.TLS = tc
	}
	if c.APIKeyFile != "" {
		key := newAPIKeyFile(c.APIKeyFile)
		if _, err := key.get(context.Background()); err != nil {
			return opts, err
		}
		// Every request asks for the key; the file is read again only
		// when it changed, so a rotated key is used without a restart.
		opts.Credentials = client.NewAPIKeyDynamicCredentials(key.get)
	} else if c.APIKey != "" {
		// TEMPORAL_API_KEY or a Temporal profile (config.ApplyTemporalEnv).
		opts.Credentials = client.NewAPIKeyStaticCredentials(c.APIKey)
	}
	switch {
	case tlsOff:
		// TEMPORAL_TLS=false: plaintext even with an API key.
		opts.ConnectionOptions.TLSDisabled = true
	case opts.Credentials != nil && opts.ConnectionOptions.TLS == nil:
		// An API key is sent over TLS only.
		opts.ConnectionOptions.TLS = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	return opts, nil
}

// NewTemporal is a lazy Temporal client: it connects on first use, so an
// unreachable server delays work (with retries) instead of failing the start.
func NewTemporal(lc fx.Lifecycle, c config.Common, log *slog.Logger, reg *prometheus.Registry) (client.Client, error) {
	opts, err := TemporalOptions(c, log, reg)
	if err != nil {
		return nil, err
	}
	if c.OTLPEndpoint != "" {
		tr, err := NewTracing(context.Background(), c.OTLPEndpoint)
		if err != nil {
			return nil, err
		}
		opts.Interceptors = append(opts.Interceptors, tr.Interceptor)
		// Appended before the client's hook, so it runs after it: the
		// spans of the last calls are flushed.
		lc.Append(fx.StopHook(tr.Provider.Shutdown))
		log.Info("tracing to OTLP collector", "endpoint", c.OTLPEndpoint)
	}
	cl, err := client.NewLazyClient(opts)
	if err != nil {
		return nil, fmt.Errorf("temporal client: %w", err)
	}
	lc.Append(fx.StopHook(cl.Close))
	return cl, nil
}

// Health tracks readiness: every check must pass. Checks run on request,
// each bounded by a short timeout, and their results are cached briefly so
// probes cannot overload the dependencies.
type Health struct {
	checks  []namedCheck
	cached  atomic.Pointer[healthResult]
	maxAge  time.Duration
	timeout time.Duration
}

type namedCheck struct {
	name string
	fn   func(context.Context) error
}

type healthResult struct {
	at  time.Time
	err error
}

// NewHealth builds an empty readiness tracker.
func NewHealth() *Health { return &Health{maxAge: 2 * time.Second, timeout: 3 * time.Second} }

// Add registers a readiness check.
func (h *Health) Add(name string, fn func(context.Context) error) {
	h.checks = append(h.checks, namedCheck{name, fn})
}

// Ready runs (or reuses) the checks.
func (h *Health) Ready(ctx context.Context) error {
	if r := h.cached.Load(); r != nil && time.Since(r.at) < h.maxAge {
		return r.err
	}
	ctx, cancel := context.WithTimeout(ctx, h.timeout)
	defer cancel()
	var errs []error
	for _, c := range h.checks {
		if err := c.fn(ctx); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", c.name, err))
		}
	}
	err := errors.Join(errs...)
	h.cached.Store(&healthResult{at: time.Now(), err: err})
	return err
}

// KubeCheck is ready when the apiserver answers /readyz.
func KubeCheck(core kubernetes.Interface) func(context.Context) error {
	return func(ctx context.Context) error {
		return core.Discovery().RESTClient().Get().AbsPath("/readyz").Do(ctx).Error()
	}
}

// TemporalCheck is ready when the Temporal frontend answers.
func TemporalCheck(cl client.Client) func(context.Context) error {
	return func(ctx context.Context) error {
		_, err := cl.CheckHealth(ctx, &client.CheckHealthRequest{})
		return err
	}
}

// Route is a handler a process serves next to health and metrics (the
// worker's identity listener), provided into the "http-routes" group.
type Route struct {
	Pattern string
	Handler http.Handler
}

// Routes collects the Route values of the fx group.
type Routes struct {
	fx.In
	Routes []Route `group:"http-routes"`
}

// ServeHTTP serves /healthz (the process is alive), /readyz (its
// dependencies answer), /metrics and the process's own routes for the life
// of the fx app.
func ServeHTTP(lc fx.Lifecycle, c config.Common, reg *prometheus.Registry, health *Health, log *slog.Logger, extra Routes) {
	mux := http.NewServeMux()
	for _, r := range extra.Routes {
		mux.Handle(r.Pattern, r.Handler)
	}
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		if err := health.Ready(r.Context()); err != nil {
			http.Error(w, "not ready: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	srv := newHTTPServer(c.HTTPAddress, mux)
	lc.Append(fx.Hook{
		OnStart: func(context.Context) error {
			ln, err := net.Listen("tcp", c.HTTPAddress)
			if err != nil {
				return fmt.Errorf("listen on %s: %w", c.HTTPAddress, err)
			}
			log.Info("serving health and metrics", "address", ln.Addr().String())
			go func() {
				if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
					log.Error("http server stopped", "err", err)
				}
			}()
			return nil
		},
		OnStop: func(ctx context.Context) error { return srv.Shutdown(ctx) },
	})
}

// MaxHeaderBytes bounds a request's headers on odaflow's HTTP port. It
// serves the identity listener, which hubs in every tenant's namespace can
// reach: a client must not hold the worker's memory or connections with
// oversized or endless requests.
const MaxHeaderBytes = 16 << 10

func newHTTPServer(addr string, h http.Handler) *http.Server {
	return &http.Server{
		Addr:              addr,
		Handler:           h,
		ReadHeaderTimeout: 5 * time.Second,
		// Bodies are small (listener events are capped at
		// listener.MaxBody); a slow one is a held connection.
		ReadTimeout:    15 * time.Second,
		WriteTimeout:   30 * time.Second,
		IdleTimeout:    90 * time.Second,
		MaxHeaderBytes: MaxHeaderBytes,
	}
}

// Module provides the shared constructors.
var Module = fx.Options(
	fx.Provide(newAppLogger, NewRegistry, NewKube, NewTemporal, NewHealth),
	fx.WithLogger(FxLogger),
	fx.Invoke(routeKlog, ServeHTTP),
)
