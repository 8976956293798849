// Package keycloak is an HTTP test double of the part of Keycloak's admin
// REST API that odaflow calls through gocloak, plus the token endpoint.
//
// It imitates Keycloak 26.7 (KeycloakVersion; checked against 26.7.3 and
// the Canvas's 20.0.5 by the contract suite): status codes, Location
// headers, error bodies ({"error": ...} for 404/401/403 from the JAX-RS error
// handler, {"errorMessage": ...} for 409 from ErrorResponse.exists, OAuth2
// errors {"error", "error_description"} from the token endpoint), pagination
// with `first`/`max`, ordering of lists by clientId, role name and username,
// brief role representations in lists. Its fidelity is checked by the
// contract suite in tests/contract/keycloak (the same assertions run against
// a real Keycloak when one is configured) and by running an allow-list of
// gocloak's own tests against it (hack/gocloak-contract.sh).
//
// Served routes (every /admin route needs a bearer token):
//
//	POST   /realms/{realm}/protocol/openid-connect/token   password, client_credentials
//	GET    /admin/realms/{realm}/clients                   clientId, search, first, max
//	POST   /admin/realms/{realm}/clients
//	GET|PUT|DELETE /admin/realms/{realm}/clients/{id}
//	GET|POST /admin/realms/{realm}/clients/{id}/roles      first, max, search, briefRepresentation
//	GET|DELETE /admin/realms/{realm}/clients/{id}/roles/{role-name}
//	GET|POST /admin/realms/{realm}/clients/{id}/client-secret
//	GET    /admin/realms/{realm}/clients/{id}/service-account-user
//	GET|POST|DELETE /admin/realms/{realm}/users/{user}/role-mappings/clients/{client}
//	GET    /admin/realms/{realm}/users/{user}/role-mappings/clients/{client}/composite
//	GET    /admin/realms/{realm}/roles-by-id/{role-id}
//	GET|POST /admin/realms/{realm}/users                   username, exact, first, max
//	GET|DELETE /admin/realms/{realm}/users/{user}
//	PUT    /admin/realms/{realm}/users/{user}/reset-password
//
// The user routes and roles-by-id exist for gocloak's own tests of the role
// mapping methods (they set up a user first); odaflow itself does not call
// them.
package keycloak

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"
)

// KeycloakVersion is the Keycloak release whose behaviour the double
// imitates.
const KeycloakVersion = "26.7"

// Defaults of a seeded double.
const (
	AdminRealm    = "master"
	AdminUser     = "admin"
	AdminClientID = "admin-cli"
)

// Request is one request the double answered, for assertions. It never
// holds bodies or headers, so no credential ends up in a test log.
type Request struct {
	Method string
	Path   string
	Query  string
	Status int
	// ClientID is the clientId of the client the request created or
	// addressed, and ServiceAccountOf the clientId whose service-account
	// user it addressed, when it names them: tests that share the double
	// count the requests about their own clients.
	ClientID, ServiceAccountOf string
}

// Server is a running double.
type Server struct {
	mu     sync.Mutex
	realms map[string]*realm
	tokens map[string]*token
	log    []Request
	// requestClient and requestServiceAccountOf are what the request being
	// served addresses (set under mu by the handlers, read into its log
	// entry).
	requestClient, requestServiceAccountOf string
	unavailable                            int
	tokenLifetime                          time.Duration
	now                                    func() time.Time

	addr string
	srv  *http.Server
	done chan struct{}
}

// Options configure a new double.
type Options struct {
	// AdminPassword is the master realm admin's password.
	AdminPassword string
	// TokenLifetime is how long an access token lasts (Keycloak's default
	// accessTokenLifespan is 60 s).
	TokenLifetime time.Duration
	// Now replaces the clock, for tests of token expiry.
	Now func() time.Time
}

// New starts a double on a free loopback port, seeded with the master realm
// (user `admin`, client `admin-cli`). Close stops it.
func New(opts Options) (*Server, error) {
	s := &Server{realms: map[string]*realm{}, tokens: map[string]*token{}, tokenLifetime: opts.TokenLifetime, now: opts.Now}
	if s.tokenLifetime == 0 {
		s.tokenLifetime = 60 * time.Second
	}
	if s.now == nil {
		s.now = time.Now
	}
	m := s.addRealm(AdminRealm)
	if _, err := m.addClient(map[string]any{"clientId": AdminClientID, "publicClient": true}); err != nil {
		return nil, err
	}
	if _, err := m.addUser(map[string]any{"username": AdminUser, "enabled": true}, opts.AdminPassword, true); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listen: %w", err)
	}
	s.addr = ln.Addr().String()
	s.serve(ln)
	return s, nil
}

// URL is the base URL to give gocloak.NewClient.
func (s *Server) URL() string { return "http://" + s.addr }

func (s *Server) serve(ln net.Listener) {
	s.srv = &http.Server{Handler: s.handler(), ReadHeaderTimeout: 10 * time.Second}
	s.done = make(chan struct{})
	go func(srv *http.Server, done chan struct{}) {
		defer close(done)
		_ = srv.Serve(ln)
	}(s.srv, s.done)
}

// Close stops the double.
func (s *Server) Close() {
	if s.srv != nil {
		_ = s.srv.Shutdown(context.Background())
		<-s.done
		s.srv = nil
	}
}

// Down stops listening: clients get "connection refused", as when Keycloak
// is not running. State is kept for Up.
func (s *Server) Down() { s.Close() }

// Up listens again on the same address after Down.
func (s *Server) Up() error {
	if s.srv != nil {
		return nil
	}
	ln, err := net.Listen("tcp", s.addr)
	if err != nil {
		return fmt.Errorf("listen again on %s: %w", s.addr, err)
	}
	s.serve(ln)
	return nil
}

// SetUnavailable makes every request answer with the status code (503 for
// a Keycloak that is starting or overloaded); 0 answers normally again.
func (s *Server) SetUnavailable(code int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.unavailable = code
}

// Requests returns the requests answered so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.log...)
}

// ResetRequests empties the request log.
func (s *Server) ResetRequests() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.log = nil
}

// AddRealm creates an empty realm (no-op when it exists).
func (s *Server) AddRealm(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.realms[name] == nil {
		s.addRealm(name)
	}
}

// AddClient adds a client representation to a realm and returns its id.
func (s *Server) AddClient(realmName string, rep map[string]any) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.realms[realmName]
	if r == nil {
		return "", fmt.Errorf("no realm %s", realmName)
	}
	c, err := r.addClient(rep)
	if err != nil {
		return "", err
	}
	return c.id, nil
}

// lookupClient finds a client by clientId; the caller holds s.mu.
func (s *Server) lookupClient(realmName, clientID string) *client {
	r := s.realms[realmName]
	if r == nil {
		return nil
	}
	return r.clientByClientID(clientID)
}

// ClientSecret returns a client's current secret (for tests that check
// rotation).
func (s *Server) ClientSecret(realmName, clientID string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.lookupClient(realmName, clientID)
	if c == nil {
		return "", false
	}
	return c.secret, true
}

// ClientSnapshot returns everything the realm holds of a client, as JSON:
// its representation (attributes included), its secret and its roles with
// their attributes. A test hook: tests compare two snapshots to prove a
// client was left exactly as it was.
func (s *Server) ClientSnapshot(realmName, clientID string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.lookupClient(realmName, clientID)
	if c == nil {
		return "", false
	}
	var roles []map[string]any
	for _, ro := range c.sortedRoles() {
		roles = append(roles, ro.full())
	}
	b, err := json.Marshal(map[string]any{"rep": c.rep, "secret": c.secret, "roles": roles})
	if err != nil {
		return "", false
	}
	return string(b), true
}

// ClientRoles returns the names of a client's roles, sorted (a test hook:
// it reads the state directly, so checking it adds nothing to the request
// log).
func (s *Server) ClientRoles(realmName, clientID string) ([]string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.lookupClient(realmName, clientID)
	if c == nil {
		return nil, false
	}
	var out []string
	for _, ro := range c.sortedRoles() {
		out = append(out, ro.name)
	}
	return out, true
}

// SetTokenLifetime changes the lifetime of tokens issued from now on.
func (s *Server) SetTokenLifetime(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tokenLifetime = d
}

func newID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// issued remembers every credential a double of this process handed out
// (client secrets, access and refresh tokens), so that the tests' secrets
// scan can look for each of them in histories and logs.
var issued struct {
	sync.Mutex
	values []string
}

// Issued returns every client secret and token issued so far by any double
// in this process.
func Issued() []string {
	issued.Lock()
	defer issued.Unlock()
	return append([]string(nil), issued.values...)
}

func newSecret() string {
	var b [24]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	v := hex.EncodeToString(b[:])
	issued.Lock()
	issued.values = append(issued.values, v)
	issued.Unlock()
	return v
}

var errExists = errors.New("exists")
