// Package hubtest is a test double of a TMF630 event hub, the endpoint
// (`<api>/hub`) on which a component's partyRole or permissionSpecificationSet
// API takes listener subscriptions: POST /…/hub answers 201 with
// {id, callback, query}, DELETE /…/hub/{id} 204, or 404 for an unknown id.
// It counts registrations, so tests can prove a hub is never subscribed
// twice, and it can deliver events to the subscribed callbacks.
package hubtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
)

// Subscription is one registration as the hub stores it.
type Subscription struct {
	ID       string `json:"id"`
	Callback string `json:"callback"`
	Query    any    `json:"query"`
	// Path is the hub path it was registered on; Type the body's @type.
	Path string `json:"-"`
	Type string `json:"-"`
}

// Hub is the double.
type Hub struct {
	srv *httptest.Server

	mu       sync.Mutex
	next     int
	subs     map[string]Subscription
	posts    int
	deletes  int
	failCode int
}

// New starts a hub; Close stops it.
func New() *Hub {
	h := &Hub{subs: map[string]Subscription{}}
	h.srv = httptest.NewServer(http.HandlerFunc(h.serve))
	return h
}

// Close stops the hub: later calls find nothing listening.
func (h *Hub) Close() { h.srv.Close() }

// URL is the hub's base address; any path ending in /hub is a hub.
func (h *Hub) URL() string { return h.srv.URL }

// Client is an HTTP client that reaches this hub whatever host a URL
// names, so code that builds cluster-local hub URLs
// (http://<svc>.<ns>.svc.cluster.local:<port>/…/hub) talks to the double.
func (h *Hub) Client() *http.Client {
	addr := h.srv.Listener.Addr().String()
	return &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, addr)
		},
	}}
}

// Fail makes every call answer code (0: behave again).
func (h *Hub) Fail(code int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.failCode = code
}

// Registrations counts the subscriptions ever created.
func (h *Hub) Registrations() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.posts
}

// Unregistrations counts the subscriptions deleted.
func (h *Hub) Unregistrations() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.deletes
}

// Subscriptions lists the live subscriptions, by id.
func (h *Hub) Subscriptions() []Subscription {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]Subscription, 0, len(h.subs))
	for _, s := range h.subs {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

func (h *Hub) serve(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.failCode != 0 {
		http.Error(w, `{"code":"`+fmt.Sprint(h.failCode)+`","reason":"failing on request"}`, h.failCode)
		return
	}
	switch {
	case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/hub"):
		var body struct {
			Callback string `json:"callback"`
			Query    any    `json:"query"`
			Type     string `json:"@type"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil || body.Callback == "" {
			writeJSON(w, http.StatusBadRequest, map[string]string{"code": "400", "reason": "callback is required"})
			return
		}
		h.next++
		s := Subscription{ID: fmt.Sprintf("sub-%d", h.next), Callback: body.Callback, Query: body.Query, Path: r.URL.Path, Type: body.Type}
		h.subs[s.ID] = s
		h.posts++
		writeJSON(w, http.StatusCreated, s)
	case r.Method == http.MethodDelete && strings.Contains(r.URL.Path, "/hub/"):
		id := r.URL.Path[strings.LastIndex(r.URL.Path, "/hub/")+len("/hub/"):]
		if _, ok := h.subs[id]; !ok {
			writeJSON(w, http.StatusNotFound, map[string]string{"code": "404", "reason": "no subscription " + id})
			return
		}
		delete(h.subs, id)
		h.deletes++
		w.WriteHeader(http.StatusNoContent)
	default:
		writeJSON(w, http.StatusNotFound, map[string]string{"code": "404", "reason": "not a hub route"})
	}
}

// Publish POSTs an event to every subscription's callback, as the hub does
// when a resource changes, and returns the status codes.
func (h *Hub) Publish(client *http.Client, event any) ([]int, error) {
	body, err := json.Marshal(event)
	if err != nil {
		return nil, err
	}
	var codes []int
	for _, s := range h.Subscriptions() {
		resp, err := client.Post(s.Callback, "application/json", bytes.NewReader(body))
		if err != nil {
			return codes, err
		}
		resp.Body.Close()
		codes = append(codes, resp.StatusCode)
	}
	return codes, nil
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}
