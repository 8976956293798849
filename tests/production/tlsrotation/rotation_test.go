// Package tlsrotation runs odaflow's Temporal client against the Temporal
// server binary serving mTLS, and rotates the client certificate under it.
// It is a package of its own: it needs PostgreSQL and the Temporal server,
// not the kube-apiserver and odaflow processes of tests/production.
package tlsrotation

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"log/slog"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/odaflow/odaflow/internal/config"
	"github.com/odaflow/odaflow/internal/localstack"
	"github.com/odaflow/odaflow/internal/runtime"
)

// authority is a test CA that signs server and client certificates.
type authority struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newAuthority(t *testing.T) *authority {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "odaflow test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &authority{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

var serial int64 = 1

// issue signs a certificate for name, valid until notAfter, and returns
// its PEM and its key's PEM.
func (a *authority) issue(t *testing.T, name string, usage x509.ExtKeyUsage, notAfter time.Time) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial++
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Minute), NotAfter: notAfter,
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
	}
	if usage == x509.ExtKeyUsageServerAuth {
		tmpl.DNSNames = []string{name}
		tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.cert, &key.PublicKey, a.key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
}

// writeFiles writes each file through a rename, as the kubelet swaps a
// Secret volume's files.
func writeFiles(t *testing.T, files map[string][]byte) {
	t.Helper()
	for path, data := range files {
		if err := os.WriteFile(path+".new", data, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(path+".new", path); err != nil {
			t.Fatal(err)
		}
	}
}

// describe connects anew with opts and describes the namespace: a new
// connection, so a new TLS handshake and a client certificate asked for.
func describe(ctx context.Context, opts client.Options) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	nc, err := client.NewNamespaceClient(opts)
	if err != nil {
		return err
	}
	defer nc.Close()
	_, err = nc.Describe(ctx, opts.Namespace)
	return err
}

// TestTemporalClientCertificateRotation: the Temporal server requires a
// client certificate signed by the test CA. odaflow's Temporal client
// (runtime.TemporalOptions with certificate and key files) connects with
// certificate A, which expires a few seconds later. Once A has expired, a
// new connection with the same options fails while the files still hold A
// (the server refuses it, so the check below can fail); after the files
// are rotated to B, signed by the same CA, a new connection with the very
// same options, in the same process, succeeds.
func TestTemporalClientCertificateRotation(t *testing.T) {
	serverDir, err := localstack.FindTemporalServer()
	var pgBin string
	if err == nil {
		pgBin, err = localstack.FindPostgres()
	}
	if err != nil {
		if os.Getenv("ODAFLOW_SKIP_INTEGRATION") != "" && os.Getenv("CI") == "" {
			t.Skipf("SKIPPED on request (ODAFLOW_SKIP_INTEGRATION): %v", err)
		}
		t.Fatalf("the real servers are missing (run make tools): %v", err)
	}
	dir := t.TempDir()
	ca := newAuthority(t)
	path := func(name string) string { return filepath.Join(dir, name) }
	serverCert, serverKey := ca.issue(t, "localhost", x509.ExtKeyUsageServerAuth, time.Now().Add(24*time.Hour))
	harnessCert, harnessKey := ca.issue(t, "harness", x509.ExtKeyUsageClientAuth, time.Now().Add(24*time.Hour))
	writeFiles(t, map[string][]byte{
		path("ca.crt"): ca.pem, path("server.crt"): serverCert, path("server.key"): serverKey,
		path("harness.crt"): harnessCert, path("harness.key"): harnessKey,
	})

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	logs, err := os.Create(path("servers.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logs.Close()
	pg, err := localstack.StartPostgres(ctx, localstack.PostgresOptions{BinDir: pgBin, Logs: logs})
	if err != nil {
		t.Fatalf("start postgres: %v", err)
	}
	defer func() { _ = pg.Stop() }()
	server, err := localstack.StartTemporalServer(ctx, localstack.TemporalServerOptions{Dir: serverDir, Postgres: pg, Logs: logs,
		TLS: &localstack.TemporalServerTLS{
			CertFile: path("server.crt"), KeyFile: path("server.key"), ServerName: "localhost", CAFile: path("ca.crt"),
			ClientCAFile: path("ca.crt"), ClientCertFile: path("harness.crt"), ClientKeyFile: path("harness.key"),
		}})
	if err != nil {
		out, _ := os.ReadFile(path("servers.log"))
		t.Fatalf("start temporal-server with mTLS: %v\n%s", err, tail(out, 40))
	}
	defer func() { _ = server.Stop() }()

	// Without a client certificate the server refuses the connection.
	plain := client.Options{HostPort: server.Address, Namespace: "default",
		ConnectionOptions: client.ConnectionOptions{TLS: &tls.Config{RootCAs: pool(t, ca.pem), ServerName: "localhost", MinVersion: tls.VersionTLS12}}}
	if err := describe(ctx, plain); err == nil {
		t.Fatal("a client without a certificate was served: the server does not require client certificates")
	}

	// Certificate A, valid for a few seconds more.
	lifetime := 8 * time.Second
	expiry := time.Now().Add(lifetime)
	certA, keyA := ca.issue(t, "odaflow-a", x509.ExtKeyUsageClientAuth, expiry)
	certFile, keyFile := path("tls.crt"), path("tls.key")
	writeFiles(t, map[string][]byte{certFile: certA, keyFile: keyA})
	opts, err := runtime.TemporalOptions(config.Common{
		TemporalAddress: server.Address, TemporalNamespace: "default", TemporalCompression: "none",
		TLSCert: certFile, TLSKey: keyFile, TLSCA: path("ca.crt"), TLSServerName: "localhost",
	}, slog.New(slog.DiscardHandler), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := describe(ctx, opts); err != nil {
		t.Fatalf("with certificate A: %v", err)
	}
	t.Logf("certificate A (until %s) accepted", expiry.Format(time.TimeOnly))

	// A expires; the files still hold it: a new connection fails.
	time.Sleep(time.Until(expiry.Add(time.Second)))
	if err := describe(ctx, opts); err == nil {
		t.Fatal("a new connection with expired certificate A was served: the check cannot tell a reload")
	} else {
		t.Logf("certificate A expired: a new connection fails: %v", err)
	}
	// The server is up meanwhile: the harness's own certificate connects.
	hc, err := server.Dial(ctx)
	if err != nil {
		t.Fatalf("harness dial: %v", err)
	}
	if _, err := hc.CheckHealth(ctx, &client.CheckHealthRequest{}); err != nil {
		t.Fatalf("the server is not serving the harness while A is refused: %v", err)
	}
	hc.Close()

	// Rotate the files to B; the same options, in the same process, now
	// connect.
	certB, keyB := ca.issue(t, "odaflow-b", x509.ExtKeyUsageClientAuth, time.Now().Add(time.Hour))
	writeFiles(t, map[string][]byte{certFile: certB, keyFile: keyB})
	if err := describe(ctx, opts); err != nil {
		t.Fatalf("after rotating to certificate B: %v", err)
	}
	// And a long-lived client made from the options keeps working too.
	cl, err := client.DialContext(ctx, opts)
	if err != nil {
		t.Fatalf("dial after rotation: %v", err)
	}
	defer cl.Close()
	if _, err := cl.CheckHealth(ctx, &client.CheckHealthRequest{}); err != nil {
		t.Fatalf("health after rotation: %v", err)
	}
	t.Log("certificate B presented after the rotation, without a restart")
}

func pool(t *testing.T, caPEM []byte) *x509.CertPool {
	t.Helper()
	p := x509.NewCertPool()
	if !p.AppendCertsFromPEM(caPEM) {
		t.Fatal("no CA certificate")
	}
	return p
}

func tail(b []byte, n int) string {
	lines := 0
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] == '\n' {
			lines++
			if lines > n {
				return string(b[i+1:])
			}
		}
	}
	return fmt.Sprint(string(b))
}
