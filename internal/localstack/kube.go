package localstack

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Kube is a running etcd + kube-apiserver + kube-controller-manager.
type Kube struct {
	// RESTConfig authenticates as cluster admin (group system:masters),
	// QPS 200 / Burst 400. Copy it (rest.CopyConfig) before changing it.
	RESTConfig *rest.Config
	// KubeconfigPath is DataDir/kubeconfig (same credentials).
	KubeconfigPath string
	// Host is the apiserver URL, https://127.0.0.1:<port>.
	Host string
	// EtcdURL is etcd's client URL.
	EtcdURL string
	// DataDir is where the state lives.
	DataDir string

	opts    Options
	temp    bool
	sink    *logSink
	apiBin  string
	apiArgs []string
	caData  []byte
	token   string

	mu      sync.Mutex
	etcd    *process
	api     *process
	kcm     *process
	stopped bool
}

// StartKube starts etcd, kube-apiserver and kube-controller-manager and
// returns once the apiserver's /readyz answers ok. Cancelling ctx after it
// returns does not stop anything: call Stop.
func StartKube(ctx context.Context, o Options) (k *Kube, err error) {
	etcdBin, err := o.tool("etcd")
	if err != nil {
		return nil, err
	}
	apiBin, err := o.tool("kube-apiserver")
	if err != nil {
		return nil, err
	}
	kcmBin, err := o.tool("kube-controller-manager")
	if err != nil {
		return nil, err
	}
	dir, temp, err := o.prepareDir("odaflow-kube-")
	if err != nil {
		return nil, err
	}
	k = &Kube{DataDir: dir, opts: o, temp: temp, apiBin: apiBin}
	k.sink = newLogSink(o.Logs, filepath.Join(dir, "logs"))
	defer func() {
		if err != nil {
			_ = k.Stop()
			k = nil
		}
	}()

	ctx, cancel := context.WithTimeout(ctx, o.startTimeout())
	defer cancel()

	// Ports.
	etcdPort, peerPort, kubePort := o.EtcdPort, 0, o.KubePort
	if etcdPort != 0 {
		peerPort = etcdPort + 1
	}
	var want []int
	for _, p := range []int{etcdPort, peerPort, kubePort} {
		if p == 0 {
			want = append(want, 0)
		}
	}
	free, err := freePorts(len(want))
	if err != nil {
		return k, fmt.Errorf("localstack: picking free ports: %w", err)
	}
	take := func(p *int) {
		if *p == 0 {
			*p, free = free[0], free[1:]
		} else if perr := portFree(*p); perr != nil && err == nil {
			err = fmt.Errorf("localstack: port %d is not free (is another odaflow dev running?): %w", *p, perr)
		}
	}
	take(&etcdPort)
	take(&peerPort)
	take(&kubePort)
	if err != nil {
		return k, err
	}

	// Credentials kept in DataDir so that a persisted cluster keeps a valid kubeconfig.
	pki := filepath.Join(dir, "pki")
	certDir := filepath.Join(pki, "serving")
	if err := os.MkdirAll(certDir, 0o700); err != nil {
		return k, err
	}
	saKey := filepath.Join(pki, "service-account.key")
	if err := ensureRSAKey(saKey); err != nil {
		return k, err
	}
	token, err := ensureToken(filepath.Join(pki, "admin-token"))
	if err != nil {
		return k, err
	}
	k.token = token
	tokenFile := filepath.Join(pki, "tokens.csv")
	if err := os.WriteFile(tokenFile, []byte(token+`,odaflow-admin,odaflow-admin,"system:masters"`+"\n"), 0o600); err != nil {
		return k, err
	}
	// A serving certificate that will not verify (expired, other address)
	// is removed so that the apiserver generates a new one.
	dropStaleServingCert(certDir)

	// etcd.
	etcdData := filepath.Join(dir, "etcd")
	if !o.Persist {
		if err := os.RemoveAll(etcdData); err != nil {
			return k, err
		}
	}
	k.EtcdURL = fmt.Sprintf("http://127.0.0.1:%d", etcdPort)
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", peerPort)
	etcdArgs := []string{
		"--name=odaflow",
		"--data-dir=" + etcdData,
		"--listen-client-urls=" + k.EtcdURL,
		"--advertise-client-urls=" + k.EtcdURL,
		"--listen-peer-urls=" + peerURL,
		"--initial-advertise-peer-urls=" + peerURL,
		"--initial-cluster=odaflow=" + peerURL,
		"--log-level=warn",
	}
	if !o.Persist {
		etcdArgs = append(etcdArgs, "--unsafe-no-fsync=true")
	}
	started := time.Now()
	k.etcd, err = startProcess("etcd", etcdBin, etcdArgs, k.sink)
	if err != nil {
		return k, err
	}
	if err := pollUntil(ctx, "etcd", 50*time.Millisecond, k.etcd, etcdHealthy(k.EtcdURL)); err != nil {
		return k, err
	}
	etcdReady := time.Since(started)

	// kube-apiserver.
	k.Host = fmt.Sprintf("https://127.0.0.1:%d", kubePort)
	k.apiArgs = []string{
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--endpoint-reconciler-type=none",
		fmt.Sprintf("--secure-port=%d", kubePort),
		"--cert-dir=" + certDir,
		"--etcd-servers=" + k.EtcdURL,
		fmt.Sprintf("--service-account-issuer=https://127.0.0.1:%d/", kubePort),
		"--service-account-key-file=" + saKey,
		"--service-account-signing-key-file=" + saKey,
		"--service-cluster-ip-range=10.0.0.0/24",
		"--allow-privileged=true",
		"--authorization-mode=RBAC",
		"--token-auth-file=" + tokenFile,
		"--disable-admission-plugins=ServiceAccount",
	}
	k.apiArgs = append(k.apiArgs, o.KubeAPIServerExtraArgs...)
	if err := k.startAPIServer(ctx); err != nil {
		return k, err
	}
	apiReady := time.Since(started)

	// kubeconfig + rest.Config.
	k.KubeconfigPath = filepath.Join(dir, "kubeconfig")
	if err := writeKubeconfig(k.KubeconfigPath, k.Host, k.caData, token); err != nil {
		return k, err
	}
	k.RESTConfig = &rest.Config{
		Host:            k.Host,
		BearerToken:     token,
		TLSClientConfig: rest.TLSClientConfig{CAData: k.caData, Insecure: k.caData == nil},
		QPS:             200,
		Burst:           400,
	}

	if o.CRDDir != "" {
		if err := InstallCRDs(ctx, k.RESTConfig, o.CRDDir); err != nil {
			return k, err
		}
	}

	// kube-controller-manager: garbage collector and namespace controller only.
	kcmArgs := []string{
		"--kubeconfig=" + k.KubeconfigPath,
		"--leader-elect=false",
		"--secure-port=0",
		"--controllers=namespace-controller,garbage-collector-controller",
	}
	k.kcm, err = startProcess("kube-controller-manager", kcmBin, kcmArgs, k.sink)
	if err != nil {
		return k, err
	}
	fmt.Fprintf(k.logOut(), "localstack: etcd ready in %s, kube-apiserver ready in %s (%s)\n",
		etcdReady.Round(time.Millisecond), apiReady.Round(time.Millisecond), k.Host)
	return k, nil
}

func (k *Kube) logOut() io.Writer {
	if k.sink.shared != nil {
		return k.sink.shared
	}
	return io.Discard
}

// startAPIServer launches kube-apiserver with k.apiArgs and waits for /readyz.
func (k *Kube) startAPIServer(ctx context.Context) error {
	p, err := startProcess("kube-apiserver", k.apiBin, k.apiArgs, k.sink)
	if err != nil {
		return err
	}
	k.mu.Lock()
	k.api = p
	k.mu.Unlock()
	certFile := filepath.Join(k.certDir(), "apiserver.crt")
	var client *http.Client
	return pollUntil(ctx, "kube-apiserver /readyz", 100*time.Millisecond, p, func(ctx context.Context) (bool, error) {
		if client == nil {
			ca, err := loadServingCA(certFile)
			if err != nil {
				return false, err
			}
			k.caData = ca // nil = cannot be trusted, fall back to no verification
			client = readyzClient(ca)
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, k.Host+"/readyz", nil)
		req.Header.Set("Authorization", "Bearer "+k.token)
		resp, err := client.Do(req)
		if err != nil {
			return false, err
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK && strings.TrimSpace(string(body)) == "ok" {
			return true, nil
		}
		return false, fmt.Errorf("/readyz: %s: %s", resp.Status, strings.TrimSpace(string(body)))
	})
}

func (k *Kube) certDir() string { return filepath.Join(k.DataDir, "pki", "serving") }

// StopAPIServer stops kube-apiserver alone (fault tests); etcd and the
// controller manager keep running.
func (k *Kube) StopAPIServer() error {
	k.mu.Lock()
	p := k.api
	k.api = nil
	k.mu.Unlock()
	return p.stop(stopGrace)
}

// StartAPIServer starts kube-apiserver again on the same port with the same
// flags and waits until it is ready (bounded by StartTimeout).
func (k *Kube) StartAPIServer(ctx context.Context) error {
	k.mu.Lock()
	if k.stopped {
		k.mu.Unlock()
		return errors.New("localstack: cluster is stopped")
	}
	running := k.api != nil && !k.api.exited()
	k.mu.Unlock()
	if running {
		return errors.New("localstack: kube-apiserver is already running")
	}
	ctx, cancel := context.WithTimeout(ctx, k.opts.startTimeout())
	defer cancel()
	return k.startAPIServer(ctx)
}

// Stop stops the controller manager, the apiserver and etcd (SIGTERM, SIGKILL
// after a bounded wait) and removes the state unless Persist. It does not use
// any caller context, so it works after the start context was cancelled.
func (k *Kube) Stop() error {
	k.mu.Lock()
	if k.stopped {
		k.mu.Unlock()
		return nil
	}
	k.stopped = true
	kcm, api, etcd := k.kcm, k.api, k.etcd
	k.mu.Unlock()
	err := stopAll(kcm, api, etcd)
	switch {
	case k.temp:
		err = errors.Join(err, os.RemoveAll(k.DataDir))
	case !k.opts.Persist:
		err = errors.Join(err, os.RemoveAll(filepath.Join(k.DataDir, "etcd")))
	}
	return err
}

// Pids returns the process ids of the running servers (tests).
func (k *Kube) Pids() map[string]int {
	k.mu.Lock()
	defer k.mu.Unlock()
	m := map[string]int{}
	for _, p := range []*process{k.etcd, k.api, k.kcm} {
		if pid := livePid(p); pid != 0 {
			m[p.name] = pid
		}
	}
	return m
}

func etcdHealthy(url string) func(context.Context) (bool, error) {
	return func(ctx context.Context) (bool, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+"/health", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false, err
		}
		defer resp.Body.Close()
		var h struct {
			Health string `json:"health"`
		}
		if err := json.NewDecoder(io.LimitReader(resp.Body, 4096)).Decode(&h); err != nil {
			return false, err
		}
		if h.Health != "true" {
			return false, fmt.Errorf("etcd /health: %s %q", resp.Status, h.Health)
		}
		return true, nil
	}
}

// readyzClient trusts ca, or skips verification when ca is nil (a local,
// self-signed serving certificate that does not verify for 127.0.0.1).
func readyzClient(ca []byte) *http.Client {
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if ca == nil {
		tc.InsecureSkipVerify = true
	} else {
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(ca)
		tc.RootCAs = pool
	}
	return &http.Client{Transport: &http.Transport{TLSClientConfig: tc}}
}

// loadServingCA reads the apiserver's generated apiserver.crt (leaf followed
// by its self-signed CA). It returns the PEM of the CA to trust, nil when the
// chain does not verify for 127.0.0.1, or an error when the file is not (yet)
// complete.
func loadServingCA(certFile string) ([]byte, error) {
	data, err := os.ReadFile(certFile)
	if err != nil {
		return nil, err
	}
	certs, err := parseCerts(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", certFile, err)
	}
	if len(certs) < 2 {
		return nil, fmt.Errorf("%s: expected the serving certificate and its CA, found %d certificate(s)", certFile, len(certs))
	}
	pool := x509.NewCertPool()
	var caPEM []byte
	for _, c := range certs[1:] {
		if c.IsCA {
			pool.AddCert(c)
			caPEM = append(caPEM, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})...)
		}
	}
	if _, err := certs[0].Verify(x509.VerifyOptions{Roots: pool, DNSName: "127.0.0.1"}); err != nil || caPEM == nil {
		return nil, nil
	}
	return caPEM, nil
}

func parseCerts(data []byte) ([]*x509.Certificate, error) {
	var certs []*x509.Certificate
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, err
		}
		certs = append(certs, c)
	}
	if len(certs) == 0 {
		return nil, errors.New("no certificate")
	}
	return certs, nil
}

// dropStaleServingCert removes a persisted serving pair that expires within
// 30 days or no longer verifies for 127.0.0.1.
func dropStaleServingCert(certDir string) {
	certFile := filepath.Join(certDir, "apiserver.crt")
	data, err := os.ReadFile(certFile)
	if err != nil {
		return
	}
	ca, err := loadServingCA(certFile)
	certs, perr := parseCerts(data)
	stale := err != nil || ca == nil || perr != nil || time.Until(certs[0].NotAfter) < 30*24*time.Hour
	if stale {
		_ = os.Remove(certFile)
		_ = os.Remove(filepath.Join(certDir, "apiserver.key"))
	}
}

// ensureRSAKey writes a 2048-bit RSA private key (PKCS#1 PEM) unless path exists.
func ensureRSAKey(path string) error {
	if _, err := os.Stat(path); err == nil {
		return nil
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	b := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	return writeFileAtomic(path, b, 0o600)
}

// ensureToken returns the token stored at path, creating a random one first.
func ensureToken(path string) (string, error) {
	if b, err := os.ReadFile(path); err == nil && len(strings.TrimSpace(string(b))) >= 32 {
		return strings.TrimSpace(string(b)), nil
	}
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return "", err
	}
	tok := hex.EncodeToString(raw)
	return tok, writeFileAtomic(path, []byte(tok+"\n"), 0o600)
}

func writeFileAtomic(path string, data []byte, perm os.FileMode) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, perm); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func writeKubeconfig(path, host string, caData []byte, token string) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["odaflow"] = &clientcmdapi.Cluster{
		Server:                   host,
		CertificateAuthorityData: caData,
		InsecureSkipTLSVerify:    caData == nil,
	}
	cfg.AuthInfos["odaflow-admin"] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts["odaflow"] = &clientcmdapi.Context{Cluster: "odaflow", AuthInfo: "odaflow-admin", Namespace: "default"}
	cfg.CurrentContext = "odaflow"
	return clientcmd.WriteToFile(*cfg, path)
}
