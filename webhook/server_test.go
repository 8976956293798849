package webhook

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/odaflow/odaflow/webhook/conversion"
)

var localhost = []net.IP{net.ParseIP("127.0.0.1")}

// testLogger writes the server's log to the test log.
func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// selfSigned makes a serving certificate for 127.0.0.1 and localhost.
func selfSigned(t *testing.T) (certPEM, keyPEM, caPEM []byte) {
	t.Helper()
	certPEM, keyPEM, caPEM, err := SelfSigned([]string{"localhost"}, localhost)
	if err != nil {
		t.Fatal(err)
	}
	return certPEM, keyPEM, caPEM
}

// writePair writes the pair to dir/tls.crt and dir/tls.key with the given
// modification time, as cert-manager's Secret volume presents them.
func writePair(t *testing.T, dir string, certPEM, keyPEM []byte, mtime time.Time) (certFile, keyFile string) {
	t.Helper()
	certFile, keyFile = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	for _, f := range []struct {
		path string
		data []byte
	}{{certFile, certPEM}, {keyFile, keyPEM}} {
		if err := os.WriteFile(f.path, f.data, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(f.path, mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
	return certFile, keyFile
}

// startServer starts a server on a free loopback port and stops it at the
// end of the test.
func startServer(t *testing.T, cfg Config) *Server {
	t.Helper()
	cfg.Address = "127.0.0.1:0"
	if cfg.Logger == nil {
		cfg.Logger = testLogger(t)
	}
	srv, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	return srv
}

// client trusts only caPEM and opens a new connection (a new handshake) for
// every request.
func client(t *testing.T, caPEM []byte) *http.Client {
	t.Helper()
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		t.Fatal("no certificate in the CA bundle")
	}
	return &http.Client{
		Timeout: 10 * time.Second,
		Transport: &http.Transport{
			TLSClientConfig:   &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
			DisableKeepAlives: true,
		},
	}
}

func url(srv *Server, path string) string { return "https://" + srv.Addr().String() + path }

// do sends a request and returns the status, the body and the serial
// number of the certificate the server presented.
func do(t *testing.T, c *http.Client, method, url string, body []byte) (int, []byte, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, data, resp.TLS.PeerCertificates[0].SerialNumber.String()
}

func serialOf(t *testing.T, certPEM []byte) string {
	t.Helper()
	block, _ := pem.Decode(certPEM)
	if block == nil {
		t.Fatal("no PEM block")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return cert.SerialNumber.String()
}

func TestSelfSignedVerifiesForItsNamesOnly(t *testing.T) {
	certPEM, keyPEM, caPEM, err := SelfSigned([]string{"odaflow-webhook.canvas.svc", "localhost"}, []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("::1")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tls.X509KeyPair(certPEM, keyPEM); err != nil {
		t.Fatalf("certificate and key do not match: %v", err)
	}
	leaf, err := parseKeyPair(certPEM, keyPEM, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		t.Fatal("no CA in caPEM")
	}
	for _, name := range []string{"odaflow-webhook.canvas.svc", "localhost", "127.0.0.1", "::1"} {
		_, err := leaf.Leaf.Verify(x509.VerifyOptions{DNSName: name, Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
		if err != nil {
			t.Errorf("verify for %s: %v", name, err)
		}
	}
	if _, err := leaf.Leaf.Verify(x509.VerifyOptions{DNSName: "other.example", Roots: pool}); err == nil {
		t.Error("the certificate verifies for a name it does not carry")
	}
	// The CA is a CA and the serving certificate is not.
	block, _ := pem.Decode(caPEM)
	ca, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if !ca.IsCA || leaf.Leaf.IsCA {
		t.Errorf("IsCA: CA %v, serving %v", ca.IsCA, leaf.Leaf.IsCA)
	}
	// Another call makes another CA.
	_, _, caPEM2, err := SelfSigned([]string{"localhost"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(caPEM, caPEM2) {
		t.Error("two calls returned the same CA")
	}
}

func TestSelfSignedRejectsNoNames(t *testing.T) {
	for _, tc := range []struct {
		names []string
		ips   []net.IP
	}{{nil, nil}, {[]string{""}, nil}, {nil, []net.IP{nil}}} {
		if _, _, _, err := SelfSigned(tc.names, tc.ips); err == nil {
			t.Errorf("SelfSigned(%q, %v): no error", tc.names, tc.ips)
		}
	}
}

func TestParseKeyPairRejectsOutsideValidity(t *testing.T) {
	certPEM, keyPEM, _ := selfSigned(t)
	if _, err := parseKeyPair(certPEM, keyPEM, time.Now().Add(2*365*24*time.Hour)); err == nil || !strings.Contains(err.Error(), "expired") {
		t.Errorf("two years on: err = %v, want expired", err)
	}
	if _, err := parseKeyPair(certPEM, keyPEM, time.Now().Add(-48*time.Hour)); err == nil || !strings.Contains(err.Error(), "not valid before") {
		t.Errorf("two days before: err = %v, want not valid before", err)
	}
}

func TestNewRejectsBadCertificateConfig(t *testing.T) {
	dir := t.TempDir()
	certPEM, keyPEM, _ := selfSigned(t)
	_, otherKey, _ := selfSigned(t)
	certFile, keyFile := writePair(t, dir, certPEM, keyPEM, time.Now())
	otherKeyFile := filepath.Join(dir, "other.key")
	if err := os.WriteFile(otherKeyFile, otherKey, 0o600); err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		cfg  Config
		want string
	}{
		"nothing":          {Config{}, "no serving certificate"},
		"files and memory": {Config{CertFile: certFile, KeyFile: keyFile, CertPEM: certPEM, KeyPEM: keyPEM}, "not both"},
		"cert file only":   {Config{CertFile: certFile}, "go together"},
		"key in memory":    {Config{KeyPEM: keyPEM}, "go together"},
		"missing file":     {Config{CertFile: filepath.Join(dir, "missing.crt"), KeyFile: keyFile}, "missing.crt"},
		"wrong key":        {Config{CertFile: certFile, KeyFile: otherKeyFile}, "private key does not match"},
		"garbage":          {Config{CertPEM: []byte("not PEM"), KeyPEM: keyPEM}, "serving certificate"},
		"bad address":      {Config{Address: "9443", CertPEM: certPEM, KeyPEM: keyPEM}, "[host]:port"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := New(tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// The API server's view: a TLS handshake against the caBundle, then a
// ConversionReview POSTed to /convert.
func TestServerConvertsOverTLS(t *testing.T) {
	certPEM, keyPEM, caPEM := selfSigned(t)
	certFile, keyFile := writePair(t, t.TempDir(), certPEM, keyPEM, time.Now())
	srv := startServer(t, Config{CertFile: certFile, KeyFile: keyFile})
	c := client(t, caPEM)

	body, err := os.ReadFile(filepath.Join("testdata", "conversionreview-to-v1.json"))
	if err != nil {
		t.Fatal(err)
	}
	var sent conversion.ConversionReview
	if err := json.Unmarshal(body, &sent); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{PathConvert, "/"} {
		status, data, serial := do(t, c, http.MethodPost, url(srv, path), body)
		if status != http.StatusOK {
			t.Fatalf("POST %s: status %d: %s", path, status, data)
		}
		if serial != serialOf(t, certPEM) {
			t.Errorf("POST %s: served certificate serial %s, want %s", path, serial, serialOf(t, certPEM))
		}
		var got conversion.ConversionReview
		if err := json.Unmarshal(data, &got); err != nil {
			t.Fatalf("POST %s: not a ConversionReview: %v\n%s", path, err, data)
		}
		if got.Response == nil || got.Response.Result.Status != conversion.StatusSuccess {
			t.Fatalf("POST %s: not a success: %s", path, data)
		}
		if got.Response.UID != sent.Request.UID {
			t.Errorf("POST %s: uid %q, want %q", path, got.Response.UID, sent.Request.UID)
		}
		if len(got.Response.ConvertedObjects) != len(sent.Request.Objects) {
			t.Fatalf("POST %s: %d objects, want %d", path, len(got.Response.ConvertedObjects), len(sent.Request.Objects))
		}
		for i, raw := range got.Response.ConvertedObjects {
			var obj struct {
				APIVersion string `json:"apiVersion"`
				Metadata   struct {
					Annotations map[string]string `json:"annotations"`
				} `json:"metadata"`
				Spec struct {
					ComponentMetadata map[string]any `json:"componentMetadata"`
				} `json:"spec"`
			}
			if err := json.Unmarshal(raw, &obj); err != nil {
				t.Fatal(err)
			}
			if obj.APIVersion != conversion.V1 {
				t.Errorf("POST %s: object %d apiVersion %q", path, i, obj.APIVersion)
			}
			if a := obj.Metadata.Annotations[conversion.AnnotationConverted]; !strings.HasSuffix(a, "to "+conversion.V1) {
				t.Errorf("POST %s: object %d annotation %q", path, i, a)
			}
			if obj.Spec.ComponentMetadata["id"] != "TMFC001" {
				t.Errorf("POST %s: object %d componentMetadata %v", path, i, obj.Spec.ComponentMetadata)
			}
		}
	}

	// A GET is the conversion handler's 405, not a 404: the route is mounted.
	if status, _, _ := do(t, c, http.MethodGet, url(srv, PathConvert), nil); status != http.StatusMethodNotAllowed {
		t.Errorf("GET /convert: status %d, want 405", status)
	}
	for _, path := range []string{PathHealthz, PathReadyz} {
		if status, data, _ := do(t, c, http.MethodGet, url(srv, path), nil); status != http.StatusOK {
			t.Errorf("GET %s: status %d: %s", path, status, data)
		}
	}
	if status, _, _ := do(t, c, http.MethodGet, url(srv, "/mutate-pod"), nil); status != http.StatusNotFound {
		t.Errorf("GET /mutate-pod: status %d, want 404 (nothing mounted)", status)
	}
}

func TestServerRejectsClientsWithAnotherCA(t *testing.T) {
	certPEM, keyPEM, _ := selfSigned(t)
	_, _, otherCA := selfSigned(t)
	srv := startServer(t, Config{CertPEM: certPEM, KeyPEM: keyPEM})
	_, err := client(t, otherCA).Get(url(srv, PathHealthz))
	var unknown x509.UnknownAuthorityError
	if !errors.As(err, &unknown) {
		t.Errorf("handshake with another CA: err = %v, want x509.UnknownAuthorityError", err)
	}
	// Plain HTTP is not served.
	resp, err := http.Get("http://" + srv.Addr().String() + PathHealthz)
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("plain HTTP: status %d, want 400", resp.StatusCode)
		}
	}
}

// cert-manager renews the certificate into the Secret; the kubelet updates
// the mounted files. The next handshake serves the new certificate.
func TestServerReloadsCertificateWhenFilesChange(t *testing.T) {
	dir := t.TempDir()
	cert1, key1, ca1 := selfSigned(t)
	t0 := time.Now().Add(-time.Minute)
	certFile, keyFile := writePair(t, dir, cert1, key1, t0)
	srv := startServer(t, Config{CertFile: certFile, KeyFile: keyFile})
	c1 := client(t, ca1)
	if _, _, serial := do(t, c1, http.MethodGet, url(srv, PathHealthz), nil); serial != serialOf(t, cert1) {
		t.Fatalf("first certificate: serial %s, want %s", serial, serialOf(t, cert1))
	}

	// A renewal with a new CA (the worst case: the old caBundle no longer
	// verifies the new certificate).
	cert2, key2, ca2 := selfSigned(t)
	writePair(t, dir, cert2, key2, t0.Add(10*time.Second))
	c2 := client(t, ca2)
	if status, data, serial := do(t, c2, http.MethodGet, url(srv, PathReadyz), nil); status != http.StatusOK || serial != serialOf(t, cert2) {
		t.Fatalf("after renewal: status %d (%s), serial %s, want %s", status, data, serial, serialOf(t, cert2))
	}
	if _, err := c1.Get(url(srv, PathHealthz)); err == nil {
		t.Error("after renewal the old CA still verifies the served certificate")
	}

	// A half-written renewal (new certificate, key not yet updated) keeps
	// the current certificate in service...
	cert3, key3, ca3 := selfSigned(t)
	if err := os.WriteFile(certFile, cert3, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(certFile, t0.Add(20*time.Second), t0.Add(20*time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, _, serial := do(t, c2, http.MethodGet, url(srv, PathHealthz), nil); serial != serialOf(t, cert2) {
		t.Fatalf("during a half-written renewal: serial %s, want the previous %s", serial, serialOf(t, cert2))
	}
	// ...until the key arrives.
	writePair(t, dir, cert3, key3, t0.Add(30*time.Second))
	if _, _, serial := do(t, client(t, ca3), http.MethodGet, url(srv, PathHealthz), nil); serial != serialOf(t, cert3) {
		t.Fatalf("after the key arrived: serial %s, want %s", serial, serialOf(t, cert3))
	}

	// Files that disappear (a Secret being replaced) keep the certificate
	// in service too.
	if err := os.Remove(keyFile); err != nil {
		t.Fatal(err)
	}
	if _, _, serial := do(t, client(t, ca3), http.MethodGet, url(srv, PathHealthz), nil); serial != serialOf(t, cert3) {
		t.Fatalf("with the key file gone: serial %s, want %s", serial, serialOf(t, cert3))
	}
}

// Kubernetes mounts a Secret as symlinks into a timestamped folder and
// renews it by swapping the ..data symlink.
func TestServerReloadsCertificateFromSwappedSecretVolume(t *testing.T) {
	dir := t.TempDir()
	mount := func(name string, certPEM, keyPEM []byte) {
		t.Helper()
		data := filepath.Join(dir, name)
		if err := os.Mkdir(data, 0o755); err != nil {
			t.Fatal(err)
		}
		writePair(t, data, certPEM, keyPEM, time.Unix(1_700_000_000, 0)) // same mtime every time
		tmp := filepath.Join(dir, "..data_tmp")
		if err := os.Symlink(name, tmp); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(dir, "..data")); err != nil {
			t.Fatal(err)
		}
	}
	cert1, key1, ca1 := selfSigned(t)
	mount("..2026_01_01", cert1, key1)
	for _, f := range []string{"tls.crt", "tls.key"} {
		if err := os.Symlink(filepath.Join("..data", f), filepath.Join(dir, f)); err != nil {
			t.Fatal(err)
		}
	}
	srv := startServer(t, Config{CertFile: filepath.Join(dir, "tls.crt"), KeyFile: filepath.Join(dir, "tls.key")})
	if _, _, serial := do(t, client(t, ca1), http.MethodGet, url(srv, PathHealthz), nil); serial != serialOf(t, cert1) {
		t.Fatalf("first certificate: serial %s", serial)
	}
	cert2, key2, ca2 := selfSigned(t)
	mount("..2026_02_01", cert2, key2)
	if _, _, serial := do(t, client(t, ca2), http.MethodGet, url(srv, PathHealthz), nil); serial != serialOf(t, cert2) {
		t.Fatalf("after the symlink swap: serial %s, want %s", serial, serialOf(t, cert2))
	}
}

// On SIGTERM Run fails /readyz, keeps serving for the drain delay, lets the
// requests in flight finish and returns nil. Other webhooks mount with
// Handle.
func TestServerRunDrainsAndShutsDownGracefully(t *testing.T) {
	certPEM, keyPEM, caPEM := selfSigned(t)
	srv, err := New(Config{Address: "127.0.0.1:0", CertPEM: certPEM, KeyPEM: keyPEM, Logger: testLogger(t), DrainDelay: 300 * time.Millisecond, ShutdownTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	entered, release := make(chan struct{}), make(chan struct{})
	srv.Handle("/mutate-pod", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		close(entered)
		<-release
		_, _ = w.Write([]byte("mutated"))
	}))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	runErr := make(chan error, 1)
	go func() { runErr <- srv.Run(ctx) }()
	var addr net.Addr
	for deadline := time.Now().Add(5 * time.Second); addr == nil; time.Sleep(10 * time.Millisecond) {
		if addr = srv.Addr(); addr == nil && time.Now().After(deadline) {
			t.Fatal("the server did not start")
		}
	}
	c := client(t, caPEM)
	base := "https://" + addr.String()

	var wg sync.WaitGroup
	wg.Add(1)
	var slowStatus int
	var slowBody []byte
	go func() {
		defer wg.Done()
		resp, err := c.Get(base + "/mutate-pod")
		if err != nil {
			t.Errorf("request in flight: %v", err)
			return
		}
		defer resp.Body.Close()
		slowStatus = resp.StatusCode
		slowBody, _ = io.ReadAll(resp.Body)
	}()
	<-entered
	cancel() // SIGTERM

	// During the drain delay: alive, not ready. Ready turns false as soon as
	// Run sees the SIGTERM; the listener stays open for the delay.
	for deadline := time.Now().Add(5 * time.Second); ; {
		resp, err := c.Get(base + PathReadyz)
		if err != nil {
			t.Fatalf("readyz while draining: %v", err)
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusServiceUnavailable {
			break
		}
		if resp.StatusCode != http.StatusOK || time.Now().After(deadline) {
			t.Fatalf("readyz after SIGTERM: status %d, want 503", resp.StatusCode)
		}
	}
	if resp, err := c.Get(base + PathHealthz); err != nil {
		t.Errorf("healthz while draining: %v", err)
	} else {
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("healthz while draining: status %d, want 200", resp.StatusCode)
		}
	}

	// Run waits for the request in flight.
	select {
	case err := <-runErr:
		t.Fatalf("Run returned (%v) with a request in flight", err)
	case <-time.After(500 * time.Millisecond):
	}
	close(release)
	wg.Wait()
	if slowStatus != http.StatusOK || string(slowBody) != "mutated" {
		t.Errorf("request in flight: status %d, body %q", slowStatus, slowBody)
	}
	select {
	case err := <-runErr:
		if err != nil {
			t.Errorf("Run: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after the last request")
	}
	if _, err := c.Get(base + PathHealthz); err == nil {
		t.Error("the server still answers after Run returned")
	}
}

func TestRunFailsWhenTheAddressIsTaken(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	certPEM, keyPEM, _ := selfSigned(t)
	srv, err := New(Config{Address: ln.Addr().String(), CertPEM: certPEM, KeyPEM: keyPEM})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "listen on") {
		t.Errorf("Run on a taken address: err = %v", err)
	}
}

func TestConversionPatches(t *testing.T) {
	_, _, caPEM := selfSigned(t)
	var got struct {
		Spec struct {
			Conversion struct {
				Strategy string `json:"strategy"`
				Webhook  struct {
					ConversionReviewVersions []string `json:"conversionReviewVersions"`
					ClientConfig             struct {
						URL      string `json:"url"`
						CABundle []byte `json:"caBundle"`
					} `json:"clientConfig"`
				} `json:"webhook"`
			} `json:"conversion"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(ConversionURLPatch("https://127.0.0.1:9443/convert", caPEM), &got); err != nil {
		t.Fatal(err)
	}
	c := got.Spec.Conversion
	if c.Strategy != "Webhook" || c.Webhook.ClientConfig.URL != "https://127.0.0.1:9443/convert" ||
		!bytes.Equal(c.Webhook.ClientConfig.CABundle, caPEM) || strings.Join(c.Webhook.ConversionReviewVersions, ",") != "v1" {
		t.Errorf("ConversionURLPatch = %+v", c)
	}
	var none map[string]any
	if err := json.Unmarshal(ConversionNonePatch(), &none); err != nil {
		t.Fatal(err)
	}
	conv := none["spec"].(map[string]any)["conversion"].(map[string]any)
	if conv["strategy"] != "None" || conv["webhook"] != nil {
		t.Errorf("ConversionNonePatch = %v", conv)
	}
	if _, ok := conv["webhook"]; !ok {
		t.Error("ConversionNonePatch does not remove the webhook (merge patch null)")
	}
}

// Handle mounts another webhook, e.g. Handle("/mutate-pod", h). Call it
// before Start; the patterns are those of http.ServeMux.
func (s *Server) Handle(pattern string, h http.Handler) {
	s.mux.Handle(pattern, h)
}
