package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/client-go/dynamic"

	"github.com/odaflow/odaflow/internal/config"
	odaruntime "github.com/odaflow/odaflow/internal/runtime"
	"github.com/odaflow/odaflow/secrets"
	"github.com/odaflow/odaflow/webhook"
	"github.com/odaflow/odaflow/webhook/sidecar"
)

// webhookConfig configures `odaflow webhook`.
type webhookConfig struct {
	CertFile        string
	KeyFile         string
	ListenAddress   string
	SelfSigned      bool
	SelfSignedHosts []string
	SelfSignedCA    string
	ShutdownDelay   time.Duration
	LogLevel        string
	MetricsAddress  string

	// The secrets-sidecar injection (webhook/sidecar), off by default: it
	// needs a kubeconfig (or the in-cluster account) to watch
	// SecretsManagements.
	SidecarInjection bool
	Kubeconfig       string
	SidecarNamespace string
	Sidecar          secrets.SidecarConfig

	envErrs []error // unparsable environment values, reported by validate
}

func (c *webhookConfig) bind(fs *flag.FlagSet) {
	f := config.Flags{FS: fs, Errs: &c.envErrs}
	f.String(&c.CertFile, "tls-cert-file", "", "PEM serving certificate (e.g. tls.crt of cert-manager's Secret); re-read when it changes")
	f.String(&c.KeyFile, "tls-key-file", "", "PEM key of the serving certificate")
	f.String(&c.ListenAddress, "listen-address", webhook.DefaultAddress, "HTTPS address of the webhooks, /healthz and /readyz")
	f.Bool(&c.SelfSigned, "self-signed", false, "serve a self-signed certificate made in memory (development and tests), and write its CA bundle to a file")
	f.List(&c.SelfSignedHosts, "self-signed-hosts", []string{"localhost", "127.0.0.1", "::1"}, "DNS names and IP addresses of the self-signed certificate, comma-separated")
	f.String(&c.SelfSignedCA, "self-signed-ca-file", "", "where --self-signed writes the CA bundle (caBundle of the webhook configurations); empty: a new file in the temporary directory")
	f.Duration(&c.ShutdownDelay, "shutdown-delay", 0, "on SIGTERM, keep serving this long with /readyz failing before closing the listener")
	f.String(&c.LogLevel, "log-level", "info", "debug, info, warn or error")
	f.String(&c.MetricsAddress, "metrics-address", "", "plain-HTTP address of /metrics, [host]:port; empty serves none")
	f.Bool(&c.SidecarInjection, "sidecar-injection", false, "serve the secrets-sidecar mutating webhook at "+webhook.PathMutatePod)
	f.String(&c.Kubeconfig, "kubeconfig", "", "kubeconfig for the sidecar webhook's SecretsManagement cache; empty uses the in-cluster service account")
	f.String(&c.SidecarNamespace, "sidecar-namespace", "", "watch SecretsManagements in this namespace only; empty: all")
	f.String(&c.Sidecar.Image, "sidecar-image", secrets.DefaultSidecarImage, "image of the injected smansidecar container")
	f.String(&c.Sidecar.PullPolicy, "sidecar-image-pull-policy", "Always", "Always, IfNotPresent or Never")
	f.String(&c.Sidecar.VaultAddr, "vault-address", "", "Vault address the sidecars log in to")
	f.String(&c.Sidecar.AuthPath, "vault-auth-path", "kubernetes-sman", "Vault kubernetes auth mount of the sidecars")
	f.Bool(&c.Sidecar.VaultSkipVerify, "vault-skip-verify", false, "tell the sidecars not to verify Vault's certificate: development only")
}

// validate reports every problem at once.
func (c *webhookConfig) validate() error {
	errs := append([]error(nil), c.envErrs...)
	if _, port, err := net.SplitHostPort(c.ListenAddress); err != nil || port == "" {
		errs = append(errs, fmt.Errorf("--listen-address %q must be [host]:port", c.ListenAddress))
	} else if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		errs = append(errs, fmt.Errorf("--listen-address %q: port must be a number from 0 to 65535", c.ListenAddress))
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		errs = append(errs, fmt.Errorf("--log-level %q must be debug, info, warn or error", c.LogLevel))
	}
	if c.MetricsAddress != "" {
		if _, _, err := net.SplitHostPort(c.MetricsAddress); err != nil {
			errs = append(errs, fmt.Errorf("--metrics-address %q must be [host]:port", c.MetricsAddress))
		}
	}
	if c.SidecarInjection {
		if c.Sidecar.VaultAddr == "" {
			errs = append(errs, errors.New("--sidecar-injection needs --vault-address"))
		}
		switch c.Sidecar.PullPolicy {
		case "Always", "IfNotPresent", "Never":
		default:
			errs = append(errs, fmt.Errorf("--sidecar-image-pull-policy %q must be Always, IfNotPresent or Never", c.Sidecar.PullPolicy))
		}
		if c.Kubeconfig != "" {
			if _, err := os.Stat(c.Kubeconfig); err != nil {
				errs = append(errs, fmt.Errorf("--kubeconfig: %w", err))
			}
		}
	}
	if c.ShutdownDelay < 0 {
		errs = append(errs, fmt.Errorf("--shutdown-delay %s must not be negative", c.ShutdownDelay))
	}
	files := c.CertFile != "" || c.KeyFile != ""
	switch {
	case c.SelfSigned && files:
		errs = append(errs, errors.New("--self-signed and --tls-cert-file/--tls-key-file exclude each other"))
	case c.SelfSigned:
		if len(c.SelfSignedHosts) == 0 {
			errs = append(errs, errors.New("--self-signed needs at least one name in --self-signed-hosts"))
		}
		if c.SelfSignedCA != "" {
			if st, err := os.Stat(filepath.Dir(c.SelfSignedCA)); err != nil || !st.IsDir() {
				errs = append(errs, fmt.Errorf("--self-signed-ca-file %s: folder %s does not exist", c.SelfSignedCA, filepath.Dir(c.SelfSignedCA)))
			}
		}
	case !files:
		errs = append(errs, errors.New("no serving certificate: give --tls-cert-file and --tls-key-file, or --self-signed"))
	default:
		if c.CertFile == "" || c.KeyFile == "" {
			errs = append(errs, errors.New("--tls-cert-file and --tls-key-file go together"))
		}
		for _, f := range []struct{ flag, path string }{{"--tls-cert-file", c.CertFile}, {"--tls-key-file", c.KeyFile}} {
			if f.path == "" {
				continue
			}
			if _, err := os.Stat(f.path); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", f.flag, err))
			}
		}
	}
	return errors.Join(errs...)
}

// splitHosts separates DNS names from IP addresses.
func splitHosts(hosts []string) (names []string, ips []net.IP) {
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			ips = append(ips, ip)
		} else {
			names = append(names, h)
		}
	}
	return names, ips
}

func runWebhook(args []string) error {
	var cfg webhookConfig
	fs := flag.NewFlagSet("odaflow webhook", flag.ContinueOnError)
	cfg.bind(fs)
	if err := parse(fs, args, cfg.validate); err != nil {
		return err
	}
	log := odaruntime.NewLogger(config.Common{LogLevel: cfg.LogLevel})
	scfg := webhook.Config{
		Address:    cfg.ListenAddress,
		CertFile:   cfg.CertFile,
		KeyFile:    cfg.KeyFile,
		Logger:     log,
		DrainDelay: cfg.ShutdownDelay,
	}
	if cfg.SelfSigned {
		names, ips := splitHosts(cfg.SelfSignedHosts)
		certPEM, keyPEM, caPEM, err := webhook.SelfSigned(names, ips)
		if err != nil {
			return err
		}
		path, err := writeCABundle(cfg.SelfSignedCA, caPEM)
		if err != nil {
			return err
		}
		scfg.CertPEM, scfg.KeyPEM = certPEM, keyPEM
		fmt.Printf("odaflow webhook: self-signed certificate for %v; CA bundle written to %s\n", cfg.SelfSignedHosts, path)
		log.Info("self-signed serving certificate", "hosts", cfg.SelfSignedHosts, "caBundle", path)
	}
	ctx, stop := notifyContext()
	defer stop()
	if cfg.SidecarInjection {
		restCfg, err := odaruntime.RESTConfig(config.Common{Kubeconfig: cfg.Kubeconfig})
		if err != nil {
			return err
		}
		dyn, err := dynamic.NewForConfig(restCfg)
		if err != nil {
			return fmt.Errorf("kubernetes client: %w", err)
		}
		lister := sidecar.NewInformerLister(dyn, cfg.SidecarNamespace, 10*time.Minute)
		lister.Start(ctx)
		scfg.MutatePod = sidecar.NewHandler(lister, cfg.Sidecar, log.With("webhook", "sidecar"))
		scfg.ReadyChecks = append(scfg.ReadyChecks, func() error {
			if !lister.HasSynced() {
				return errors.New("SecretsManagement cache not synced")
			}
			return nil
		})
		log.Info("secrets-sidecar injection enabled", "path", webhook.PathMutatePod, "vault", cfg.Sidecar.VaultAddr, "authPath", cfg.Sidecar.AuthPath, "image", cfg.Sidecar.Image)
	}
	if cfg.MetricsAddress != "" {
		reg := odaruntime.NewRegistry()
		scfg.Registerer = reg
		stopMetrics, err := serveMetrics(cfg.MetricsAddress, reg, log)
		if err != nil {
			return err
		}
		defer stopMetrics()
	}
	srv, err := webhook.New(scfg)
	if err != nil {
		return err
	}
	return srv.Run(ctx)
}

// serveMetrics serves reg at /metrics over plain HTTP on address until the
// returned stop is called. The webhooks stay on their TLS listener: a
// scraper then needs no CA of the webhook's certificate.
func serveMetrics(address string, reg *prometheus.Registry, log *slog.Logger) (stop func(), err error) {
	ln, err := net.Listen("tcp", address)
	if err != nil {
		return nil, fmt.Errorf("metrics listener: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics server stopped", "error", err)
		}
	}()
	log.Info("serving metrics", "address", ln.Addr().String())
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}, nil
}

// writeCABundle writes the CA to path, or to a new file in the temporary
// directory when path is empty, and returns the path written.
func writeCABundle(path string, caPEM []byte) (string, error) {
	if path == "" {
		f, err := os.CreateTemp("", "odaflow-webhook-ca-*.crt")
		if err != nil {
			return "", fmt.Errorf("write the CA bundle: %w", err)
		}
		path = f.Name()
		if err := f.Close(); err != nil {
			return "", fmt.Errorf("write the CA bundle: %w", err)
		}
	}
	if err := os.WriteFile(path, caPEM, 0o644); err != nil {
		return "", fmt.Errorf("write the CA bundle: %w", err)
	}
	return path, nil
}
