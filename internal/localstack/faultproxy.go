package localstack

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/rest"
)

// FaultRule makes the FaultProxy answer a share of the matching requests
// with an error, as kube-apiserver itself answers them.
type FaultRule struct {
	// Verbs the rule applies to: HTTP methods (GET, POST, PUT, PATCH,
	// DELETE) and WATCH for a GET with watch=true. Empty means every verb
	// but WATCH: a broken watch is a different fault (an apiserver restart).
	Verbs []string
	// Code is 409 (AlreadyExists for a POST, Conflict otherwise), 500
	// (InternalError) or 503 (ServiceUnavailable, with Retry-After).
	Code int
	// Share of the matching requests that get the error, 0 to 1.
	Share float64
	// AfterForward lets the request reach the apiserver and replaces its
	// successful answer with the error: a write that took effect but was
	// reported as failed, the case that tests idempotency.
	AfterForward bool
	// FirstAlways gives the error to the rule's first matching request
	// whatever its share, so that a short run still sees every fault it
	// asks for.
	FirstAlways bool
}

func (r FaultRule) matches(verb string) bool {
	if len(r.Verbs) == 0 {
		return verb != "WATCH"
	}
	for _, v := range r.Verbs {
		if v == verb {
			return true
		}
	}
	return false
}

// FaultProxy is a TLS reverse proxy in front of kube-apiserver that injects
// errors by rule and counts them. Clients reach it with Kubeconfig or
// RESTConfig (its own serving certificate, the apiserver's credentials).
type FaultProxy struct {
	// URL is https://127.0.0.1:<port>.
	URL string
	// CAData is the PEM of the proxy's self-signed serving certificate.
	CAData []byte
	// KubeconfigPath is a kubeconfig pointing at the proxy.
	KubeconfigPath string

	upstream *rest.Config
	srv      *http.Server
	done     chan struct{}

	mu        sync.Mutex
	rules     []FaultRule
	fired     []bool // by rule index
	rnd       *mrand.Rand
	injected  map[string]int
	forwarded int
}

// faultKey carries the rule chosen for an AfterForward injection from the
// handler to ModifyResponse.
type faultKey struct{}

// StartFaultProxy starts a proxy in front of the apiserver upstream points
// at (its credentials are the ones clients present; the proxy forwards
// them) and writes a kubeconfig for it in dir. No rule is set: it forwards
// everything until SetRules. seed makes the choice of requests repeatable.
func StartFaultProxy(upstream *rest.Config, dir string, seed uint64) (*FaultProxy, error) {
	target, err := url.Parse(upstream.Host)
	if err != nil {
		return nil, fmt.Errorf("fault proxy: upstream host %q: %w", upstream.Host, err)
	}
	// The upstream transport trusts the apiserver's CA; the Authorization
	// header comes from the client and is passed on as is.
	upCfg := rest.CopyConfig(upstream)
	upCfg.BearerToken = ""
	transport, err := rest.TransportFor(upCfg)
	if err != nil {
		return nil, fmt.Errorf("fault proxy: upstream transport: %w", err)
	}
	cert, caPEM, err := selfSignedCert()
	if err != nil {
		return nil, fmt.Errorf("fault proxy: serving certificate: %w", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("fault proxy: listen: %w", err)
	}
	p := &FaultProxy{
		URL: "https://" + ln.Addr().String(), CAData: caPEM, upstream: upstream,
		rnd: mrand.New(mrand.NewPCG(seed, seed^0x5eed)), injected: map[string]int{},
		done: make(chan struct{}),
	}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.Out.Host = target.Host
		},
		Transport: transport,
		// Watches stream: every event is passed on at once.
		FlushInterval:  -1,
		ModifyResponse: p.afterForward,
	}
	p.srv = &http.Server{
		Handler:           p.handler(rp),
		ReadHeaderTimeout: 10 * time.Second,
		TLSConfig:         &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12},
	}
	go func() {
		defer close(p.done)
		_ = p.srv.ServeTLS(ln, "", "")
	}()
	p.KubeconfigPath = filepath.Join(dir, "fault-proxy.kubeconfig")
	if err := writeKubeconfig(p.KubeconfigPath, p.URL, caPEM, upstream.BearerToken); err != nil {
		p.Close()
		return nil, fmt.Errorf("fault proxy: kubeconfig: %w", err)
	}
	return p, nil
}

// RESTConfig is upstream's configuration pointed at the proxy.
func (p *FaultProxy) RESTConfig() *rest.Config {
	c := rest.CopyConfig(p.upstream)
	c.Host = p.URL
	c.TLSClientConfig = rest.TLSClientConfig{CAData: p.CAData}
	return c
}

// SetRules replaces the rules; none forwards every request.
func (p *FaultProxy) SetRules(rules ...FaultRule) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rules = append([]FaultRule(nil), rules...)
	p.fired = make([]bool, len(rules))
}

// Injected returns the errors injected so far by "<code> <verb>", e.g.
// "409 PATCH".
func (p *FaultProxy) Injected() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string]int, len(p.injected))
	for k, v := range p.injected {
		out[k] = v
	}
	return out
}

// InjectedCode sums the injections of one status code over all verbs.
func (p *FaultProxy) InjectedCode(code int) int {
	n := 0
	prefix := strconv.Itoa(code) + " "
	for k, v := range p.Injected() {
		if strings.HasPrefix(k, prefix) {
			n += v
		}
	}
	return n
}

// Forwarded is the number of requests passed to the apiserver.
func (p *FaultProxy) Forwarded() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.forwarded
}

// Close stops the proxy, breaking open watches.
func (p *FaultProxy) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := p.srv.Shutdown(ctx); err != nil {
		_ = p.srv.Close() // watches do not end by themselves
	}
	<-p.done
}

// pick chooses the rule (if any) that applies to one request.
func (p *FaultProxy) pick(verb string) (FaultRule, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, r := range p.rules {
		if r.matches(verb) && ((r.FirstAlways && !p.fired[i]) || p.rnd.Float64() < r.Share) {
			p.fired[i] = true
			if !r.AfterForward {
				p.injected[fmt.Sprintf("%d %s", r.Code, verb)]++
			}
			return r, true
		}
	}
	p.forwarded++
	return FaultRule{}, false
}

func (p *FaultProxy) handler(rp *httputil.ReverseProxy) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		verb := r.Method
		if r.Method == http.MethodGet && (r.URL.Query().Get("watch") == "true" || r.URL.Query().Get("watch") == "1") {
			verb = "WATCH"
		}
		rule, hit := p.pick(verb)
		if !hit {
			rp.ServeHTTP(w, r)
			return
		}
		if rule.AfterForward {
			p.mu.Lock()
			p.forwarded++
			p.mu.Unlock()
			rp.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), faultKey{}, rule)))
			return
		}
		var body []byte
		if r.Body != nil {
			body, _ = io.ReadAll(io.LimitReader(r.Body, 4<<20))
		}
		code, header, status := kubeStatus(rule.Code, r.Method, r.URL.Path, body)
		for k, v := range header {
			w.Header().Set(k, v)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_, _ = w.Write(status)
	})
}

// afterForward replaces a successful answer with the error of an
// AfterForward rule.
func (p *FaultProxy) afterForward(resp *http.Response) error {
	rule, ok := resp.Request.Context().Value(faultKey{}).(FaultRule)
	if !ok || resp.StatusCode >= 300 {
		return nil
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	code, header, status := kubeStatus(rule.Code, resp.Request.Method, resp.Request.URL.Path, nil)
	p.mu.Lock()
	p.injected[fmt.Sprintf("%d %s after", rule.Code, resp.Request.Method)]++
	p.mu.Unlock()
	resp.StatusCode, resp.Status = code, fmt.Sprintf("%d %s", code, http.StatusText(code))
	for k, v := range header {
		resp.Header.Set(k, v)
	}
	resp.Header.Set("Content-Type", "application/json")
	resp.Header.Set("Content-Length", strconv.Itoa(len(status)))
	resp.ContentLength = int64(len(status))
	resp.Body = io.NopCloser(bytes.NewReader(status))
	return nil
}

// kubeStatus builds the metav1.Status kube-apiserver sends for code, with
// the same reason, message shape and details, so that client-go's
// apierrors.IsConflict / IsAlreadyExists / IsInternalError /
// IsServiceUnavailable see it as the real thing. A create's name is read
// from a JSON body; a protobuf one leaves it empty in the message.
func kubeStatus(code int, method, path string, body []byte) (int, map[string]string, []byte) {
	group, resource, name := splitKubePath(path)
	if name == "" && len(body) > 0 {
		var obj struct {
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
		}
		if json.Unmarshal(body, &obj) == nil {
			name = obj.Metadata.Name
		}
	}
	qualified := resource
	if group != "" {
		qualified += "." + group
	}
	details := map[string]any{"name": name, "group": group, "kind": resource}
	var reason, message string
	header := map[string]string{}
	switch code {
	case http.StatusConflict:
		if method == http.MethodPost {
			reason, message = "AlreadyExists", fmt.Sprintf("%s %q already exists", qualified, name)
		} else {
			reason = "Conflict"
			message = fmt.Sprintf("Operation cannot be fulfilled on %s %q: the object has been modified; please apply your changes to the latest version and try again", qualified, name)
		}
	case http.StatusServiceUnavailable:
		reason, message = "ServiceUnavailable", "the server is currently unable to handle the request"
		details["retryAfterSeconds"] = 1
		header["Retry-After"] = "1"
	default:
		code = http.StatusInternalServerError
		reason = "InternalError"
		message = "Internal error occurred: injected by the fault proxy"
		details["causes"] = []map[string]string{{"message": "injected by the fault proxy"}}
	}
	status, _ := json.Marshal(map[string]any{
		"kind": "Status", "apiVersion": "v1", "metadata": map[string]any{},
		"status": "Failure", "message": message, "reason": reason, "details": details, "code": code,
	})
	return code, header, status
}

// splitKubePath reads group, resource and name from an API path:
// /api/v1/namespaces/ns/services/x, /apis/g/v/namespaces/ns/r/x/status,
// /apis/g/v/r (cluster-scoped list) and so on.
func splitKubePath(path string) (group, resource, name string) {
	seg := strings.Split(strings.Trim(path, "/"), "/")
	var rest []string
	switch {
	case len(seg) >= 2 && seg[0] == "api":
		rest = seg[2:]
	case len(seg) >= 3 && seg[0] == "apis":
		group, rest = seg[1], seg[3:]
	default:
		return "", "", ""
	}
	if len(rest) >= 3 && rest[0] == "namespaces" {
		rest = rest[2:]
	}
	if len(rest) > 0 {
		resource = rest[0]
	}
	if len(rest) > 1 {
		name = rest[1]
	}
	return group, resource, name
}

// selfSignedCert makes a CA-flagged ECDSA certificate for 127.0.0.1 that
// serves as its own root.
func selfSignedCert() (tls.Certificate, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(time.Now().UnixNano()),
		Subject:               pkix.Name{CommonName: "odaflow fault proxy"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:           []net.IP{net.ParseIP("127.0.0.1")},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	cert, err := tls.X509KeyPair(certPEM, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}))
	return cert, certPEM, err
}
