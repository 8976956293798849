package keycloak

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

type realm struct {
	name    string
	clients map[string]*client // by id
	users   map[string]*user   // by id
}

type client struct {
	id       string
	clientID string
	secret   string
	// rep is the stored representation, returned as it was written (plus
	// the defaults Keycloak fills in), so a GET after a PUT gives back what
	// was PUT.
	rep   map[string]any
	roles map[string]*role // by name
	// serviceAccountUser is the id of the service-account user, when enabled.
	serviceAccountUser string
}

type role struct {
	id          string
	name        string
	description string
	attributes  map[string][]string
	containerID string
}

type user struct {
	id          string
	username    string
	email       string
	enabled     bool
	password    string
	admin       bool
	saClientID  string
	rep         map[string]any
	clientRoles map[string]map[string]bool // client id -> role ids
}

type token struct {
	realm   string
	userID  string
	expires int64 // unix nanoseconds
}

func (s *Server) addRealm(name string) *realm {
	r := &realm{name: name, clients: map[string]*client{}, users: map[string]*user{}}
	s.realms[name] = r
	return r
}

func (r *realm) clientByClientID(clientID string) *client {
	for _, c := range r.clients {
		if c.clientID == clientID {
			return c
		}
	}
	return nil
}

// sortedClients lists clients ordered by clientId, as Keycloak's JPA store
// does.
func (r *realm) sortedClients() []*client {
	out := make([]*client, 0, len(r.clients))
	for _, c := range r.clients {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].clientID < out[j].clientID })
	return out
}

func boolField(rep map[string]any, key string) bool {
	b, _ := rep[key].(bool)
	return b
}

// addClient stores a client representation with Keycloak's defaults.
func (r *realm) addClient(rep map[string]any) (*client, error) {
	clientID, _ := rep["clientId"].(string)
	if clientID == "" {
		return nil, fmt.Errorf("clientId is required")
	}
	if r.clientByClientID(clientID) != nil {
		return nil, errExists
	}
	rep = cloneMap(rep)
	id, _ := rep["id"].(string)
	if id == "" {
		id = newID()
	}
	if r.clients[id] != nil {
		return nil, errExists
	}
	rep["id"] = id
	setDefault(rep, "enabled", true)
	setDefault(rep, "protocol", "openid-connect")
	setDefault(rep, "publicClient", false)
	setDefault(rep, "bearerOnly", false)
	setDefault(rep, "serviceAccountsEnabled", false)
	setDefault(rep, "standardFlowEnabled", true)
	setDefault(rep, "clientAuthenticatorType", "client-secret")
	c := &client{id: id, clientID: clientID, rep: rep, roles: map[string]*role{}}
	if !boolField(rep, "publicClient") {
		// Keycloak keeps a secret given on creation and generates one
		// otherwise.
		c.secret, _ = rep["secret"].(string)
		if c.secret == "" || c.secret == "**********" {
			c.secret = newSecret()
		}
		rep["secret"] = c.secret
	} else {
		delete(rep, "secret")
	}
	r.clients[id] = c
	r.syncServiceAccount(c)
	return c, nil
}

// syncServiceAccount creates the service-account user of a client that has
// service accounts enabled, as Keycloak does on create and update.
func (r *realm) syncServiceAccount(c *client) {
	if !boolField(c.rep, "serviceAccountsEnabled") || c.serviceAccountUser != "" {
		return
	}
	for _, u := range r.users {
		if u.saClientID == c.clientID {
			c.serviceAccountUser = u.id
			return
		}
	}
	u, err := r.addUser(map[string]any{"username": "service-account-" + strings.ToLower(c.clientID), "enabled": true}, "", false)
	if err != nil {
		return
	}
	u.saClientID = c.clientID
	u.rep["serviceAccountClientId"] = c.clientID
	c.serviceAccountUser = u.id
}

func (r *realm) deleteClient(c *client) {
	delete(r.clients, c.id)
	if c.serviceAccountUser != "" {
		delete(r.users, c.serviceAccountUser)
	}
	for _, u := range r.users {
		delete(u.clientRoles, c.id)
	}
}

func (c *client) addRole(name, description string, attrs map[string][]string) (*role, error) {
	if c.roles[name] != nil {
		return nil, errExists
	}
	if attrs == nil {
		attrs = map[string][]string{}
	}
	ro := &role{id: newID(), name: name, description: description, attributes: attrs, containerID: c.id}
	c.roles[name] = ro
	return ro, nil
}

func (c *client) sortedRoles() []*role {
	out := make([]*role, 0, len(c.roles))
	for _, ro := range c.roles {
		out = append(out, ro)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

func (r *realm) deleteRole(c *client, ro *role) {
	delete(c.roles, ro.name)
	for _, u := range r.users {
		delete(u.clientRoles[c.id], ro.id)
	}
}

func (r *realm) userByName(username string) *user {
	for _, u := range r.users {
		if u.username == username {
			return u
		}
	}
	return nil
}

func (r *realm) addUser(rep map[string]any, password string, admin bool) (*user, error) {
	username, _ := rep["username"].(string)
	username = strings.ToLower(username) // Keycloak stores usernames lower-cased
	if username == "" {
		return nil, fmt.Errorf("username is required")
	}
	if r.userByName(username) != nil {
		return nil, errExists
	}
	email, _ := rep["email"].(string)
	if email != "" {
		for _, u := range r.users {
			if strings.EqualFold(u.email, email) {
				return nil, errEmailExists
			}
		}
	}
	rep = cloneMap(rep)
	delete(rep, "credentials")
	id, _ := rep["id"].(string)
	if id == "" {
		id = newID()
	}
	rep["id"] = id
	rep["username"] = username
	setDefault(rep, "enabled", false)
	setDefault(rep, "emailVerified", false)
	u := &user{id: id, username: username, email: email, enabled: boolField(rep, "enabled"), password: password, admin: admin, rep: rep, clientRoles: map[string]map[string]bool{}}
	r.users[id] = u
	return u, nil
}

var errEmailExists = fmt.Errorf("email %w", errExists)

func (ro *role) brief() map[string]any {
	m := map[string]any{"id": ro.id, "name": ro.name, "composite": false, "clientRole": true, "containerId": ro.containerID}
	if ro.description != "" {
		m["description"] = ro.description
	}
	return m
}

func (ro *role) full() map[string]any {
	m := ro.brief()
	m["attributes"] = ro.attributes
	return m
}

func setDefault(m map[string]any, k string, v any) {
	if _, ok := m[k]; !ok {
		m[k] = v
	}
}

// cloneMap deep-copies a JSON value so callers never share state with the
// double.
func cloneMap(m map[string]any) map[string]any {
	b, err := json.Marshal(m)
	if err != nil {
		panic(err) // decoded JSON always re-encodes
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		panic(err)
	}
	return out
}
