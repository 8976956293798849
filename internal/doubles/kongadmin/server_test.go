package kongadmin

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
)

// call sends one request to the double and decodes the answer.
func call(t *testing.T, s *Server, method, path string, body any) (int, map[string]any) {
	t.Helper()
	var b []byte
	if body != nil {
		b, _ = json.Marshal(body)
	}
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, httptest.NewRequest(method, path, bytes.NewReader(b)))
	out := map[string]any{}
	if rec.Body.Len() > 0 {
		if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
			t.Fatalf("%s %s: not JSON: %s", method, path, rec.Body)
		}
	}
	return rec.Code, out
}

func TestKongRules(t *testing.T) {
	s := New()
	if code, svc := call(t, s, "PUT", "/services/svc", map[string]any{"host": "example.com"}); code != 200 || svc["name"] != "svc" || svc["port"] != 80.0 || svc["path"] != nil {
		t.Fatalf("PUT service: %d %v", code, svc)
	}
	for _, c := range []struct {
		name, method, path string
		body               any
		status             int
		code               float64
		message            string
	}{
		{"route to a service by name resolves it", "POST", "/routes", map[string]any{"name": "r", "paths": []string{"/a"}, "service": map[string]any{"name": "svc"}}, 201, 0, ""},
		{"route to a missing service name", "POST", "/routes", map[string]any{"paths": []string{"/b"}, "service": map[string]any{"name": "nope"}}, 400, 13,
			"foreign key unresolved (service.name: the foreign key cannot be resolved with '{name=\"nope\"}' for an existing 'services' entity)"},
		{"route without anything to match", "POST", "/routes", map[string]any{"name": "r2"}, 400, 2,
			"schema violation (must set one of 'methods', 'hosts', 'headers', 'paths', 'snis' when 'protocols' is 'https')"},
		{"service still used by a route", "DELETE", "/services/svc", nil, 400, 4, "an existing 'routes' entity references this 'services' entity"},
		{"second rate-limiting on one route", "POST", "/routes/r/plugins", map[string]any{"name": "rate-limiting", "config": map[string]any{"minute": 1}}, 201, 0, ""},
		{"", "POST", "/routes/r/plugins", map[string]any{"name": "rate-limiting", "config": map[string]any{"hour": 1}}, 409, 5, ""},
		{"rate-limiting without a limit", "POST", "/plugins", map[string]any{"name": "rate-limiting"}, 400, 2,
			"schema violation (at least one of these fields must be non-empty: 'config.second', 'config.minute', 'config.hour', 'config.day', 'config.month', 'config.year')"},
		{"size out of range", "GET", "/services?size=1001", nil, 400, 9, "size must be an integer between 1 and 1000"},
		{"delete of a missing entity", "DELETE", "/routes/missing", nil, 204, 0, ""},
		{"unknown path", "GET", "/upstreams", nil, 404, 0, ""},
	} {
		code, body := call(t, s, c.method, c.path, c.body)
		if code != c.status || (c.code != 0 && body["code"] != c.code) || (c.message != "" && body["message"] != c.message) {
			t.Errorf("%s: %d %v, want %d code %v %q", c.name, code, body, c.status, c.code, c.message)
		}
	}
	// PATCH merges a plugin's config into what is stored.
	_, list := call(t, s, "GET", "/routes/r/plugins", nil)
	p := list["data"].([]any)[0].(map[string]any)
	code, patched := call(t, s, "PATCH", "/plugins/"+p["id"].(string), map[string]any{"config": map[string]any{"second": 5}})
	cfg, _ := patched["config"].(map[string]any)
	if code != 200 || cfg["second"] != 5.0 || cfg["minute"] != 1.0 || cfg["policy"] != "local" {
		t.Errorf("PATCH config: %d %v", code, patched)
	}
	// Deleting the route takes its plugins along.
	if code, _ := call(t, s, "DELETE", "/routes/r", nil); code != 204 || s.Count("plugins") != 0 {
		t.Errorf("DELETE route: %d, %d plugins left", code, s.Count("plugins"))
	}
}

func TestFaultsAndLog(t *testing.T) {
	s := New()
	s.SetFault(FaultUnavailable)
	if code, _ := call(t, s, "PUT", "/services/a", map[string]any{"host": "h"}); code != http.StatusServiceUnavailable {
		t.Errorf("with FaultUnavailable: %d", code)
	}
	s.SetFault(FaultNone)
	call(t, s, "PUT", "/services/a", map[string]any{"host": "h"})
	log := s.Requests()
	if len(log) != 2 || log[1].Method != "PUT" || log[1].Path != "/services/a" || string(log[1].Body) != `{"host":"h"}` {
		t.Errorf("log = %+v", log)
	}
	if s.Count("services") != 1 {
		t.Errorf("the request during the fault was applied: %d services", s.Count("services"))
	}

	srv := httptest.NewServer(s)
	defer srv.Close()
	s.SetFault(FaultDrop)
	if _, err := http.Get(srv.URL + "/services"); err == nil {
		t.Error("with FaultDrop the request got an answer")
	}
	s.SetFault(FaultNone)
	resp, err := http.Get(srv.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var root map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&root); err != nil {
		t.Fatal(err)
	}
	if root["version"] != Version || fmt.Sprint(root["configuration"].(map[string]any)["database"]) != "postgres" {
		t.Errorf("GET / = %v", root)
	}
}
