package payloadcodec

import (
	"crypto/subtle"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"

	"go.temporal.io/sdk/converter"

	"github.com/odaflow/odaflow/internal/secretfile"
)

// maxBody bounds a /decode request: the Web UI sends the payloads of one
// history page, far below this.
const maxBody = 16 << 20

// ServerOptions say who may use the codec server.
type ServerOptions struct {
	// Origins are the Web UI origins (https://temporal.example.com) whose
	// browser requests get CORS headers. Origins match exactly: no
	// wildcard, because the requests carry the user's Authorization header.
	Origins []string
	// TokenFile holds the bearer tokens accepted in Authorization, one per
	// line (a mounted Secret, read again when it changes). Empty = no token
	// is asked for (only for a server reachable by authorised users alone).
	TokenFile string
	// Namespaces are the Temporal namespaces (X-Namespace) whose payloads
	// may be decoded; empty = any.
	Namespaces []string
	Log        *slog.Logger
}

// NewHandler serves the Temporal codec-server protocol (POST /encode and
// POST /decode with {"payloads":[...]}) for the Web UI and the temporal CLI
// (--codec-endpoint), behind CORS for the configured origins, a bearer
// token and a namespace allow-list.
func NewHandler(c Codec, o ServerOptions) (http.Handler, error) {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	h := &handler{codec: converter.NewPayloadCodecHTTPHandler(c), opts: o}
	if o.TokenFile != "" {
		h.tokens = newTokenFile(o.TokenFile)
		if _, err := h.tokens.get(); err != nil {
			return nil, err
		}
	}
	return h, nil
}

type handler struct {
	codec  http.Handler
	opts   ServerOptions
	tokens *tokenFile
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if origin := r.Header.Get("Origin"); origin != "" && slices.Contains(h.opts.Origins, origin) {
		w.Header().Set("Access-Control-Allow-Origin", origin)
		w.Header().Set("Access-Control-Allow-Credentials", "true")
		w.Header().Add("Vary", "Origin")
		if r.Method == http.MethodOptions {
			// The preflight carries no credentials; the request after it does.
			w.Header().Set("Access-Control-Allow-Methods", "POST, OPTIONS")
			w.Header().Set("Access-Control-Allow-Headers", "Content-Type, X-Namespace, Authorization")
			w.Header().Set("Access-Control-Max-Age", "600")
			w.WriteHeader(http.StatusNoContent)
			return
		}
	}
	if r.Method != http.MethodPost || (!strings.HasSuffix(r.URL.Path, "/decode") && !strings.HasSuffix(r.URL.Path, "/encode")) {
		http.NotFound(w, r)
		return
	}
	if h.tokens != nil && !h.tokens.accepts(r.Header.Get("Authorization")) {
		h.opts.Log.Warn("codec server: request refused: no valid bearer token", "remote", r.RemoteAddr, "path", r.URL.Path)
		w.Header().Set("WWW-Authenticate", `Bearer realm="odaflow-codec"`)
		http.Error(w, "a valid bearer token is required", http.StatusUnauthorized)
		return
	}
	ns := r.Header.Get("X-Namespace")
	if len(h.opts.Namespaces) > 0 && !slices.Contains(h.opts.Namespaces, ns) {
		h.opts.Log.Warn("codec server: request refused: namespace not allowed", "remote", r.RemoteAddr, "namespace", ns)
		http.Error(w, fmt.Sprintf("namespace %q is not served by this codec server", ns), http.StatusForbidden)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxBody)
	h.codec.ServeHTTP(w, r)
}

// tokenFile is the accepted tokens, one per line, read again when the
// file changes.
type tokenFile struct{ f secretfile.File }

func newTokenFile(path string) *tokenFile {
	return &tokenFile{f: secretfile.File{Path: path, What: "codec server token file"}}
}

func (t *tokenFile) get() ([][]byte, error) {
	v, err := t.f.Get()
	if err != nil {
		return nil, err
	}
	var tokens [][]byte
	for _, line := range strings.Split(v, "\n") {
		if line = strings.TrimSpace(line); line != "" {
			tokens = append(tokens, []byte(line))
		}
	}
	return tokens, nil
}

func (t *tokenFile) accepts(header string) bool {
	got, ok := strings.CutPrefix(header, "Bearer ")
	if !ok || got == "" {
		return false
	}
	tokens, err := t.get()
	if err != nil {
		return false
	}
	match := 0
	for _, want := range tokens {
		match |= subtle.ConstantTimeCompare([]byte(got), want)
	}
	return match == 1
}
