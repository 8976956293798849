// Package listener is odaflow's identity listener (oda-behaviour §2.3
// "Listener (IDL)", fixing §5.3.6): the callback that components' partyRole
// and permissionSpecificationSet hubs deliver TMF events to. It is served by
// the worker process at
//
//	POST /listener/{namespace}/{identityconfig}?token=<token>
//
// and does no Keycloak I/O itself: a valid event becomes a signal
// (identity.SignalRoleEvent) to the IdentityConfig's workflow, which applies
// the role change through an activity, durably and in order, with the
// reason in the status when Keycloak is down.
//
// # Authentication
//
// Every IdentityConfig's path has its own token,
// identity.ListenerToken(key, namespace, name): an HMAC under a worker key
// read from a mounted Secret file. Nothing per IdentityConfig is stored,
// the workflow never sees a token (the hub activity derives it, this
// handler re-derives it), and a leaked token lets its holder add or remove
// dynamic roles of that one component only — the spec's declared roles are
// out of reach (identity.DecideRoleEvent).
//
// TMF hubs (TMF630) store nothing but a callback URL: there is no field for
// a header or credentials. So the token travels in the callback's query.
// The price is that it is as visible as the URL: the hub stores it and may
// log it, as may a proxy in between. The mitigations are the narrow scope
// above, this handler never logging the URL, and rotation (add a new key
// first in the key file; each IdentityConfig's drift check re-registers
// with the new key and drops the old subscription; then remove the old
// key). A client that can send headers may use `Authorization: Bearer
// <token>` instead, which is checked the same way.
package listener

import (
	"bufio"
	"bytes"
	"context"
	"crypto/hmac"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"go.temporal.io/api/serviceerror"
	"golang.org/x/time/rate"

	"github.com/odaflow/odaflow/identity"
	"github.com/odaflow/odaflow/oda"
)

// Signaller is the part of the Temporal client the listener uses;
// client.Client satisfies it.
type Signaller interface {
	SignalWorkflow(ctx context.Context, workflowID, runID, signalName string, arg any) error
}

// Keys returns the listener keys, the signing key first.
type Keys func() ([][]byte, error)

// MinKeyLength is the shortest key accepted: 32 bytes, the HMAC-SHA256
// block of security.
const MinKeyLength = 32

// KeyFile reads keys from a file (a mounted Secret key), one per line, the
// first the signing key, the others still accepted while a rotation
// completes. It reads the file on every call, so a Secret update reaches
// the worker without a restart; the file is small and on tmpfs. Errors name
// the file, never its content.
func KeyFile(path string) Keys {
	return func() ([][]byte, error) {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("listener key file: %w", err)
		}
		return ParseKeys(path, data)
	}
}

// ParseKeys splits a key file's content into keys.
func ParseKeys(path string, data []byte) ([][]byte, error) {
	var keys [][]byte
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		if len(line) < MinKeyLength {
			return nil, fmt.Errorf("listener key file %s: the key on line %d is shorter than %d bytes", path, n, MinKeyLength)
		}
		keys = append(keys, append([]byte(nil), line...))
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("listener key file %s: %w", path, err)
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("listener key file %s holds no key", path)
	}
	return keys, nil
}

// Handler serves the listener route.
type Handler struct {
	signal Signaller
	keys   Keys
	log    *slog.Logger
	mux    *http.ServeMux
	// SignalTimeout bounds the signal call, so the hub gets its answer
	// quickly (a 503 it will retry) when Temporal is slow.
	SignalTimeout time.Duration

	mu     sync.Mutex
	guards map[string]*guard
}

// Per IdentityConfig, after its token is verified: at most EventBurst
// events at once, refilled at EventsPerSecond, so one component's hub (or
// whoever holds its token) cannot flood its workflow or Temporal for the
// others; and the last RecentEvents event ids, so a hub's redelivery of an
// event already recorded is acknowledged without a second signal.
const (
	EventsPerSecond = 10
	EventBurst      = 50
	RecentEvents    = 256
)

// guard is one IdentityConfig's rate limit and recent event ids. Guards
// exist only for authenticated paths, so their number is bounded by the
// IdentityConfigs, not by what callers send.
type guard struct {
	limiter *rate.Limiter
	ids     map[string]bool
	order   []string
}

func (h *Handler) guard(key string) *guard {
	h.mu.Lock()
	defer h.mu.Unlock()
	g := h.guards[key]
	if g == nil {
		g = &guard{limiter: rate.NewLimiter(EventsPerSecond, EventBurst), ids: map[string]bool{}}
		h.guards[key] = g
	}
	return g
}

func (h *Handler) seen(g *guard, id string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return id != "" && g.ids[id]
}

func (h *Handler) remember(g *guard, id string) {
	if id == "" {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if g.ids[id] {
		return
	}
	g.ids[id] = true
	g.order = append(g.order, id)
	if len(g.order) > RecentEvents {
		delete(g.ids, g.order[0])
		g.order = g.order[1:]
	}
}

// Route is the pattern the handler serves.
const Route = "POST /listener/{namespace}/{identityconfig}"

// MaxBody bounds an event body; TMF events are a few KiB.
const MaxBody = 1 << 20

// New builds the handler.
func New(sig Signaller, keys Keys, log *slog.Logger) *Handler {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	h := &Handler{signal: sig, keys: keys, log: log, mux: http.NewServeMux(), SignalTimeout: 5 * time.Second, guards: map[string]*guard{}}
	h.mux.HandleFunc(Route, h.event)
	return h
}

// ServeHTTP answers POST /listener/{namespace}/{identityconfig}; anything
// else is 404 or 405.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.mux.ServeHTTP(w, r) }

func (h *Handler) event(w http.ResponseWriter, r *http.Request) {
	ns, name := r.PathValue("namespace"), r.PathValue("identityconfig")
	// The route is logged, never the URL: its query holds the token.
	log := h.log.With("identityConfig", ns+"/"+name)
	keys, err := h.keys()
	if err != nil {
		log.Error("listener key unavailable; answering 503 so the hub retries", "err", err)
		reply(w, http.StatusServiceUnavailable, "ListenerUnavailable", "the listener cannot verify events right now")
		return
	}
	if !authorized(r, keys, ns, name) {
		log.Warn("listener event refused: missing or wrong token", "remote", r.RemoteAddr)
		reply(w, http.StatusUnauthorized, "Unauthorized", "missing or wrong listener token")
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			reply(w, http.StatusRequestEntityTooLarge, "TooLarge", fmt.Sprintf("event bodies are limited to %d bytes", MaxBody))
			return
		}
		reply(w, http.StatusBadRequest, "BadRequest", "could not read the body")
		return
	}
	ev, err := identity.ParseEvent(name, body)
	if err != nil {
		log.Warn("listener event refused", "err", err)
		reply(w, http.StatusBadRequest, "MalformedEvent", err.Error())
		return
	}
	log = log.With("eventType", ev.EventType, "eventId", ev.EventID, "role", ev.Role.Name)
	if ev.Action == identity.RoleIgnore {
		log.Debug("listener event changes no role")
		w.WriteHeader(http.StatusNoContent)
		return
	}
	g := h.guard(ns + "/" + name)
	if h.seen(g, ev.EventID) {
		log.Debug("listener event already recorded")
		w.WriteHeader(http.StatusOK)
		return
	}
	if !g.limiter.Allow() {
		log.Warn("listener events arrive faster than allowed; answering 429")
		w.Header().Set("Retry-After", "1")
		reply(w, http.StatusTooManyRequests, "TooManyRequests", fmt.Sprintf("at most %d events a second per IdentityConfig", EventsPerSecond))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), h.SignalTimeout)
	defer cancel()
	err = h.signal.SignalWorkflow(ctx, oda.WorkflowID(oda.KindIdentityConfig.Name, ns, name), "", identity.SignalRoleEvent, ev)
	var notFound *serviceerror.NotFound
	switch {
	case errors.As(err, &notFound):
		// No running workflow: the IdentityConfig does not exist (any
		// more), e.g. a subscription left behind by a deleted component.
		log.Info("listener event for an unknown IdentityConfig")
		reply(w, http.StatusNotFound, "NotFound", "no IdentityConfig "+ns+"/"+name)
	case err != nil:
		log.Warn("could not signal the IdentityConfig workflow; answering 503 so the hub retries", "err", err)
		w.Header().Set("Retry-After", "10")
		reply(w, http.StatusServiceUnavailable, "Unavailable", "the event could not be recorded; retry later")
	default:
		h.remember(g, ev.EventID)
		log.Info("listener event recorded", "action", string(ev.Action))
		w.WriteHeader(http.StatusCreated)
	}
}

// authorized checks the token of the query or the bearer header against
// every key, in constant time per key.
func authorized(r *http.Request, keys [][]byte, ns, name string) bool {
	token := r.URL.Query().Get(identity.TokenParam)
	if bearer, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok && token == "" {
		token = strings.TrimSpace(bearer)
	}
	if token == "" || ns == "" || name == "" {
		return false
	}
	ok := false
	for _, k := range keys {
		if hmac.Equal([]byte(token), []byte(identity.ListenerToken(k, ns, name))) {
			ok = true
		}
	}
	return ok
}

// reply writes a TMF630-style error body.
func reply(w http.ResponseWriter, code int, reason, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]string{"code": fmt.Sprint(code), "reason": reason, "message": message})
}
