package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/odaflow/odaflow/internal/config"
	"github.com/odaflow/odaflow/internal/payloadcodec"
	odaruntime "github.com/odaflow/odaflow/internal/runtime"
	"github.com/odaflow/odaflow/webhook"
)

// codecServerConfig configures `odaflow codec-server`: the endpoint the
// Temporal Web UI (and `temporal --codec-endpoint`) decodes odaflow's
// encrypted payloads through.
type codecServerConfig struct {
	Keys            config.Common // PayloadKeysDir and PayloadKeyID only
	ListenAddress   string
	CertFile        string
	KeyFile         string
	Origins         []string
	TokenFile       string
	Unauthenticated bool
	Namespaces      []string
	LogLevel        string

	envErrs []error
}

func (c *codecServerConfig) bind(fs *flag.FlagSet) {
	f := config.Flags{FS: fs, Errs: &c.envErrs}
	c.Keys.BindPayloadKeys(f)
	f.String(&c.ListenAddress, "codec-listen-address", ":8088", "address of the codec server (POST /decode, POST /encode, GET /healthz)")
	f.String(&c.CertFile, "codec-tls-cert-file", "", "PEM serving certificate of the codec server (a browser on an https Web UI needs https); re-read when it changes; empty serves plain HTTP (behind a TLS ingress)")
	f.String(&c.KeyFile, "codec-tls-key-file", "", "PEM key of --codec-tls-cert-file")
	f.List(&c.Origins, "codec-cors-origins", nil, "Web UI origins allowed to call the codec server from the browser, comma-separated (https://temporal.example.com)")
	f.String(&c.TokenFile, "codec-token-file", "", "file of accepted bearer tokens, one per line (a mounted Secret, re-read when it changes)")
	f.Bool(&c.Unauthenticated, "codec-allow-unauthenticated", false, "serve without a bearer token: only where the network lets nobody but authorised users reach the server")
	f.List(&c.Namespaces, "codec-namespaces", nil, "Temporal namespaces (the X-Namespace header) whose payloads may be decoded, comma-separated; empty: any")
	f.String(&c.LogLevel, "log-level", "info", "debug, info, warn or error")
}

func (c *codecServerConfig) validate() error {
	errs := append([]error(nil), c.envErrs...)
	errs = append(errs, c.Keys.ValidatePayloadKeys()...)
	if c.Keys.PayloadKeysDir == "" {
		errs = append(errs, errors.New("--payload-keys-dir is required: the codec server decodes with those keys"))
	}
	if _, port, err := net.SplitHostPort(c.ListenAddress); err != nil || port == "" {
		errs = append(errs, fmt.Errorf("--codec-listen-address %q must be [host]:port", c.ListenAddress))
	}
	if (c.CertFile == "") != (c.KeyFile == "") {
		errs = append(errs, errors.New("--codec-tls-cert-file and --codec-tls-key-file go together"))
	}
	switch {
	case c.TokenFile == "" && !c.Unauthenticated:
		errs = append(errs, errors.New("give --codec-token-file, or --codec-allow-unauthenticated for a server only authorised users can reach"))
	case c.TokenFile != "" && c.Unauthenticated:
		errs = append(errs, errors.New("--codec-token-file and --codec-allow-unauthenticated exclude each other"))
	}
	for _, o := range c.Origins {
		if u, err := url.Parse(o); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") {
			errs = append(errs, fmt.Errorf("--codec-cors-origins: %q must be an origin such as https://temporal.example.com", o))
		}
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		errs = append(errs, fmt.Errorf("--log-level %q must be debug, info, warn or error", c.LogLevel))
	}
	return errors.Join(errs...)
}

func runCodecServer(args []string) error {
	var cfg codecServerConfig
	fs := flag.NewFlagSet("odaflow codec-server", flag.ContinueOnError)
	cfg.bind(fs)
	if err := parse(fs, args, cfg.validate); err != nil {
		return err
	}
	log := odaruntime.NewLogger(config.Common{LogLevel: cfg.LogLevel})
	ctx, stop := notifyContext()
	defer stop()
	srv, err := newCodecServer(cfg, log)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", cfg.ListenAddress)
	if err != nil {
		return fmt.Errorf("codec server listener: %w", err)
	}
	return serveCodec(ctx, srv, ln, log)
}

// newCodecServer builds the server: the codec handler, /healthz, timeouts
// that bound a slow or idle client, and TLS when a certificate is given.
func newCodecServer(cfg codecServerConfig, log *slog.Logger) (*http.Server, error) {
	keys, err := payloadcodec.NewKeyring(cfg.Keys.PayloadKeysDir, cfg.Keys.PayloadKeyID, log.With("component", "payload-codec"))
	if err != nil {
		return nil, err
	}
	h, err := payloadcodec.NewHandler(payloadcodec.Codec{Keys: keys}, payloadcodec.ServerOptions{
		Origins: cfg.Origins, TokenFile: cfg.TokenFile, Namespaces: cfg.Namespaces, Log: log,
	})
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	mux.Handle("/", h)
	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
	}
	if cfg.CertFile != "" {
		cert, err := webhook.NewCertFiles(cfg.CertFile, cfg.KeyFile, log.With("component", "codec-tls"))
		if err != nil {
			return nil, fmt.Errorf("codec server certificate: %w", err)
		}
		srv.TLSConfig = &tls.Config{GetCertificate: cert.GetCertificate, MinVersion: tls.VersionTLS12}
	}
	log.Info("codec server", "keys", keys.IDs(), "current", keys.CurrentID(), "origins", cfg.Origins,
		"namespaces", cfg.Namespaces, "token", cfg.TokenFile != "", "tls", cfg.CertFile != "")
	return srv, nil
}

// serveCodec serves until ctx ends, then drains for up to 5 seconds.
func serveCodec(ctx context.Context, srv *http.Server, ln net.Listener, log *slog.Logger) error {
	errc := make(chan error, 1)
	go func() {
		var err error
		if srv.TLSConfig != nil {
			err = srv.ServeTLS(ln, "", "")
		} else {
			err = srv.Serve(ln)
		}
		errc <- err
	}()
	log.Info("serving the codec endpoint", "address", ln.Addr().String())
	select {
	case err := <-errc:
		return fmt.Errorf("codec server: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("codec server shutdown: %w", err)
	}
	return nil
}
