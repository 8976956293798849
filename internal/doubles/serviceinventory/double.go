// Package serviceinventory is an HTTP double of a TMF638 Service Inventory
// (v4), the subset the Canvas Info service offers and odaflow calls:
// POST /service, GET /service (filters on any attribute, including
// serviceCharacteristic.value), GET/PATCH/DELETE /service/{id}. Errors use
// the TMF630 error body {code, reason, message, status}. It keeps a log of
// the requests it served and can be switched off (503) to test outages.
package serviceinventory

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// Request is one request the double served.
type Request struct {
	Method, Path, Query string
	Body                map[string]any
	Status              int
}

// Double is the in-memory inventory.
type Double struct {
	// BasePath is where the API is served, e.g.
	// "/tmf-api/serviceInventoryManagement/v4".
	BasePath string

	mu       sync.Mutex
	services map[string]map[string]any
	nextID   int
	log      []Request
	down     bool
	// unreachable drops every connection unanswered.
	unreachable bool
}

// New returns an empty inventory served under basePath.
func New(basePath string) *Double {
	return &Double{BasePath: strings.TrimSuffix(basePath, "/"), services: map[string]map[string]any{}}
}

// SetDown makes every request answer 503 (true) or be served again (false).
func (d *Double) SetDown(down bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.down = down
}

// SetUnreachable makes every request go unanswered, its connection
// dropped (true), as from an inventory that is not there, or be served
// again (false). The request is logged with Status 0.
func (d *Double) SetUnreachable(unreachable bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.unreachable = unreachable
}

// Requests returns the requests served so far.
func (d *Double) Requests() []Request {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]Request(nil), d.log...)
}

// Services returns a copy of the stored services, by id.
func (d *Double) Services() map[string]map[string]any {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := map[string]map[string]any{}
	for id, s := range d.services {
		out[id] = clone(s)
	}
	return out
}

// Put stores a service as is (test set-up, e.g. a duplicate record).
func (d *Double) Put(s map[string]any) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.store(clone(s))
}

func (d *Double) store(s map[string]any) string {
	d.nextID++
	id := fmt.Sprintf("svc-%06d", d.nextID)
	s["id"] = id
	s["href"] = d.BasePath + "/service/" + id
	d.services[id] = s
	return id
}

func (d *Double) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body map[string]any
	if r.Body != nil && (r.Method == http.MethodPost || r.Method == http.MethodPatch) {
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			d.respond(w, r, nil, http.StatusBadRequest, tmfError("400", "Bad Request", "body is not a JSON object: "+err.Error()))
			return
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.unreachable {
		d.log = append(d.log, Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Body: body})
		// net/http closes the connection without a response.
		panic(http.ErrAbortHandler)
	}
	if d.down {
		d.respond(w, r, body, http.StatusServiceUnavailable, tmfError("503", "Service Unavailable", "the inventory is down"))
		return
	}
	rest, ok := strings.CutPrefix(r.URL.Path, d.BasePath+"/service")
	if !ok {
		d.respond(w, r, body, http.StatusNotFound, tmfError("404", "Not Found", "no resource at "+r.URL.Path))
		return
	}
	id := strings.TrimPrefix(rest, "/")
	switch {
	case id == "" && r.Method == http.MethodPost:
		if msg := validate(body, true); msg != "" {
			d.respond(w, r, body, http.StatusBadRequest, tmfError("400", "Bad Request", msg))
			return
		}
		s := clone(body)
		d.store(s)
		w.Header().Set("Location", s["href"].(string))
		d.respond(w, r, body, http.StatusCreated, s)
	case id == "" && r.Method == http.MethodGet:
		d.respond(w, r, body, http.StatusOK, d.list(r))
	case id != "" && r.Method == http.MethodGet:
		if s, ok := d.services[id]; ok {
			d.respond(w, r, body, http.StatusOK, s)
			return
		}
		d.respond(w, r, body, http.StatusNotFound, tmfError("404", "Not Found", "no service "+id))
	case id != "" && r.Method == http.MethodPatch:
		s, ok := d.services[id]
		if !ok {
			d.respond(w, r, body, http.StatusNotFound, tmfError("404", "Not Found", "no service "+id))
			return
		}
		if ct := r.Header.Get("Content-Type"); ct != "" && !strings.HasPrefix(ct, "application/json") && !strings.HasPrefix(ct, "application/merge-patch+json") {
			d.respond(w, r, body, http.StatusUnsupportedMediaType, tmfError("415", "Unsupported Media Type", "use application/merge-patch+json"))
			return
		}
		if _, has := body["id"]; has {
			d.respond(w, r, body, http.StatusBadRequest, tmfError("400", "Bad Request", "id cannot be patched"))
			return
		}
		if msg := validate(body, false); msg != "" {
			d.respond(w, r, body, http.StatusBadRequest, tmfError("400", "Bad Request", msg))
			return
		}
		for k, v := range body { // JSON merge patch: arrays are replaced whole
			if v == nil {
				delete(s, k)
			} else {
				s[k] = v
			}
		}
		d.respond(w, r, body, http.StatusOK, s)
	case id != "" && r.Method == http.MethodDelete:
		if _, ok := d.services[id]; !ok {
			d.respond(w, r, body, http.StatusNotFound, tmfError("404", "Not Found", "no service "+id))
			return
		}
		delete(d.services, id)
		d.respond(w, r, body, http.StatusNoContent, nil)
	default:
		d.respond(w, r, body, http.StatusMethodNotAllowed, tmfError("405", "Method Not Allowed", r.Method+" "+r.URL.Path))
	}
}

// list applies the TMF630 attribute filters: each query parameter other than
// fields/offset/limit must equal the attribute (dotted paths descend into
// objects and match any element of an array).
func (d *Double) list(r *http.Request) []any {
	ids := make([]string, 0, len(d.services))
	for id := range d.services {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	q := r.URL.Query()
	offset, _ := strconv.Atoi(q.Get("offset"))
	limit, err := strconv.Atoi(q.Get("limit"))
	if err != nil || limit <= 0 {
		limit = 1 << 30
	}
	out := []any{}
	matched := 0
	for _, id := range ids {
		s := d.services[id]
		ok := true
		for k, vs := range q {
			if k == "fields" || k == "offset" || k == "limit" {
				continue
			}
			if !hasValue(s, strings.Split(k, "."), vs[0]) {
				ok = false
				break
			}
		}
		if !ok {
			continue
		}
		if matched >= offset && len(out) < limit {
			out = append(out, s)
		}
		matched++
	}
	return out
}

func hasValue(v any, path []string, want string) bool {
	switch t := v.(type) {
	case []any:
		for _, e := range t {
			if hasValue(e, path, want) {
				return true
			}
		}
		return false
	case map[string]any:
		if len(path) == 0 {
			return false
		}
		return hasValue(t[path[0]], path[1:], want)
	case string:
		return len(path) == 0 && t == want
	case nil:
		return false
	default:
		return len(path) == 0 && fmt.Sprint(t) == want
	}
}

// validate checks what TMF638 requires of a Service: on create a
// serviceCharacteristic list of {name, value} and a known state.
func validate(body map[string]any, create bool) string {
	if state, ok := body["state"]; ok || create {
		switch state {
		case "feasibilityChecked", "designed", "reserved", "inactive", "active", "terminated":
		default:
			return fmt.Sprintf("state %v is not a ServiceStateType", state)
		}
	}
	if chars, ok := body["serviceCharacteristic"]; ok {
		list, isList := chars.([]any)
		if !isList {
			return "serviceCharacteristic must be an array"
		}
		for i, c := range list {
			m, _ := c.(map[string]any)
			if n, _ := m["name"].(string); n == "" {
				return fmt.Sprintf("serviceCharacteristic[%d].name is required", i)
			}
			if _, ok := m["value"]; !ok {
				return fmt.Sprintf("serviceCharacteristic[%d].value is required", i)
			}
		}
	}
	return ""
}

func tmfError(code, reason, message string) map[string]any {
	status, _ := strconv.Atoi(code)
	return map[string]any{"code": code, "reason": reason, "message": message, "status": strconv.Itoa(status), "@type": "Error"}
}

func (d *Double) respond(w http.ResponseWriter, r *http.Request, body map[string]any, status int, out any) {
	d.log = append(d.log, Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Body: body, Status: status})
	if out == nil {
		w.WriteHeader(status)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(out)
}

func clone(m map[string]any) map[string]any {
	b, _ := json.Marshal(m)
	var out map[string]any
	_ = json.Unmarshal(b, &out)
	return out
}
