package keycloak

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (w *statusRecorder) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

func (s *Server) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /realms/{realm}/protocol/openid-connect/token", s.token)
	admin := func(pattern string, h func(http.ResponseWriter, *http.Request, *realm)) {
		mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) { s.admin(w, r, h) })
	}
	admin("GET /admin/realms/{realm}/clients", s.listClients)
	admin("POST /admin/realms/{realm}/clients", s.createClient)
	admin("GET /admin/realms/{realm}/clients/{id}", s.getClient)
	admin("PUT /admin/realms/{realm}/clients/{id}", s.updateClient)
	admin("DELETE /admin/realms/{realm}/clients/{id}", s.deleteClient)
	admin("GET /admin/realms/{realm}/clients/{id}/roles", s.listRoles)
	admin("POST /admin/realms/{realm}/clients/{id}/roles", s.createRole)
	admin("GET /admin/realms/{realm}/clients/{id}/roles/{role}", s.getRole)
	admin("DELETE /admin/realms/{realm}/clients/{id}/roles/{role}", s.deleteRole)
	admin("GET /admin/realms/{realm}/clients/{id}/client-secret", s.getSecret)
	admin("POST /admin/realms/{realm}/clients/{id}/client-secret", s.regenerateSecret)
	admin("GET /admin/realms/{realm}/clients/{id}/service-account-user", s.serviceAccountUser)
	admin("GET /admin/realms/{realm}/users/{user}/role-mappings/clients/{id}", s.listMappings)
	admin("GET /admin/realms/{realm}/users/{user}/role-mappings/clients/{id}/composite", s.listMappings)
	admin("POST /admin/realms/{realm}/users/{user}/role-mappings/clients/{id}", s.addMappings)
	admin("DELETE /admin/realms/{realm}/users/{user}/role-mappings/clients/{id}", s.deleteMappings)
	admin("GET /admin/realms/{realm}/roles-by-id/{roleid}", s.getRoleByID)
	admin("GET /admin/realms/{realm}/users", s.listUsers)
	admin("POST /admin/realms/{realm}/users", s.createUser)
	admin("GET /admin/realms/{realm}/users/{user}", s.getUser)
	admin("DELETE /admin/realms/{realm}/users/{user}", s.deleteUser)
	admin("PUT /admin/realms/{realm}/users/{user}/reset-password", s.resetPassword)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		s.mu.Lock()
		code := s.unavailable
		s.mu.Unlock()
		if code != 0 {
			writeJSON(rec, code, map[string]any{"error": "unavailable"})
		}
		s.mu.Lock()
		s.requestClient, s.requestServiceAccountOf = "", ""
		if code == 0 {
			mux.ServeHTTP(rec, r)
		}
		s.log = append(s.log, Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Status: rec.status,
			ClientID: s.requestClient, ServiceAccountOf: s.requestServiceAccountOf})
		s.mu.Unlock()
	})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// errorBody is what Keycloak's JAX-RS error handler answers for
// NotFoundException, NotAuthorizedException and the like.
func errorBody(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, map[string]string{"error": msg})
}

// conflict is ErrorResponse.exists: 409 with errorMessage.
func conflict(w http.ResponseWriter, msg string) {
	writeJSON(w, http.StatusConflict, map[string]string{"errorMessage": msg})
}

func oauthError(w http.ResponseWriter, code int, errCode, desc string) {
	writeJSON(w, code, map[string]string{"error": errCode, "error_description": desc})
}

// token is the OpenID Connect token endpoint: password and
// client_credentials grants, with client authentication by HTTP Basic or
// form fields, as Keycloak accepts both.
func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	rl := s.realms[r.PathValue("realm")]
	if rl == nil {
		errorBody(w, http.StatusNotFound, "Realm does not exist")
		return
	}
	if err := r.ParseForm(); err != nil {
		oauthError(w, http.StatusBadRequest, "invalid_request", "malformed form")
		return
	}
	clientID, secret, basic := basicAuth(r)
	if !basic {
		clientID, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	}
	c := rl.clientByClientID(clientID)
	if c == nil {
		oauthError(w, http.StatusUnauthorized, "invalid_client", "Invalid client or Invalid client credentials")
		return
	}
	if !boolField(c.rep, "publicClient") && secret != c.secret {
		oauthError(w, http.StatusUnauthorized, "unauthorized_client", "Invalid client or Invalid client credentials")
		return
	}
	var u *user
	switch r.PostForm.Get("grant_type") {
	case "password":
		u = rl.userByName(strings.ToLower(r.PostForm.Get("username")))
		if u == nil || u.saClientID != "" || u.password == "" || u.password != r.PostForm.Get("password") || !u.enabled {
			// 400 since Keycloak 26 (measured on 26.7.3); 20.0.5, the
			// Canvas's, answered 401. odaflow treats both as refused.
			oauthError(w, http.StatusBadRequest, "invalid_grant", "Invalid user credentials")
			return
		}
	case "client_credentials":
		if boolField(c.rep, "publicClient") {
			oauthError(w, http.StatusUnauthorized, "unauthorized_client", "Public client not allowed to retrieve service account")
			return
		}
		if !boolField(c.rep, "serviceAccountsEnabled") || c.serviceAccountUser == "" {
			oauthError(w, http.StatusUnauthorized, "unauthorized_client", "Client not enabled to retrieve service account")
			return
		}
		u = rl.users[c.serviceAccountUser]
	default:
		oauthError(w, http.StatusBadRequest, "unsupported_grant_type", "Unsupported grant_type")
		return
	}
	access := newSecret()
	s.tokens[access] = &token{realm: rl.name, userID: u.id, expires: s.now().Add(s.tokenLifetime).UnixNano()}
	writeJSON(w, http.StatusOK, map[string]any{
		"access_token": access, "expires_in": int(s.tokenLifetime / time.Second),
		"refresh_expires_in": 1800, "refresh_token": newSecret(), "token_type": "Bearer",
		"not-before-policy": 0, "session_state": newID(), "scope": "profile email",
	})
}

func basicAuth(r *http.Request) (string, string, bool) {
	h := r.Header.Get("Authorization")
	if !strings.HasPrefix(h, "Basic ") {
		return "", "", false
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(h, "Basic "))
	if err != nil {
		return "", "", false
	}
	id, secret, ok := strings.Cut(string(raw), ":")
	if !ok {
		return "", "", false
	}
	// Keycloak URL-decodes both parts (RFC 6749 §2.3.1).
	id, _ = url.QueryUnescape(id)
	secret, _ = url.QueryUnescape(secret)
	return id, secret, true
}

// admin authenticates an admin REST call. A token from the master realm's
// admin user may manage every realm; a token issued by a realm (a service
// account such as canvassystem's) may manage that realm only. Keycloak's
// finer role checks (manage-clients, view-users, ...) are not imitated.
func (s *Server) admin(w http.ResponseWriter, r *http.Request, h func(http.ResponseWriter, *http.Request, *realm)) {
	h0 := r.Header.Get("Authorization")
	raw, ok := strings.CutPrefix(h0, "Bearer ")
	tok := s.tokens[raw]
	if !ok || tok == nil || s.now().UnixNano() >= tok.expires {
		if tok != nil {
			delete(s.tokens, raw)
		}
		errorBody(w, http.StatusUnauthorized, "HTTP 401 Unauthorized")
		return
	}
	rl := s.realms[r.PathValue("realm")]
	issuer := s.realms[tok.realm]
	u := issuer.users[tok.userID]
	if u == nil {
		errorBody(w, http.StatusUnauthorized, "HTTP 401 Unauthorized")
		return
	}
	if !(tok.realm == AdminRealm && u.admin) && (rl == nil || tok.realm != rl.name) {
		errorBody(w, http.StatusForbidden, "HTTP 403 Forbidden")
		return
	}
	if rl == nil {
		errorBody(w, http.StatusNotFound, "Realm not found.")
		return
	}
	h(w, r, rl)
}

// page applies Keycloak's first/max parameters.
func page[T any](r *http.Request, items []T) []T {
	first, err := strconv.Atoi(r.URL.Query().Get("first"))
	if err != nil || first < 0 {
		first = 0
	}
	if first > len(items) {
		first = len(items)
	}
	items = items[first:]
	if m, err := strconv.Atoi(r.URL.Query().Get("max")); err == nil && m >= 0 && m < len(items) {
		items = items[:m]
	}
	return items
}

func (s *Server) listClients(w http.ResponseWriter, r *http.Request, rl *realm) {
	q := r.URL.Query()
	clientID, search := q.Get("clientId"), q.Get("search") == "true"
	var out []map[string]any
	for _, c := range rl.sortedClients() {
		if clientID != "" {
			if search && !strings.Contains(strings.ToLower(c.clientID), strings.ToLower(clientID)) {
				continue
			}
			if !search && c.clientID != clientID {
				continue
			}
		}
		out = append(out, c.rep)
	}
	writeJSON(w, http.StatusOK, nonNil(page(r, out)))
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func decode(w http.ResponseWriter, r *http.Request, v any) bool {
	if err := json.NewDecoder(r.Body).Decode(v); err != nil {
		errorBody(w, http.StatusBadRequest, "unable to read contents from stream")
		return false
	}
	return true
}

func (s *Server) createClient(w http.ResponseWriter, r *http.Request, rl *realm) {
	var rep map[string]any
	if !decode(w, r, &rep) {
		return
	}
	s.requestClient, _ = rep["clientId"].(string)
	c, err := rl.addClient(rep)
	if errors.Is(err, errExists) {
		id, _ := rep["clientId"].(string)
		conflict(w, "Client "+id+" already exists")
		return
	}
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"errorMessage": err.Error()})
		return
	}
	w.Header().Set("Location", requestURL(r)+"/"+c.id)
	w.WriteHeader(http.StatusCreated)
}

func requestURL(r *http.Request) string {
	return "http://" + r.Host + r.URL.EscapedPath()
}

func (s *Server) client(w http.ResponseWriter, r *http.Request, rl *realm) *client {
	c := rl.clients[r.PathValue("id")]
	if c == nil {
		errorBody(w, http.StatusNotFound, "Could not find client")
		return nil
	}
	s.requestClient = c.clientID
	return c
}

func (s *Server) getClient(w http.ResponseWriter, r *http.Request, rl *realm) {
	if c := s.client(w, r, rl); c != nil {
		writeJSON(w, http.StatusOK, c.rep)
	}
}

func (s *Server) updateClient(w http.ResponseWriter, r *http.Request, rl *realm) {
	c := s.client(w, r, rl)
	if c == nil {
		return
	}
	var rep map[string]any
	if !decode(w, r, &rep) {
		return
	}
	if id, _ := rep["clientId"].(string); id != "" && id != c.clientID {
		if rl.clientByClientID(id) != nil {
			conflict(w, "Client "+id+" already exists")
			return
		}
		c.clientID = id
	}
	for k, v := range rep {
		if k == "attributes" {
			continue
		}
		c.rep[k] = v
	}
	// Keycloak merges attributes key by key (RepresentationToModel
	// .updateClient): a key absent from the PUT stays, an empty value
	// removes the key.
	if attrs, ok := rep["attributes"].(map[string]any); ok {
		cur, _ := c.rep["attributes"].(map[string]any)
		if cur == nil {
			cur = map[string]any{}
		}
		for k, v := range attrs {
			if sv, _ := v.(string); v == nil || strings.TrimSpace(sv) == "" {
				delete(cur, k)
				continue
			}
			cur[k] = v
		}
		c.rep["attributes"] = cur
	}
	c.rep["id"] = c.id
	if sec, _ := rep["secret"].(string); sec != "" && sec != "**********" {
		c.secret = sec
	}
	if !boolField(c.rep, "publicClient") {
		c.rep["secret"] = c.secret
	}
	rl.syncServiceAccount(c)
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) deleteClient(w http.ResponseWriter, r *http.Request, rl *realm) {
	if c := s.client(w, r, rl); c != nil {
		rl.deleteClient(c)
		w.WriteHeader(http.StatusNoContent)
	}
}

func (s *Server) listRoles(w http.ResponseWriter, r *http.Request, rl *realm) {
	c := s.client(w, r, rl)
	if c == nil {
		return
	}
	q := r.URL.Query()
	brief := q.Get("briefRepresentation") != "false"
	search := strings.ToLower(q.Get("search"))
	var out []map[string]any
	for _, ro := range c.sortedRoles() {
		if search != "" && !strings.Contains(strings.ToLower(ro.name), search) {
			continue
		}
		if brief {
			out = append(out, ro.brief())
		} else {
			out = append(out, ro.full())
		}
	}
	writeJSON(w, http.StatusOK, nonNil(page(r, out)))
}

func (s *Server) createRole(w http.ResponseWriter, r *http.Request, rl *realm) {
	c := s.client(w, r, rl)
	if c == nil {
		return
	}
	var rep struct {
		Name        string              `json:"name"`
		Description string              `json:"description"`
		Attributes  map[string][]string `json:"attributes"`
	}
	if !decode(w, r, &rep) {
		return
	}
	if rep.Name == "" {
		writeJSON(w, http.StatusBadRequest, map[string]string{"errorMessage": "Role name is missing"})
		return
	}
	if _, err := c.addRole(rep.Name, rep.Description, rep.Attributes); err != nil {
		conflict(w, "Role with name "+rep.Name+" already exists")
		return
	}
	w.Header().Set("Location", requestURL(r)+"/"+url.PathEscape(rep.Name))
	w.WriteHeader(http.StatusCreated)
}

func (s *Server) role(w http.ResponseWriter, r *http.Request, c *client) *role {
	ro := c.roles[r.PathValue("role")]
	if ro == nil {
		errorBody(w, http.StatusNotFound, "Could not find role")
	}
	return ro
}

func (s *Server) getRole(w http.ResponseWriter, r *http.Request, rl *realm) {
	if c := s.client(w, r, rl); c != nil {
		if ro := s.role(w, r, c); ro != nil {
			writeJSON(w, http.StatusOK, ro.full())
		}
	}
}

func (s *Server) deleteRole(w http.ResponseWriter, r *http.Request, rl *realm) {
	if c := s.client(w, r, rl); c != nil {
		if ro := s.role(w, r, c); ro != nil {
			rl.deleteRole(c, ro)
			w.WriteHeader(http.StatusNoContent)
		}
	}
}

func (s *Server) getRoleByID(w http.ResponseWriter, r *http.Request, rl *realm) {
	id := r.PathValue("roleid")
	for _, c := range rl.clients {
		for _, ro := range c.roles {
			if ro.id == id {
				writeJSON(w, http.StatusOK, ro.full())
				return
			}
		}
	}
	errorBody(w, http.StatusNotFound, "Could not find role with id")
}

func (s *Server) getSecret(w http.ResponseWriter, r *http.Request, rl *realm) {
	if c := s.client(w, r, rl); c != nil {
		writeJSON(w, http.StatusOK, map[string]any{"type": "secret", "value": c.secret})
	}
}

func (s *Server) regenerateSecret(w http.ResponseWriter, r *http.Request, rl *realm) {
	if c := s.client(w, r, rl); c != nil {
		c.secret = newSecret()
		c.rep["secret"] = c.secret
		writeJSON(w, http.StatusOK, map[string]any{"type": "secret", "value": c.secret})
	}
}

func (s *Server) serviceAccountUser(w http.ResponseWriter, r *http.Request, rl *realm) {
	c := s.client(w, r, rl)
	if c == nil {
		return
	}
	u := rl.users[c.serviceAccountUser]
	if !boolField(c.rep, "serviceAccountsEnabled") || u == nil {
		errorBody(w, http.StatusBadRequest, "Service account not enabled for the client '"+c.clientID+"'")
		return
	}
	writeJSON(w, http.StatusOK, u.rep)
}

func (s *Server) user(w http.ResponseWriter, r *http.Request, rl *realm) *user {
	u := rl.users[r.PathValue("user")]
	if u == nil {
		errorBody(w, http.StatusNotFound, "User not found")
		return nil
	}
	s.requestServiceAccountOf = u.saClientID
	return u
}

func (s *Server) listMappings(w http.ResponseWriter, r *http.Request, rl *realm) {
	u := s.user(w, r, rl)
	if u == nil {
		return
	}
	c := s.client(w, r, rl)
	if c == nil {
		return
	}
	var out []map[string]any
	for _, ro := range c.sortedRoles() {
		if u.clientRoles[c.id][ro.id] {
			out = append(out, ro.brief())
		}
	}
	writeJSON(w, http.StatusOK, nonNil(out))
}

// mappingRoles resolves a role-mapping body as Keycloak does: each role is
// found by name on the client and must carry that role's id.
func (s *Server) mappingRoles(w http.ResponseWriter, r *http.Request, c *client) ([]*role, bool) {
	var reps []struct {
		ID   string `json:"id"`
		Name string `json:"name"`
	}
	if !decode(w, r, &reps) {
		return nil, false
	}
	var out []*role
	for _, rep := range reps {
		ro := c.roles[rep.Name]
		if ro == nil || ro.id != rep.ID {
			errorBody(w, http.StatusNotFound, "Role not found")
			return nil, false
		}
		out = append(out, ro)
	}
	return out, true
}

func (s *Server) addMappings(w http.ResponseWriter, r *http.Request, rl *realm) {
	u := s.user(w, r, rl)
	if u == nil {
		return
	}
	c := s.client(w, r, rl)
	if c == nil {
		return
	}
	roles, ok := s.mappingRoles(w, r, c)
	if !ok {
		return
	}
	if u.clientRoles[c.id] == nil {
		u.clientRoles[c.id] = map[string]bool{}
	}
	for _, ro := range roles {
		u.clientRoles[c.id][ro.id] = true
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) deleteMappings(w http.ResponseWriter, r *http.Request, rl *realm) {
	u := s.user(w, r, rl)
	if u == nil {
		return
	}
	c := s.client(w, r, rl)
	if c == nil {
		return
	}
	roles, ok := s.mappingRoles(w, r, c)
	if !ok {
		return
	}
	for _, ro := range roles {
		delete(u.clientRoles[c.id], ro.id)
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) listUsers(w http.ResponseWriter, r *http.Request, rl *realm) {
	q := r.URL.Query()
	username := strings.ToLower(q.Get("username"))
	exact := q.Get("exact") == "true"
	var users []*user
	for _, u := range rl.users {
		// Keycloak hides service-account users from user searches.
		if u.saClientID != "" {
			continue
		}
		if username != "" && ((exact && u.username != username) || (!exact && !strings.Contains(u.username, username))) {
			continue
		}
		users = append(users, u)
	}
	sortUsers(users)
	var out []map[string]any
	for _, u := range page(r, users) {
		out = append(out, u.rep)
	}
	writeJSON(w, http.StatusOK, nonNil(out))
}

func sortUsers(users []*user) {
	for i := 1; i < len(users); i++ {
		for j := i; j > 0 && users[j].username < users[j-1].username; j-- {
			users[j], users[j-1] = users[j-1], users[j]
		}
	}
}

func (s *Server) createUser(w http.ResponseWriter, r *http.Request, rl *realm) {
	var rep map[string]any
	if !decode(w, r, &rep) {
		return
	}
	u, err := rl.addUser(rep, "", false)
	switch {
	case errors.Is(err, errEmailExists):
		conflict(w, "User exists with same email")
		return
	case errors.Is(err, errExists):
		conflict(w, "User exists with same username")
		return
	case err != nil:
		writeJSON(w, http.StatusBadRequest, map[string]string{"errorMessage": err.Error()})
		return
	}
	w.Header().Set("Location", requestURL(r)+"/"+u.id)
	w.WriteHeader(http.StatusCreated)
}

func (s *Server) getUser(w http.ResponseWriter, r *http.Request, rl *realm) {
	if u := s.user(w, r, rl); u != nil {
		writeJSON(w, http.StatusOK, u.rep)
	}
}

func (s *Server) deleteUser(w http.ResponseWriter, r *http.Request, rl *realm) {
	if u := s.user(w, r, rl); u != nil {
		delete(rl.users, u.id)
		w.WriteHeader(http.StatusNoContent)
	}
}

func (s *Server) resetPassword(w http.ResponseWriter, r *http.Request, rl *realm) {
	u := s.user(w, r, rl)
	if u == nil {
		return
	}
	var cred struct {
		Value string `json:"value"`
	}
	if !decode(w, r, &cred) {
		return
	}
	if cred.Value == "" {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "Missing password value"})
		return
	}
	u.password = cred.Value
	w.WriteHeader(http.StatusNoContent)
}
