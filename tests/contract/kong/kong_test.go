// Package kong_test is the contract suite of odaflow's kong-admin gateway:
// the same tests run against the Kong Admin API double
// (internal/doubles/kongadmin) always, and against a real Kong when
// KONG_ADMIN_URL is set (KONG_ADMIN_TOKEN_FILE, when set, names a file with
// its admin token). What passes on the double must pass on Kong; a
// difference is a bug in the double.
//
// On a real Kong every test works under its own random namespace and tags
// and removes what it created.
package kong_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	gokong "github.com/kong/go-kong/kong"
	"go.temporal.io/sdk/temporal"

	"github.com/odaflow/odaflow/activities"
	"github.com/odaflow/odaflow/gateway"
	"github.com/odaflow/odaflow/internal/doubles/kongadmin"
)

// target is one Admin API the suite runs against.
type target struct {
	name   string
	url    string
	token  string                // file, for KongAdmin
	double *kongadmin.Server     // nil on a real Kong
	kong   *gokong.Client        // for looking at the result
	admin  *activities.KongAdmin // the activity under test
}

// each runs fn against the double and, when KONG_ADMIN_URL is set, a real
// Kong, as subtests named after the target.
func each(t *testing.T, fn func(t *testing.T, tg *target)) {
	t.Helper()
	t.Run("double", func(t *testing.T) {
		d := kongadmin.New()
		srv := httptest.NewServer(d)
		t.Cleanup(srv.Close)
		tg := newTarget(t, "double (Kong "+kongadmin.Version+" imitation)", srv.URL, "")
		tg.double = d
		t.Logf("target: %s at %s", tg.name, tg.url)
		fn(t, tg)
	})
	if u := os.Getenv("KONG_ADMIN_URL"); u != "" {
		t.Run("kong", func(t *testing.T) {
			tg := newTarget(t, "real Kong", u, os.Getenv("KONG_ADMIN_TOKEN_FILE"))
			info, err := tg.kong.Root(context.Background())
			if err != nil {
				t.Fatalf("GET / on %s: %v", u, err)
			}
			t.Logf("target: %s %v at %s", tg.name, info["version"], tg.url)
			fn(t, tg)
		})
	}
}

func newTarget(t *testing.T, name, url, tokenFile string) *target {
	t.Helper()
	admin, err := activities.NewKongAdmin(url, tokenFile, nil)
	if err != nil {
		t.Fatal(err)
	}
	hc := http.DefaultClient
	if tokenFile != "" {
		tok, err := os.ReadFile(tokenFile)
		if err != nil {
			t.Fatal(err)
		}
		hc = &http.Client{Transport: headerTransport{"Kong-Admin-Token": strings.TrimSpace(string(tok))}}
	}
	kc, err := gokong.NewClient(&url, hc)
	if err != nil {
		t.Fatal(err)
	}
	return &target{name: name, url: url, token: tokenFile, kong: kc, admin: admin}
}

type headerTransport map[string]string

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h {
		r.Header.Set(k, v)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// newAPI is an ExposedAPI in a namespace of its own; edit changes its spec.
func newAPI(t *testing.T, edit func(spec map[string]any)) gateway.API {
	t.Helper()
	ns := "ct-" + strings.ReplaceAll(uuid.NewString(), "-", "")[:12]
	spec := map[string]any{
		"name":           "productcatalogmanagement",
		"apiType":        "openapi",
		"implementation": "ctk-prodcatapi",
		"path":           "/ctk-productcatalogmanagement/tmf-api/productCatalogManagement/v4",
		"port":           float64(8080),
		"rateLimit":      map[string]any{"enabled": true, "limit": "6", "interval": "pm"},
		"apiKeyVerification": map[string]any{
			"enabled": true,
		},
	}
	if edit != nil {
		edit(spec)
	}
	return gateway.API{Name: "ctk-productcatalogmanagement", Namespace: ns, UID: uuid.NewString(), Spec: spec}
}

var cfg = gateway.Config{Gateway: gateway.GatewayKongAdmin}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return c
}

// sync runs the activity and registers the removal of what it made.
func sync(t *testing.T, tg *target, api gateway.API) activities.KongSyncResult {
	t.Helper()
	t.Cleanup(func() {
		if err := tg.admin.Remove(context.Background(), activities.KongRemoveInput{Namespace: api.Namespace, Name: api.Name}); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	res, err := tg.admin.Sync(ctx(t), activities.KongSyncInput{Config: cfg, API: api})
	if err != nil {
		t.Fatalf("Sync: %v", err)
	}
	return res
}

// tagged lists the names (instance names for plugins) of the entities
// carrying every given tag.
func tagged(t *testing.T, tg *target, kind string, tags ...string) []string {
	t.Helper()
	var ptrs []*string
	for i := range tags {
		ptrs = append(ptrs, &tags[i])
	}
	opt := &gokong.ListOpt{Size: 100, Tags: ptrs, MatchAllTags: true}
	var names []string
	for opt != nil {
		var err error
		switch kind {
		case "services":
			var page []*gokong.Service
			page, opt, err = tg.kong.Services.List(ctx(t), opt)
			for _, e := range page {
				names = append(names, *e.Name)
			}
		case "routes":
			var page []*gokong.Route
			page, opt, err = tg.kong.Routes.List(ctx(t), opt)
			for _, e := range page {
				names = append(names, *e.Name)
			}
		case "plugins":
			var page []*gokong.Plugin
			page, opt, err = tg.kong.Plugins.List(ctx(t), opt)
			for _, e := range page {
				names = append(names, *e.InstanceName)
			}
		}
		if err != nil {
			t.Fatalf("list %s tagged %v: %v", kind, tags, err)
		}
	}
	sort.Strings(names)
	return names
}

func strs(p []*string) []string {
	var out []string
	for _, s := range p {
		out = append(out, *s)
	}
	return out
}

func equal(a, b []string) bool { return strings.Join(a, "\n") == strings.Join(b, "\n") }

func TestCreate(t *testing.T) {
	each(t, func(t *testing.T, tg *target) {
		api := newAPI(t, nil)
		res := sync(t, tg, api)
		name := gateway.KongAdminName(api)

		svc, err := tg.kong.Services.Get(ctx(t), &name)
		if err != nil {
			t.Fatalf("get service: %v", err)
		}
		if *svc.ID != res.ServiceID || *svc.Host != "ctk-prodcatapi."+api.Namespace+".svc" || *svc.Port != 8080 || *svc.Protocol != "http" {
			t.Errorf("service = id %s host %s port %d protocol %s", *svc.ID, *svc.Host, *svc.Port, *svc.Protocol)
		}
		route, err := tg.kong.Routes.Get(ctx(t), &name)
		if err != nil {
			t.Fatalf("get route: %v", err)
		}
		if *route.ID != res.RouteID || *route.Service.ID != res.ServiceID || len(route.Paths) != 1 ||
			*route.Paths[0] != api.Spec["path"] || *route.StripPath || *route.HTTPSRedirectStatusCode != 301 {
			t.Errorf("route = %+v", route)
		}
		wantTags := []string{gateway.KongAdminTag, gateway.KongAdminAPITag(api)}
		for _, tags := range [][]*string{svc.Tags, route.Tags} {
			if got := strs(tags); !equal(got, wantTags) {
				t.Errorf("tags = %v, want %v", got, wantTags)
			}
		}
		plugins, err := tg.kong.Plugins.ListAllForRoute(ctx(t), route.ID)
		if err != nil {
			t.Fatalf("list plugins of the route: %v", err)
		}
		got := map[string]*gokong.Plugin{}
		for _, p := range plugins {
			got[*p.Name] = p
		}
		rl, jwt := got["rate-limiting"], got["jwt"]
		if len(plugins) != 2 || rl == nil || jwt == nil {
			t.Fatalf("plugins on the route: %d, want rate-limiting and jwt", len(plugins))
		}
		if *rl.InstanceName != "rate-limit-"+name || rl.Config["minute"] != float64(6) || rl.Config["policy"] != "local" {
			t.Errorf("rate-limiting = %s %v", *rl.InstanceName, rl.Config)
		}
		if *jwt.InstanceName != "apiauthentication-"+name || jwt.Config["key_claim_name"] != "iss" {
			t.Errorf("jwt = %s %v", *jwt.InstanceName, jwt.Config)
		}
	})
}

func TestSyncIsIdempotent(t *testing.T) {
	each(t, func(t *testing.T, tg *target) {
		api := newAPI(t, nil)
		first := sync(t, tg, api)
		if tg.double != nil {
			tg.double.ClearRequests()
		}
		second, err := tg.admin.Sync(ctx(t), activities.KongSyncInput{Config: cfg, API: api})
		if err != nil {
			t.Fatal(err)
		}
		if second.ServiceID != first.ServiceID || second.RouteID != first.RouteID || second.Deleted != 0 {
			t.Errorf("second sync = %+v, first %+v: ids must stay and nothing be deleted", second, first)
		}
		if tg.double != nil {
			for _, r := range tg.double.Requests() {
				if r.Method != http.MethodPut && r.Method != http.MethodGet {
					t.Errorf("repeated sync sent %s %s", r.Method, r.Path)
				}
			}
		}
	})
}

func TestUpdatePath(t *testing.T) {
	each(t, func(t *testing.T, tg *target) {
		api := newAPI(t, nil)
		first := sync(t, tg, api)
		api.Spec["path"] = "/ctk-productcatalogmanagement/tmf-api/productCatalogManagement/v5"
		second, err := tg.admin.Sync(ctx(t), activities.KongSyncInput{Config: cfg, API: api})
		if err != nil {
			t.Fatal(err)
		}
		name := gateway.KongAdminName(api)
		route, err := tg.kong.Routes.Get(ctx(t), &name)
		if err != nil {
			t.Fatal(err)
		}
		if got := strs(route.Paths); !equal(got, []string{api.Spec["path"].(string)}) {
			t.Errorf("paths = %v", got)
		}
		if second.RouteID != first.RouteID {
			t.Errorf("route id changed from %s to %s: the route must be updated in place", first.RouteID, second.RouteID)
		}
		if n := len(tagged(t, tg, "routes", gateway.KongAdminAPITag(api))); n != 1 {
			t.Errorf("%d routes for the API, want 1", n)
		}
	})
}

func TestPolicySwitchedOffRemovesPlugin(t *testing.T) {
	each(t, func(t *testing.T, tg *target) {
		api := newAPI(t, nil)
		sync(t, tg, api)
		tag := gateway.KongAdminAPITag(api)
		name := gateway.KongAdminName(api)
		if got := tagged(t, tg, "plugins", tag); !equal(got, []string{"apiauthentication-" + name, "rate-limit-" + name}) {
			t.Fatalf("plugins = %v", got)
		}
		api.Spec["rateLimit"] = map[string]any{"enabled": false}
		res, err := tg.admin.Sync(ctx(t), activities.KongSyncInput{Config: cfg, API: api})
		if err != nil {
			t.Fatal(err)
		}
		if got := tagged(t, tg, "plugins", tag); !equal(got, []string{"apiauthentication-" + name}) {
			t.Errorf("plugins after switching rateLimit off = %v", got)
		}
		if res.Deleted != 1 {
			t.Errorf("deleted %d, want 1", res.Deleted)
		}
	})
}

func TestUnexposeRemovesAll(t *testing.T) {
	each(t, func(t *testing.T, tg *target) {
		api := newAPI(t, nil)
		other := newAPI(t, nil)
		sync(t, tg, api)
		sync(t, tg, other)
		in := activities.KongRemoveInput{Namespace: api.Namespace, Name: api.Name}
		if err := tg.admin.Remove(ctx(t), in); err != nil {
			t.Fatal(err)
		}
		for _, kind := range []string{"services", "routes", "plugins"} {
			if got := tagged(t, tg, kind, gateway.KongAdminAPITag(api)); len(got) != 0 {
				t.Errorf("%s left: %v", kind, got)
			}
			if got := tagged(t, tg, kind, gateway.KongAdminAPITag(other)); len(got) == 0 {
				t.Errorf("the other API's %s were removed too", kind)
			}
		}
		// A second removal finds nothing and is fine.
		if err := tg.admin.Remove(ctx(t), in); err != nil {
			t.Errorf("second Remove: %v", err)
		}
	})
}

// raw sends a request and decodes the JSON answer.
func raw(t *testing.T, tg *target, method, path string, body any) (int, map[string]any) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx(t), method, tg.url+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if tg.token != "" {
		tok, _ := os.ReadFile(tg.token)
		req.Header.Set("Kong-Admin-Token", strings.TrimSpace(string(tok)))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out := map[string]any{}
	b, _ := io.ReadAll(resp.Body)
	if len(b) > 0 {
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatalf("%s %s: answer is not JSON: %s", method, path, b)
		}
	}
	return resp.StatusCode, out
}

func TestDuplicatePostIs409(t *testing.T) {
	each(t, func(t *testing.T, tg *target) {
		name := "ct-dup-" + uuid.NewString()[:8]
		body := map[string]any{"name": name, "host": "example.com", "tags": []string{"odaflow-contract"}}
		status, first := raw(t, tg, http.MethodPost, "/services", body)
		if status != http.StatusCreated {
			t.Fatalf("first POST: %d %v", status, first)
		}
		t.Cleanup(func() { raw(t, tg, http.MethodDelete, "/services/"+name, nil) })
		status, second := raw(t, tg, http.MethodPost, "/services", body)
		if status != http.StatusConflict {
			t.Fatalf("second POST: %d %v, want 409", status, second)
		}
		if second["code"] != float64(5) || second["name"] != "unique constraint violation" {
			t.Errorf("409 body = %v", second)
		}
		if f, _ := second["fields"].(map[string]any); f["name"] != name {
			t.Errorf("409 fields = %v, want name %s", second["fields"], name)
		}
		if msg, _ := second["message"].(string); !strings.Contains(msg, name) {
			t.Errorf("409 message %q does not name the duplicate", msg)
		}
		// go-kong sees the same as an APIError with the code.
		_, err := tg.kong.Services.Create(ctx(t), &gokong.Service{Name: &name, Host: gokong.String("example.com")})
		var apiErr *gokong.APIError
		if !errors.As(err, &apiErr) || apiErr.Code() != http.StatusConflict {
			t.Errorf("go-kong Create of a duplicate: %v", err)
		}
	})
}

func TestSchemaViolationIs400(t *testing.T) {
	each(t, func(t *testing.T, tg *target) {
		status, body := raw(t, tg, http.MethodPost, "/services", map[string]any{"name": "ct-nohost-" + uuid.NewString()[:8], "port": "eighty"})
		if status != http.StatusBadRequest {
			t.Fatalf("POST without host: %d %v", status, body)
		}
		want := map[string]any{"host": "required field missing", "port": "expected an integer"}
		if body["code"] != float64(2) || body["name"] != "schema violation" {
			t.Errorf("400 body = %v", body)
		}
		if fmt.Sprint(body["fields"]) != fmt.Sprint(want) {
			t.Errorf("fields = %v, want %v", body["fields"], want)
		}
		if body["message"] != "2 schema violations (host: required field missing; port: expected an integer)" {
			t.Errorf("message = %q", body["message"])
		}
		status, body = raw(t, tg, http.MethodPost, "/services", map[string]any{"host": "example.com", "tags": []string{"a/b"}})
		if status != http.StatusBadRequest || body["code"] != float64(2) || !strings.Contains(fmt.Sprint(body["message"]), "invalid tag 'a/b'") {
			t.Errorf("a tag with a slash: %d %v", status, body)
		}
		status, body = raw(t, tg, http.MethodGet, "/services/ct-missing-"+uuid.NewString()[:8], nil)
		if status != http.StatusNotFound || body["message"] != "Not found" {
			t.Errorf("GET of a missing service: %d %v", status, body)
		}

		// A policy Kong refuses fails the activity for good.
		api := newAPI(t, func(spec map[string]any) {
			spec["CORS"] = map[string]any{"enabled": true, "handlePreflightRequests": map[string]any{"allowMethods": "GET, FETCH"}}
		})
		t.Cleanup(func() {
			_ = tg.admin.Remove(context.Background(), activities.KongRemoveInput{Namespace: api.Namespace, Name: api.Name})
		})
		_, err := tg.admin.Sync(ctx(t), activities.KongSyncInput{Config: cfg, API: api})
		var appErr *temporal.ApplicationError
		if !errors.As(err, &appErr) || !appErr.NonRetryable() || appErr.Type() != activities.ErrTypeInvalid {
			t.Fatalf("Sync with a method Kong refuses: %v, want a non-retryable %s", err, activities.ErrTypeInvalid)
		}
		if !strings.Contains(err.Error(), "cors-") || !strings.Contains(err.Error(), "schema violation") {
			t.Errorf("error does not say which plugin Kong refused and why: %v", err)
		}
	})
}

func TestPagingBeyondOnePage(t *testing.T) {
	each(t, func(t *testing.T, tg *target) {
		api := newAPI(t, nil)
		res := sync(t, tg, api)
		tag := gateway.KongAdminAPITag(api)
		// 250 stale routes with the API's tag, as an earlier naming might
		// have left: the next sync must page through all of them.
		for i := 0; i < 250; i++ {
			status, body := raw(t, tg, http.MethodPut, fmt.Sprintf("/routes/%s.stale-%03d", api.Namespace, i), map[string]any{
				"paths": []string{fmt.Sprintf("/stale-%s-%03d", api.Namespace, i)}, "service": map[string]any{"id": res.ServiceID},
				"tags": []string{gateway.KongAdminTag, tag},
			})
			if status != http.StatusOK {
				t.Fatalf("create stale route %d: %d %v", i, status, body)
			}
		}
		// Paging as Kong does: 100, 100, 50, each page pointing at the next.
		var pages []int
		seen := map[string]bool{}
		opt := &gokong.ListOpt{Size: 100, Tags: []*string{&tag}}
		for opt != nil {
			page, next, err := tg.kong.Routes.List(ctx(t), opt)
			if err != nil {
				t.Fatal(err)
			}
			pages = append(pages, len(page))
			for _, r := range page {
				seen[*r.ID] = true
			}
			opt = next
		}
		if fmt.Sprint(pages) != "[100 100 51]" || len(seen) != 251 {
			t.Errorf("pages %v with %d distinct routes, want [100 100 51] and 251", pages, len(seen))
		}
		again, err := tg.admin.Sync(ctx(t), activities.KongSyncInput{Config: cfg, API: api})
		if err != nil {
			t.Fatal(err)
		}
		if again.Deleted != 250 {
			t.Errorf("deleted %d stale routes, want 250", again.Deleted)
		}
		if got := tagged(t, tg, "routes", tag); !equal(got, []string{gateway.KongAdminName(api)}) {
			t.Errorf("routes left: %d", len(got))
		}
	})
}

func TestTagFiltering(t *testing.T) {
	each(t, func(t *testing.T, tg *target) {
		p := "ct" + strings.ReplaceAll(uuid.NewString(), "-", "")[:8]
		a, b := p+"-a", p+"-b"
		for name, tags := range map[string][]string{"ab": {a, b}, "a": {a}, "b": {b}} {
			name = p + "-" + name
			status, body := raw(t, tg, http.MethodPut, "/services/"+name, map[string]any{"host": "example.com", "tags": tags})
			if status != http.StatusOK {
				t.Fatalf("create %s: %d %v", name, status, body)
			}
			t.Cleanup(func() { raw(t, tg, http.MethodDelete, "/services/"+name, nil) })
		}
		names := func(query string) []string {
			status, body := raw(t, tg, http.MethodGet, "/services?tags="+query, nil)
			if status != http.StatusOK {
				t.Fatalf("list tags=%s: %d %v", query, status, body)
			}
			var out []string
			for _, e := range body["data"].([]any) {
				out = append(out, strings.TrimPrefix(e.(map[string]any)["name"].(string), p+"-"))
			}
			sort.Strings(out)
			return out
		}
		for _, c := range []struct {
			query string
			want  []string
		}{
			{a + "," + b, []string{"ab"}},
			{a + "/" + b, []string{"a", "ab", "b"}},
			{a, []string{"a", "ab"}},
			{p + "-none", nil},
		} {
			if got := names(c.query); !equal(got, c.want) {
				t.Errorf("tags=%s: %v, want %v", c.query, got, c.want)
			}
		}
		status, body := raw(t, tg, http.MethodGet, "/services?tags="+a+","+b+"/"+p, nil)
		if status != http.StatusBadRequest {
			t.Errorf("mixed , and / in a tag filter: %d %v, want 400", status, body)
		}
	})
}
