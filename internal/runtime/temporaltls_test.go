package runtime

import (
	"context"
	"crypto/tls"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/odaflow/odaflow/internal/config"
	"github.com/odaflow/odaflow/webhook"
)

// writePair writes a fresh certificate for name into certFile and keyFile.
func writePair(t *testing.T, certFile, keyFile, name string) {
	t.Helper()
	certPEM, keyPEM, _, err := webhook.SelfSigned([]string{name}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Through a rename, as the kubelet swaps a Secret volume's files.
	for path, data := range map[string][]byte{certFile: certPEM, keyFile: keyPEM} {
		tmp := path + ".new"
		if err := os.WriteFile(tmp, data, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, path); err != nil {
			t.Fatal(err)
		}
	}
}

// TestTemporalClientCertificateRotates: the client certificate of the
// Temporal connection is read when a handshake asks for it, so a rotated
// certificate is presented at the next connection; no server CA file means
// the system roots (RootCAs nil).
func TestTemporalClientCertificateRotates(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	writePair(t, certFile, keyFile, "client-one")
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	opts, err := TemporalOptions(config.Common{TemporalAddress: "127.0.0.1:7233", TemporalNamespace: "default", TLSCert: certFile, TLSKey: keyFile}, log, nil)
	if err != nil {
		t.Fatal(err)
	}
	tc := opts.ConnectionOptions.TLS
	if tc == nil || tc.RootCAs != nil {
		t.Fatalf("TLS config %+v: want TLS with the system roots (no --temporal-tls-ca)", tc)
	}

	// A server that records the client certificate of each handshake.
	serverCert, serverKey, _, err := webhook.SelfSigned([]string{"temporal.test"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(serverCert, serverKey)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{pair}, ClientAuth: tls.RequireAnyClientCert})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	seen := make(chan string, 4)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			tlsConn := c.(*tls.Conn)
			if err := tlsConn.Handshake(); err == nil {
				seen <- tlsConn.ConnectionState().PeerCertificates[0].DNSNames[0]
			}
			c.Close()
		}
	}()
	handshake := func() string {
		cfg := tc.Clone()
		cfg.InsecureSkipVerify = true // the test server's own certificate; the client side is under test
		conn, err := tls.Dial("tcp", ln.Addr().String(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		_ = conn.Handshake()
		select {
		case name := <-seen:
			return name
		case <-time.After(10 * time.Second):
			t.Fatal("the server saw no client certificate")
			return ""
		}
	}
	if got := handshake(); got != "client-one" {
		t.Fatalf("first handshake presented %q, want client-one", got)
	}
	writePair(t, certFile, keyFile, "client-two")
	if got := handshake(); got != "client-two" {
		t.Errorf("after rotation the handshake presented %q, want client-two", got)
	}
}

// TestTemporalAPIKeyRotates: the API key is read again when its file
// changes, and the loaded key is kept while the file is missing.
func TestTemporalAPIKeyRotates(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "api-key")
	write := func(key string) {
		tmp := path + ".new"
		if err := os.WriteFile(tmp, []byte(key+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, path); err != nil {
			t.Fatal(err)
		}
	}
	write("key-one")
	a := newAPIKeyFile(path)
	ctx := context.Background()
	for _, step := range []struct {
		do   func()
		want string
	}{
		{func() {}, "key-one"},
		{func() { write("key-two") }, "key-two"},
		{func() { os.Remove(path) }, "key-two"},
		{func() { write("key-three") }, "key-three"},
	} {
		step.do()
		got, err := a.get(ctx)
		if err != nil || got != step.want {
			t.Fatalf("key %q, %v; want %q", got, err, step.want)
		}
	}
	if _, err := newAPIKeyFile(filepath.Join(dir, "missing")).get(ctx); err == nil {
		t.Error("a missing key file at start is not an error")
	}
}

// The settings config.ApplyTemporalEnv takes from Temporal's variables and
// profiles reach the client: TEMPORAL_API_KEY as static credentials over
// TLS, TEMPORAL_TLS=true as TLS with the system roots, false as plaintext
// even with a key.
func TestTemporalOptionsFromTemporalEnv(t *testing.T) {
	on, off := true, false
	log := slog.New(slog.DiscardHandler)
	base := config.Common{TemporalAddress: "127.0.0.1:7233", TemporalNamespace: "default"}
	for _, tc := range []struct {
		name         string
		apiKey       string
		tls          *bool
		wantTLS      bool
		wantDisabled bool
		wantCreds    bool
	}{
		{name: "nothing", wantTLS: false},
		{name: "API key", apiKey: "k", wantTLS: true, wantCreds: true},
		{name: "TEMPORAL_TLS=true", tls: &on, wantTLS: true},
		{name: "API key with TEMPORAL_TLS=false", apiKey: "k", tls: &off, wantDisabled: true, wantCreds: true},
	} {
		c := base
		c.APIKey, c.TemporalTLS = tc.apiKey, tc.tls
		opts, err := TemporalOptions(c, log, nil)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		gotTLS := opts.ConnectionOptions.TLS != nil
		if gotTLS != tc.wantTLS || opts.ConnectionOptions.TLSDisabled != tc.wantDisabled || (opts.Credentials != nil) != tc.wantCreds {
			t.Errorf("%s: TLS %t disabled %t credentials %t, want %t %t %t", tc.name, gotTLS, opts.ConnectionOptions.TLSDisabled,
				opts.Credentials != nil, tc.wantTLS, tc.wantDisabled, tc.wantCreds)
		}
		if gotTLS && opts.ConnectionOptions.TLS.RootCAs != nil {
			t.Errorf("%s: RootCAs set without a CA file", tc.name)
		}
	}
}
