// Package kongadmin is an HTTP double of the Kong Gateway Admin API, for
// tests: it imitates open-source Kong 3.9.1 with a postgres database and the
// traditional_compatible router, for the subset odaflow's kong-admin gateway
// and the allow-listed go-kong tests use (hack/go-kong-contract.sh):
//
//   - GET / and GET /status;
//   - services, routes, consumers and plugins: POST and GET on the
//     collection, GET/PUT/PATCH/DELETE by id or endpoint key (name,
//     username, instance_name), the nested collections
//     /services/{s}/routes, /{services,routes,consumers}/{x}/plugins[/{p}]
//     and GET /routes/{r}/service;
//   - list paging {data, next, offset} with size (1-1000, default 100) and
//     an opaque offset, and tags filtering (tags=a,b: all; tags=a/b: any);
//   - Kong's error bodies {code, name, message, fields}: 400 schema
//     violation (2), 400 primary key (3) and foreign key (4) violations, 409
//     unique constraint violation (5), 400 invalid size (9), invalid
//     options (11) and unresolved foreign keys (13); 404 {"message":"Not
//     found"}; DELETE of a missing entity answers 204 like Kong;
//   - GET /schemas/plugins/{name}, POST /schemas/plugins/validate, GET /tags.
//
// It validates against the entity schemas of schema.go (types, required
// fields, defaults, Kong's name/tag/path/host rules, route match rules,
// plugin configs of key-auth, basic-auth, jwt, rate-limiting, cors and
// prometheus); other plugins are "not enabled". Not imitated: workspaces,
// RBAC, upstreams/targets/certificates, the expressions router, proxying.
//
// Entities are listed in creation order (Kong pages by primary key); every
// request is logged (Requests) and SetFault makes it answer 503 or drop
// connections.
package kongadmin

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
)

// Version is the Kong version the double reports and imitates.
const Version = "3.9.1"

// Request is one logged request.
type Request struct {
	Method string
	Path   string
	Query  string
	Body   []byte
}

// Fault makes the double misbehave, for fault tests.
type Fault int

const (
	// FaultNone serves normally.
	FaultNone Fault = iota
	// FaultUnavailable answers every request 503.
	FaultUnavailable
	// FaultDrop closes every connection without an answer.
	FaultDrop
)

type entity struct {
	seq  int64
	data map[string]any
}

// Server is the double; it is an http.Handler.
type Server struct {
	// Token, when set, must arrive in the Kong-Admin-Token header (as
	// Kong Enterprise's RBAC asks); a wrong one gets 401.
	Token string

	mu     sync.Mutex
	tables map[string]map[string]*entity // table → id → entity
	seq    int64
	log    []Request
	fault  Fault
}

// New returns an empty double.
func New() *Server {
	s := &Server{}
	s.Reset()
	return s
}

var schemas = map[string]*schema{
	"services": servicesSchema, "routes": routesSchema,
	"consumers": consumersSchema, "plugins": pluginsSchema,
}

// Reset deletes every entity and clears the log and the fault.
func (s *Server) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tables = map[string]map[string]*entity{}
	for t := range schemas {
		s.tables[t] = map[string]*entity{}
	}
	s.log = nil
	s.fault = FaultNone
}

// SetFault switches a fault on (or off with FaultNone).
func (s *Server) SetFault(f Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fault = f
}

// Requests returns a copy of the request log.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.log...)
}

// ClearRequests empties the request log.
func (s *Server) ClearRequests() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.log = nil
}

// Count returns how many entities a table (services, routes, consumers,
// plugins) holds.
func (s *Server) Count(table string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.tables[table])
}

// apiError is a Kong error answer.
type apiError struct {
	status int
	body   map[string]any
}

func kongErr(status, code int, name, msg string, fields any) *apiError {
	b := map[string]any{"code": code, "name": name, "message": msg}
	if fields != nil {
		b["fields"] = fields
	}
	return &apiError{status: status, body: b}
}

var errNotFound = &apiError{status: http.StatusNotFound, body: map[string]any{"message": "Not found"}}

func schemaViolation(errs fieldErrors) *apiError {
	return kongErr(http.StatusBadRequest, 2, "schema violation", errs.message(), errs)
}

// ServeHTTP answers one Admin API request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	s.log = append(s.log, Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Body: body})
	fault := s.fault
	s.mu.Unlock()

	switch fault {
	case FaultUnavailable:
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{"message": "Service Unavailable"})
		return
	case FaultDrop:
		if hj, ok := w.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				_ = conn.Close()
				return
			}
		}
		panic(http.ErrAbortHandler) // closes the connection without an answer
	case FaultNone:
	}
	if s.Token != "" && r.Header.Get("Kong-Admin-Token") != s.Token {
		writeJSON(w, http.StatusUnauthorized, map[string]any{"message": "Invalid credentials. Token or User credentials required"})
		return
	}
	status, out, aerr := s.route(r, body)
	if aerr != nil {
		writeJSON(w, aerr.status, aerr.body)
		return
	}
	if status == http.StatusNoContent {
		w.WriteHeader(status)
		return
	}
	writeJSON(w, status, out)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Server", "kong/"+Version)
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// nested lists the child collections reachable under a parent.
var nested = map[string]map[string]string{ // parent table → child table → child's foreign field
	"services":  {"routes": "service", "plugins": "service"},
	"routes":    {"plugins": "route"},
	"consumers": {"plugins": "consumer"},
}

func (s *Server) route(r *http.Request, body []byte) (int, any, *apiError) {
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	for i, p := range parts {
		if u, err := url.PathUnescape(p); err == nil {
			parts[i] = u
		}
	}
	if len(parts) == 1 && parts[0] == "" {
		parts = nil
	}
	m := r.Method
	s.mu.Lock()
	defer s.mu.Unlock()

	switch {
	case len(parts) == 0:
		if m != http.MethodGet {
			return methodNotAllowed()
		}
		return http.StatusOK, s.root(), nil
	case len(parts) == 1 && parts[0] == "status":
		return http.StatusOK, map[string]any{
			"database": map[string]any{"reachable": true},
			"server":   map[string]any{"connections_accepted": 1, "connections_active": 1, "connections_handled": 1, "total_requests": len(s.log)},
			"memory":   map[string]any{"workers_lua_vms": []any{}, "lua_shared_dicts": map[string]any{}},
		}, nil
	case len(parts) == 1 && parts[0] == "tags":
		return s.listTags(r)
	case len(parts) == 3 && parts[0] == "schemas" && parts[1] == "plugins" && parts[2] == "validate":
		if m != http.MethodPost {
			return methodNotAllowed()
		}
		in, aerr := decodeBody(body)
		if aerr != nil {
			return 0, nil, aerr
		}
		if _, errs := pluginsSchema.normalize(withoutAuto(in)); len(errs) > 0 {
			return 0, nil, schemaViolation(errs)
		}
		return http.StatusOK, map[string]any{"message": "schema validation successful"}, nil
	case len(parts) == 3 && parts[0] == "schemas" && parts[1] == "plugins":
		cfg, ok := pluginConfigs[parts[2]]
		if !ok {
			return 0, nil, &apiError{status: http.StatusNotFound, body: map[string]any{"message": "No plugin named '" + parts[2] + "'"}}
		}
		return http.StatusOK, schemaJSON([]field{{name: "config", typ: tRecord, required: true, fields: cfg}}), nil
	}

	table := parts[0]
	if schemas[table] == nil {
		return 0, nil, errNotFound
	}
	switch len(parts) {
	case 1:
		switch m {
		case http.MethodGet:
			return s.list(table, r.URL.Query(), "", "")
		case http.MethodPost:
			return s.create(table, body, "", "")
		}
		return methodNotAllowed()
	case 2:
		return s.one(table, parts[1], m, body, "", "")
	}
	parent := s.lookup(table, parts[1])
	child := parts[2]
	if len(parts) == 3 && table == "routes" && child == "service" && m == http.MethodGet {
		if parent == nil {
			return 0, nil, errNotFound
		}
		ref, _ := parent.data["service"].(map[string]any)
		if ref == nil {
			return 0, nil, errNotFound
		}
		svc := s.tables["services"][fmt.Sprint(ref["id"])]
		if svc == nil {
			return 0, nil, errNotFound
		}
		return http.StatusOK, svc.data, nil
	}
	fk, ok := nested[table][child]
	if !ok || len(parts) > 4 {
		return 0, nil, errNotFound
	}
	if parent == nil {
		return 0, nil, errNotFound
	}
	pid := parent.data["id"].(string)
	if len(parts) == 3 {
		switch m {
		case http.MethodGet:
			return s.list(child, r.URL.Query(), fk, pid)
		case http.MethodPost:
			return s.create(child, body, fk, pid)
		}
		return methodNotAllowed()
	}
	return s.one(child, parts[3], m, body, fk, pid)
}

func methodNotAllowed() (int, any, *apiError) {
	return 0, nil, &apiError{status: http.StatusMethodNotAllowed, body: map[string]any{"message": "Method not allowed"}}
}

func (s *Server) root() map[string]any {
	avail := map[string]any{}
	for _, n := range pluginNames() {
		avail[n] = map[string]any{"version": Version, "priority": 1000}
	}
	var enabled []any
	seen := map[string]bool{}
	for _, e := range s.tables["plugins"] {
		if n := e.data["name"].(string); !seen[n] {
			seen[n] = true
			enabled = append(enabled, n)
		}
	}
	return map[string]any{
		"version":  Version,
		"edition":  "community",
		"tagline":  "Welcome to kong",
		"hostname": "kongadmin-double",
		"node_id":  "4d3f2a5e-6d1c-4a9b-8d6e-1f2a3b4c5d6e",
		"configuration": map[string]any{
			"database":      "postgres",
			"router_flavor": "traditional_compatible",
			"admin_listen":  []any{"127.0.0.1:8001"},
			"plugins":       []any{"bundled"},
		},
		"plugins": map[string]any{"available_on_server": avail, "enabled_in_cluster": enabled},
	}
}

func decodeBody(body []byte) (map[string]any, *apiError) {
	in := map[string]any{}
	if len(bytes.TrimSpace(body)) == 0 {
		return in, nil
	}
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, &apiError{status: http.StatusBadRequest, body: map[string]any{"message": "Cannot parse JSON body"}}
	}
	return in, nil
}

func withoutAuto(in map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range in {
		if k != "created_at" && k != "updated_at" {
			out[k] = v
		}
	}
	return out
}

// lookup finds an entity by id or endpoint key.
func (s *Server) lookup(table, key string) *entity {
	if e := s.tables[table][key]; e != nil {
		return e
	}
	if _, err := uuid.Parse(key); err == nil && len(key) == 36 {
		return nil // a UUID is only ever an id
	}
	ek := schemas[table].endpointKey
	for _, e := range s.tables[table] {
		if e.data[ek] == key {
			return e
		}
	}
	return nil
}

func (s *Server) one(table, key, method string, body []byte, fk, pid string) (int, any, *apiError) {
	e := s.lookup(table, key)
	if e != nil && fk != "" && !refersTo(e.data[fk], pid) {
		e = nil // not a child of this parent
	}
	switch method {
	case http.MethodGet:
		if e == nil {
			return 0, nil, errNotFound
		}
		return http.StatusOK, e.data, nil
	case http.MethodDelete:
		if e == nil {
			return http.StatusNoContent, nil, nil
		}
		if aerr := s.delete(table, e); aerr != nil {
			return 0, nil, aerr
		}
		return http.StatusNoContent, nil, nil
	case http.MethodPatch:
		if e == nil {
			return 0, nil, errNotFound
		}
		in, aerr := decodeBody(body)
		if aerr != nil {
			return 0, nil, aerr
		}
		merged := deepCopy(e.data).(map[string]any)
		for k, v := range withoutAuto(in) {
			if k == "id" {
				continue
			}
			if old, ok := merged[k].(map[string]any); ok && k == "config" {
				if nv, ok := v.(map[string]any); ok {
					for ck, cv := range nv {
						old[ck] = cv
					}
					continue
				}
			}
			merged[k] = v
		}
		if fk != "" {
			merged[fk] = map[string]any{"id": pid}
		}
		return s.save(table, merged, e, http.StatusOK)
	case http.MethodPut:
		in, aerr := decodeBody(body)
		if aerr != nil {
			return 0, nil, aerr
		}
		in = withoutAuto(in)
		if _, err := uuid.Parse(key); err == nil && len(key) == 36 {
			in["id"] = key
		} else {
			// Upsert by endpoint key: the URL names the entity.
			in[schemas[table].endpointKey] = key
			delete(in, "id")
			if e != nil {
				in["id"] = e.data["id"]
			}
		}
		if fk != "" {
			in[fk] = map[string]any{"id": pid}
		}
		return s.save(table, in, e, http.StatusOK)
	}
	return methodNotAllowed()
}

func refersTo(ref any, id string) bool {
	m, _ := ref.(map[string]any)
	return m != nil && m["id"] == id
}

func (s *Server) create(table string, body []byte, fk, pid string) (int, any, *apiError) {
	in, aerr := decodeBody(body)
	if aerr != nil {
		return 0, nil, aerr
	}
	in = withoutAuto(in)
	if fk != "" {
		in[fk] = map[string]any{"id": pid}
	}
	if id, ok := in["id"].(string); ok && s.tables[table][id] != nil {
		return 0, nil, kongErr(http.StatusBadRequest, 3, "primary key violation",
			fmt.Sprintf("primary key violation on key '{id=%q}'", id), map[string]any{"id": id})
	}
	return s.save(table, in, nil, http.StatusCreated)
}

// save validates in and stores it, replacing prev when set.
func (s *Server) save(table string, in map[string]any, prev *entity, status int) (int, any, *apiError) {
	sch := schemas[table]
	out, errs := sch.normalize(in)
	if len(errs) > 0 {
		return 0, nil, schemaViolation(errs)
	}
	if aerr := s.resolveForeign(sch, out); aerr != nil {
		return 0, nil, aerr
	}
	id, _ := out["id"].(string)
	if id == "" {
		id = uuid.NewString()
		out["id"] = id
	}
	if prev == nil {
		prev = s.tables[table][id]
	}
	if aerr := s.checkUnique(sch, out, id); aerr != nil {
		return 0, nil, aerr
	}
	now := float64(time.Now().Unix())
	out["updated_at"] = now
	if prev != nil {
		out["created_at"] = prev.data["created_at"]
		if prev.data["id"] != id {
			// Replaced under a new id (PUT by id with another entity's name
			// is refused by checkUnique, so this is an id change by name).
			delete(s.tables[table], prev.data["id"].(string))
		}
		s.tables[table][id] = &entity{seq: prev.seq, data: out}
		return status, out, nil
	}
	out["created_at"] = now
	s.seq++
	s.tables[table][id] = &entity{seq: s.seq, data: out}
	return status, out, nil
}

// resolveForeign turns references by endpoint key into ids and checks that
// referenced entities exist.
func (s *Server) resolveForeign(sch *schema, out map[string]any) *apiError {
	for _, f := range sch.fields {
		if f.typ != tForeign {
			continue
		}
		ref, _ := out[f.name].(map[string]any)
		if ref == nil {
			continue
		}
		target := s.tables[f.ref]
		if target == nil {
			return kongErr(http.StatusBadRequest, 4, "foreign key violation",
				fmt.Sprintf("the foreign key '%s' does not reference an existing '%s' entity.", pretty(ref), f.ref), map[string]any{f.name: ref})
		}
		if id, ok := ref["id"].(string); ok {
			if target[id] == nil {
				return kongErr(http.StatusBadRequest, 4, "foreign key violation",
					fmt.Sprintf("the foreign key '%s' does not reference an existing '%s' entity.", pretty(ref), f.ref), map[string]any{f.name: ref})
			}
			continue
		}
		ek := schemas[f.ref].endpointKey
		key, _ := ref[ek].(string)
		var found *entity
		if key != "" {
			found = s.lookup(f.ref, key)
		}
		if found == nil {
			msg := fmt.Sprintf("the foreign key cannot be resolved with '{%s=%q}' for an existing '%s' entity", ek, key, f.ref)
			return kongErr(http.StatusBadRequest, 13, "foreign keys unresolved",
				fmt.Sprintf("foreign key unresolved (%s.%s: %s)", f.name, ek, msg), map[string]any{f.name: map[string]any{ek: msg}})
		}
		out[f.name] = map[string]any{"id": found.data["id"]}
	}
	return nil
}

func pretty(m map[string]any) string {
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s=%q", k, fmt.Sprint(m[k])))
	}
	return "{" + strings.Join(parts, ",") + "}"
}

func (s *Server) checkUnique(sch *schema, out map[string]any, id string) *apiError {
	for _, f := range sch.fields {
		if !f.unique || out[f.name] == nil {
			continue
		}
		for oid, e := range s.tables[sch.table] {
			if oid != id && e.data[f.name] == out[f.name] {
				return kongErr(http.StatusConflict, 5, "unique constraint violation",
					fmt.Sprintf("UNIQUE violation detected on '{%s=%q}'", f.name, fmt.Sprint(out[f.name])),
					map[string]any{f.name: out[f.name]})
			}
		}
	}
	if sch == pluginsSchema {
		// cache_key: one plugin of a kind per route/service/consumer scope.
		key := func(d map[string]any) string {
			return fmt.Sprint(d["name"], refID(d["route"]), refID(d["service"]), refID(d["consumer"]))
		}
		k := key(out)
		for oid, e := range s.tables["plugins"] {
			if oid != id && key(e.data) == k {
				fields := map[string]any{"name": out["name"], "route": out["route"], "service": out["service"], "consumer": out["consumer"]}
				return kongErr(http.StatusConflict, 5, "unique constraint violation",
					fmt.Sprintf("UNIQUE violation detected on '{consumer=%s,name=%q,route=%s,service=%s}'",
						refStr(out["consumer"]), out["name"], refStr(out["route"]), refStr(out["service"])), fields)
			}
		}
	}
	return nil
}

func refID(v any) string {
	m, _ := v.(map[string]any)
	if m == nil {
		return "null"
	}
	return fmt.Sprint(m["id"])
}

func refStr(v any) string {
	m, _ := v.(map[string]any)
	if m == nil {
		return "null"
	}
	return pretty(m)
}

// delete removes e: plugins go with their route, service or consumer
// (on_delete cascade); a service with routes is refused (Kong's
// restrict).
func (s *Server) delete(table string, e *entity) *apiError {
	id := e.data["id"].(string)
	if table == "services" {
		for _, r := range s.tables["routes"] {
			if refersTo(r.data["service"], id) {
				return kongErr(http.StatusBadRequest, 4, "foreign key violation",
					"an existing 'routes' entity references this 'services' entity", map[string]any{"@referenced_by": "routes"})
			}
		}
	}
	if fk := map[string]string{"services": "service", "routes": "route", "consumers": "consumer"}[table]; fk != "" {
		for pid, p := range s.tables["plugins"] {
			if refersTo(p.data[fk], id) {
				delete(s.tables["plugins"], pid)
			}
		}
	}
	delete(s.tables[table], id)
	return nil
}

// offset is the opaque paging token: the position of the page's last entity.
func encodeOffset(seq int64) string {
	b, _ := json.Marshal([]int64{seq})
	return base64.StdEncoding.EncodeToString(b)
}

func decodeOffset(s string) (int64, bool) {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return 0, false
	}
	var v []int64
	if json.Unmarshal(b, &v) != nil || len(v) != 1 {
		return 0, false
	}
	return v[0], true
}

// tagFilter parses ?tags=: "a,b" needs all, "a/b" any; Kong refuses mixing
// both and more than five tags.
func tagFilter(q string) (func([]any) bool, *apiError) {
	if q == "" {
		return func([]any) bool { return true }, nil
	}
	invalid := func(msg string) *apiError {
		return kongErr(http.StatusBadRequest, 11, "invalid options", "invalid option (tags: "+msg+")", map[string]any{"tags": msg})
	}
	and, or := strings.Contains(q, ","), strings.Contains(q, "/")
	if and && or {
		return nil, invalid("invalid filter syntax")
	}
	sep := ","
	if or {
		sep = "/"
	}
	want := strings.Split(q, sep)
	if len(want) > 5 {
		return nil, invalid("cannot query more than 5 tags")
	}
	for _, t := range want {
		if t == "" || validateTag(t) != "" {
			return nil, invalid("invalid filter syntax")
		}
	}
	return func(tags []any) bool {
		have := map[string]bool{}
		for _, t := range tags {
			have[fmt.Sprint(t)] = true
		}
		n := 0
		for _, t := range want {
			if have[t] {
				n++
			}
		}
		if or {
			return n > 0
		}
		return n == len(want)
	}, nil
}

func pageParams(q url.Values) (int, int64, *apiError) {
	size := 100
	if v := q.Get("size"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			return 0, 0, kongErr(http.StatusBadRequest, 9, "invalid size", "size must be an integer between 1 and 1000", nil)
		}
		size = n
	}
	var after int64
	if v := q.Get("offset"); v != "" {
		seq, ok := decodeOffset(v)
		if !ok {
			return 0, 0, kongErr(http.StatusBadRequest, 7, "invalid offset", fmt.Sprintf("'%s' is not a valid offset: bad base64 encoding", v), nil)
		}
		after = seq
	}
	return size, after, nil
}

func (s *Server) list(table string, q url.Values, fk, pid string) (int, any, *apiError) {
	size, after, aerr := pageParams(q)
	if aerr != nil {
		return 0, nil, aerr
	}
	match, aerr := tagFilter(q.Get("tags"))
	if aerr != nil {
		return 0, nil, aerr
	}
	var rows []*entity
	for _, e := range s.tables[table] {
		if fk != "" && !refersTo(e.data[fk], pid) {
			continue
		}
		if table == "consumers" && q.Has("custom_id") && e.data["custom_id"] != q.Get("custom_id") {
			continue
		}
		tags, _ := e.data["tags"].([]any)
		if !match(tags) {
			continue
		}
		rows = append(rows, e)
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].seq < rows[j].seq })
	data := []any{}
	var last int64
	more := false
	for _, e := range rows {
		if e.seq <= after {
			continue
		}
		if len(data) == size {
			more = true
			break
		}
		data = append(data, e.data)
		last = e.seq
	}
	out := map[string]any{"data": data, "next": nil}
	if more {
		off := encodeOffset(last)
		next := url.Values{"offset": {off}}
		if q.Get("size") != "" {
			next.Set("size", q.Get("size"))
		}
		if q.Get("tags") != "" {
			next.Set("tags", q.Get("tags"))
		}
		out["offset"] = off
		out["next"] = "/" + table + "?" + next.Encode()
	}
	return http.StatusOK, out, nil
}

func (s *Server) listTags(r *http.Request) (int, any, *apiError) {
	if r.Method != http.MethodGet {
		return methodNotAllowed()
	}
	var data []any
	tables := []string{"consumers", "plugins", "routes", "services"}
	for _, t := range tables {
		var rows []*entity
		for _, e := range s.tables[t] {
			rows = append(rows, e)
		}
		sort.Slice(rows, func(i, j int) bool { return rows[i].seq < rows[j].seq })
		for _, e := range rows {
			tags, _ := e.data["tags"].([]any)
			for _, tag := range tags {
				data = append(data, map[string]any{"entity_name": t, "entity_id": e.data["id"], "tag": tag})
			}
		}
	}
	if data == nil {
		data = []any{}
	}
	return http.StatusOK, map[string]any{"data": data, "next": nil}, nil
}
