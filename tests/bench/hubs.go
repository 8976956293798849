package main

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
)

// componentHubs stands in for the components' own event hubs (TMF630
// /hub), which the identity step subscribes the worker's listener to. A hub
// URL names the implementation Service's cluster-local name
// (identity.HubURL), which resolves only inside a cluster, and the bench
// runs no component pods; so the worker is given this server as its HTTP
// proxy, and Go's HTTP clients send it every request to a host that is not
// loopback (the apiserver, Temporal and the Keycloak double stay direct).
// Without it every IdentityConfig of the bench would end its identity step
// with a Warning: the bench would measure a worker whose listener is not
// configured, unlike a Canvas install.
type componentHubs struct {
	srv  *http.Server
	addr string

	mu sync.Mutex
	// subscribed counts subscriptions made, unsubscribed those removed.
	subscribed, unsubscribed int
	// refused counts requests that were not a hub call to a cluster-local
	// Service: a request the proxy should never have been sent.
	refused int
}

func startComponentHubs() (*componentHubs, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("component hubs: %w", err)
	}
	h := &componentHubs{addr: ln.Addr().String()}
	h.srv = &http.Server{Handler: h}
	go func() { _ = h.srv.Serve(ln) }()
	return h, nil
}

// proxyURL is the worker's HTTP_PROXY.
func (h *componentHubs) proxyURL() string { return "http://" + h.addr }

func (h *componentHubs) close() { _ = h.srv.Close() }

// counts returns the subscriptions made and removed, and the refused
// requests, so far.
func (h *componentHubs) counts() (subscribed, unsubscribed, refused int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.subscribed, h.unsubscribed, h.refused
}

// ServeHTTP answers a proxied request (absolute form: r.URL carries the
// hub's host) as a TMF630 hub does: POST .../hub with a callback creates a
// subscription (201 and its id), DELETE .../hub/{id} removes it (204).
func (h *componentHubs) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	defer h.mu.Unlock()
	host := r.URL.Hostname()
	if !strings.HasSuffix(host, ".svc.cluster.local") {
		h.refused++
		http.Error(w, "not a cluster-local Service: "+host, http.StatusBadGateway)
		return
	}
	path := strings.TrimSuffix(r.URL.Path, "/")
	switch {
	case r.Method == http.MethodPost && strings.HasSuffix(path, "/hub"):
		var body struct {
			Callback string `json:"callback"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil || body.Callback == "" {
			h.refused++
			http.Error(w, "a hub subscription needs a callback", http.StatusBadRequest)
			return
		}
		h.subscribed++
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		// The callback carries the listener token: never echoed back.
		_ = json.NewEncoder(w).Encode(map[string]any{"id": fmt.Sprintf("sub-%d", h.subscribed)})
	case r.Method == http.MethodDelete && strings.Contains(path, "/hub/"):
		h.unsubscribed++
		w.WriteHeader(http.StatusNoContent)
	default:
		h.refused++
		http.Error(w, "not a hub call: "+r.Method+" "+path, http.StatusNotFound)
	}
}
