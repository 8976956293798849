// Package webhook is odaflow's webhook server: one HTTPS listener for every
// webhook the API server calls, started by `odaflow webhook`.
//
// It serves the Component conversion webhook (package conversion) at
// /convert and at / (the path the Canvas CRD's clientConfig uses), and,
// when configured, the secrets-sidecar mutating pod webhook (package
// webhook/sidecar) at /mutate-pod, so that one process, one Service and one
// certificate serve them all. /healthz (alive) and /readyz (serving, not
// draining, certificate valid) are on the same listener, so the probes check
// the TLS path the API server uses.
//
// The serving certificate comes from files (cert-manager's Secret, mounted)
// and is re-read when they change, or from memory (--self-signed, tests).
package webhook

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/odaflow/odaflow/webhook/conversion"
)

// Paths the server serves.
const (
	PathConvert = "/convert"
	// PathMutatePod is the secrets-sidecar webhook (package
	// webhook/sidecar), served when Config.MutatePod is set.
	PathMutatePod = "/mutate-pod"
	PathHealthz   = "/healthz"
	PathReadyz    = "/readyz"
)

// Defaults of Config.
const (
	DefaultAddress         = ":9443"
	DefaultShutdownTimeout = 20 * time.Second
)

// Config configures a Server. Give the certificate either as files
// (CertFile and KeyFile) or in memory (CertPEM and KeyPEM), not both.
type Config struct {
	// Address is the listen address, [host]:port; DefaultAddress when empty.
	// Port 0 picks a free port (see Server.Addr).
	Address string
	// CertFile and KeyFile are the PEM serving certificate (with any
	// intermediates after it) and its key. They are read at start and again
	// whenever either file changes, so a certificate renewed by cert-manager
	// is served without a restart.
	CertFile, KeyFile string
	// CertPEM and KeyPEM are a fixed in-memory certificate and key.
	CertPEM, KeyPEM []byte
	// Logger receives the server's log; nothing is logged when nil.
	Logger *slog.Logger
	// DrainDelay is how long Run keeps serving after its context ends, with
	// /readyz failing, so that Service endpoints drop the pod before the
	// listener closes. Zero shuts down at once.
	DrainDelay time.Duration
	// ShutdownTimeout bounds how long Run waits for requests in flight;
	// DefaultShutdownTimeout when zero.
	ShutdownTimeout time.Duration
	// MutatePod, when set, is the mutating pod webhook served at
	// PathMutatePod (the secrets sidecar injection).
	MutatePod http.Handler
	// ReadyChecks are further conditions of /readyz, e.g. the sidecar
	// webhook's cache being synced: a webhook whose failure policy is Fail
	// should not receive traffic before it can answer correctly.
	ReadyChecks []func() error
	// Registerer, when set, receives the webhooks' request metrics:
	// odaflow_webhook_requests_total{webhook,code} and
	// odaflow_webhook_request_duration_seconds{webhook}, webhook being
	// conversion or sidecar.
	Registerer prometheus.Registerer
}

// Server is one HTTPS server for all odaflow webhooks.
type Server struct {
	cfg   Config
	log   *slog.Logger
	mux   *http.ServeMux
	certs *certSource
	srv   *http.Server

	draining atomic.Bool

	mu       sync.Mutex
	ln       net.Listener
	done     chan struct{} // closed when Serve returns
	serveErr error
}

// New checks the configuration, loads the certificate (a missing or invalid
// certificate fails here, not at the first handshake) and mounts the
// conversion webhook and the health endpoints. It does not listen yet.
func New(cfg Config) (*Server, error) {
	if cfg.Address == "" {
		cfg.Address = DefaultAddress
	}
	if cfg.ShutdownTimeout <= 0 {
		cfg.ShutdownTimeout = DefaultShutdownTimeout
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if _, _, err := net.SplitHostPort(cfg.Address); err != nil {
		return nil, fmt.Errorf("webhook server: address %q must be [host]:port: %w", cfg.Address, err)
	}
	certs, err := newCertSource(cfg, log)
	if err != nil {
		return nil, fmt.Errorf("webhook server: %w", err)
	}
	s := &Server{cfg: cfg, log: log, mux: http.NewServeMux(), certs: certs}

	instrument, err := instrumenter(cfg.Registerer)
	if err != nil {
		return nil, fmt.Errorf("webhook server: %w", err)
	}
	conv := instrument("conversion", conversion.NewHandler(log.With("webhook", "conversion")))
	s.mux.Handle(PathConvert, conv)
	s.mux.Handle("/{$}", conv) // the Canvas CRD's clientConfig path
	if cfg.MutatePod != nil {
		s.mux.Handle(PathMutatePod, instrument("sidecar", cfg.MutatePod))
	}
	s.mux.HandleFunc(PathHealthz, func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("ok\n"))
	})
	s.mux.HandleFunc(PathReadyz, s.readyz)

	s.srv = &http.Server{
		Handler: s.mux,
		TLSConfig: &tls.Config{
			MinVersion:     tls.VersionTLS12,
			GetCertificate: certs.GetCertificate,
		},
		// The API server's webhook timeout is at most 30 s.
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       90 * time.Second,
		// TLS handshake failures land here: the usual sign of a caBundle
		// that does not match the serving certificate.
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	return s, nil
}

// instrumenter wraps a webhook's handler with request metrics registered in
// reg; without reg it returns the handler unchanged.
func instrumenter(reg prometheus.Registerer) (func(name string, h http.Handler) http.Handler, error) {
	if reg == nil {
		return func(_ string, h http.Handler) http.Handler { return h }, nil
	}
	requests := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "odaflow_webhook_requests_total",
		Help: "Webhook requests from the API server, by webhook and HTTP status code.",
	}, []string{"webhook", "code"})
	duration := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "odaflow_webhook_request_duration_seconds",
		Help:    "Time to answer a webhook request, by webhook.",
		Buckets: prometheus.DefBuckets,
	}, []string{"webhook"})
	for _, c := range []prometheus.Collector{requests, duration} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register webhook metrics: %w", err)
		}
	}
	return func(name string, h http.Handler) http.Handler {
		l := prometheus.Labels{"webhook": name}
		return promhttp.InstrumentHandlerDuration(duration.MustCurryWith(l),
			promhttp.InstrumentHandlerCounter(requests.MustCurryWith(l), h))
	}, nil
}

// Start listens on the configured address and serves in the background.
func (s *Server) Start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln != nil {
		return errors.New("webhook server: already started")
	}
	ln, err := net.Listen("tcp", s.cfg.Address)
	if err != nil {
		return fmt.Errorf("webhook server: listen on %s: %w", s.cfg.Address, err)
	}
	s.ln = ln
	s.done = make(chan struct{})
	s.log.Info("serving webhooks over HTTPS", "address", ln.Addr().String(), "certificate", s.certs.describe())
	go func() {
		defer close(s.done)
		// Certificates come from TLSConfig.GetCertificate.
		err := s.srv.ServeTLS(ln, "", "")
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		if err != nil {
			s.log.Error("webhook server stopped", "error", err)
		}
		s.mu.Lock()
		s.serveErr = err
		s.mu.Unlock()
	}()
	return nil
}

// Addr is the address the server listens on (nil before Start).
func (s *Server) Addr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln == nil {
		return nil
	}
	return s.ln.Addr()
}

// Shutdown stops accepting connections and waits, until ctx ends, for the
// requests in flight to finish.
func (s *Server) Shutdown(ctx context.Context) error {
	s.draining.Store(true)
	s.mu.Lock()
	done := s.done
	s.mu.Unlock()
	if done == nil {
		return nil
	}
	err := s.srv.Shutdown(ctx)
	if err != nil {
		// Requests still running after the deadline: cut them off.
		_ = s.srv.Close()
	}
	<-done
	return err
}

// Run serves until ctx ends (SIGTERM), then drains for DrainDelay and shuts
// down gracefully. It returns early with the error if the server fails.
func (s *Server) Run(ctx context.Context) error {
	if err := s.Start(); err != nil {
		return err
	}
	s.mu.Lock()
	done := s.done
	s.mu.Unlock()
	select {
	case <-done:
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.serveErr // nil after a Shutdown from elsewhere
	case <-ctx.Done():
	}
	s.draining.Store(true)
	if s.cfg.DrainDelay > 0 {
		s.log.Info("draining before shutdown", "delay", s.cfg.DrainDelay.String())
		select {
		case <-time.After(s.cfg.DrainDelay):
		case <-done:
		}
	}
	s.log.Info("shutting down the webhook server", "timeout", s.cfg.ShutdownTimeout.String())
	shutdownCtx, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownTimeout)
	defer cancel()
	if err := s.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("webhook server: graceful shutdown: %w", err)
	}
	s.log.Info("webhook server stopped")
	return nil
}

func (s *Server) readyz(w http.ResponseWriter, _ *http.Request) {
	if s.draining.Load() {
		http.Error(w, "not ready: shutting down", http.StatusServiceUnavailable)
		return
	}
	if err := s.certs.valid(time.Now()); err != nil {
		http.Error(w, "not ready: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	for _, check := range s.cfg.ReadyChecks {
		if err := check(); err != nil {
			http.Error(w, "not ready: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
	}
	_, _ = w.Write([]byte("ok\n"))
}

// certSource serves the certificate to TLS handshakes. With files, every
// handshake compares the files' identity, size and modification time with
// those last read (two stat calls) and re-reads them when they differ. A
// pair that fails to load (cert-manager writes the Secret's keys one after
// the other, a half-written file) is logged and the previous certificate
// stays in service until the files change again.
type certSource struct {
	certFile, keyFile string
	log               *slog.Logger
	now               func() time.Time

	mu      sync.Mutex
	cert    *tls.Certificate
	certSt  os.FileInfo // stamps of the files last tried, loaded or not
	keySt   os.FileInfo
	statErr string // last stat error logged, to log each problem once
}

func newCertSource(cfg Config, log *slog.Logger) (*certSource, error) {
	files := cfg.CertFile != "" || cfg.KeyFile != ""
	mem := len(cfg.CertPEM) > 0 || len(cfg.KeyPEM) > 0
	switch {
	case files && mem:
		return nil, errors.New("give the certificate as files or in memory, not both")
	case !files && !mem:
		return nil, errors.New("no serving certificate: give a certificate and key file")
	case files && (cfg.CertFile == "" || cfg.KeyFile == ""):
		return nil, errors.New("the certificate file and the key file go together")
	case mem && (len(cfg.CertPEM) == 0 || len(cfg.KeyPEM) == 0):
		return nil, errors.New("the in-memory certificate and key go together")
	}
	c := &certSource{certFile: cfg.CertFile, keyFile: cfg.KeyFile, log: log, now: time.Now}
	if mem {
		cert, err := parseKeyPair(cfg.CertPEM, cfg.KeyPEM, c.now())
		if err != nil {
			return nil, fmt.Errorf("serving certificate: %w", err)
		}
		c.cert = cert
		return c, nil
	}
	certSt, keySt, err := c.stat()
	if err != nil {
		return nil, err
	}
	cert, err := c.read()
	if err != nil {
		return nil, err
	}
	c.cert, c.certSt, c.keySt = cert, certSt, keySt
	return c, nil
}

func (c *certSource) fromFiles() bool { return c.certFile != "" }

func (c *certSource) describe() string {
	if !c.fromFiles() {
		return "in memory"
	}
	return c.certFile
}

func (c *certSource) stat() (os.FileInfo, os.FileInfo, error) {
	certSt, err := os.Stat(c.certFile)
	if err != nil {
		return nil, nil, fmt.Errorf("certificate file: %w", err)
	}
	keySt, err := os.Stat(c.keyFile)
	if err != nil {
		return nil, nil, fmt.Errorf("key file: %w", err)
	}
	return certSt, keySt, nil
}

func (c *certSource) read() (*tls.Certificate, error) {
	certPEM, err := os.ReadFile(c.certFile)
	if err != nil {
		return nil, fmt.Errorf("certificate file: %w", err)
	}
	keyPEM, err := os.ReadFile(c.keyFile)
	if err != nil {
		return nil, fmt.Errorf("key file: %w", err)
	}
	cert, err := parseKeyPair(certPEM, keyPEM, c.now())
	if err != nil {
		return nil, fmt.Errorf("serving certificate %s with key %s: %w", c.certFile, c.keyFile, err)
	}
	return cert, nil
}

// GetCertificate is the tls.Config hook.
func (c *certSource) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fromFiles() {
		c.reloadIfChanged()
	}
	return c.cert, nil
}

// reloadIfChanged re-reads the files when they differ from the last try.
// Called with c.mu held.
func (c *certSource) reloadIfChanged() {
	certSt, keySt, err := c.stat()
	if err != nil {
		if msg := err.Error(); msg != c.statErr {
			c.statErr = msg
			c.log.Warn("cannot check the serving certificate for renewal; serving the loaded one", "error", err)
		}
		return
	}
	c.statErr = ""
	if sameStamp(certSt, c.certSt) && sameStamp(keySt, c.keySt) {
		return
	}
	c.certSt, c.keySt = certSt, keySt
	cert, err := c.read()
	if err != nil {
		c.log.Warn("serving certificate changed but cannot be loaded; serving the previous one until the files change again", "error", err)
		return
	}
	c.cert = cert
	c.log.Info("serving certificate reloaded", "file", c.certFile,
		"subject", cert.Leaf.Subject.CommonName, "notAfter", cert.Leaf.NotAfter.UTC().Format(time.RFC3339),
		"serial", cert.Leaf.SerialNumber.Text(16))
}

// valid reports whether the certificate in service is valid at now.
func (c *certSource) valid(now time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	leaf := c.cert.Leaf
	if now.After(leaf.NotAfter) {
		return fmt.Errorf("serving certificate expired at %s", leaf.NotAfter.UTC().Format(time.RFC3339))
	}
	return nil
}

// sameStamp: same file (device and inode: a Secret volume swaps a symlink
// to a new file), same size and same modification time.
func sameStamp(a, b os.FileInfo) bool {
	if a == nil || b == nil {
		return false
	}
	return os.SameFile(a, b) && a.Size() == b.Size() && a.ModTime().Equal(b.ModTime())
}

// ComponentCRD is the CRD whose conversion the server answers at PathConvert.
const ComponentCRD = "components.oda.tmforum.org"

// ConversionURLPatch is a JSON merge patch for ComponentCRD that sends its
// conversions to the webhook at url (https://host:port/convert), verified
// with the CA bundle caPEM: what `make dev` and the tests apply to a local
// API server, which reaches the webhook by address rather than through a
// Service.
func ConversionURLPatch(url string, caPEM []byte) []byte {
	patch := map[string]any{"spec": map[string]any{"conversion": map[string]any{
		"strategy": "Webhook",
		"webhook": map[string]any{
			"conversionReviewVersions": []string{"v1"},
			"clientConfig":             map[string]any{"url": url, "caBundle": caPEM}, // []byte marshals as base64
		},
	}}}
	data, _ := json.Marshal(patch) // cannot fail: strings and bytes only
	return data
}

// ConversionNonePatch is the JSON merge patch that turns ComponentCRD's
// conversion back to strategy None (as the chart installs it).
func ConversionNonePatch() []byte {
	return []byte(`{"spec":{"conversion":{"strategy":"None","webhook":null}}}`)
}

// CertFiles is a certificate and key read from PEM files and read again
// whenever either file changes (a Secret volume updated by cert-manager or
// by hand): for a TLS server (GetCertificate) or a TLS client
// (GetClientCertificate, the mTLS client certificate to Temporal).
type CertFiles struct{ src *certSource }

// NewCertFiles loads the pair now (a missing or invalid pair fails here).
func NewCertFiles(certFile, keyFile string, log *slog.Logger) (*CertFiles, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	src, err := newCertSource(Config{CertFile: certFile, KeyFile: keyFile}, log)
	if err != nil {
		return nil, err
	}
	return &CertFiles{src: src}, nil
}

// GetCertificate is the tls.Config hook of a server.
func (c *CertFiles) GetCertificate(h *tls.ClientHelloInfo) (*tls.Certificate, error) {
	return c.src.GetCertificate(h)
}

// GetClientCertificate is the tls.Config hook of a client: each handshake
// presents the files' current certificate.
func (c *CertFiles) GetClientCertificate(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
	return c.src.GetCertificate(nil)
}
