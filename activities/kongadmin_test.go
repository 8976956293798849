package activities

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/odaflow/odaflow/gateway"
	"github.com/odaflow/odaflow/internal/doubles/kongadmin"
	"github.com/odaflow/odaflow/oda"
)

func kongDouble(t *testing.T) (*kongadmin.Server, *httptest.Server) {
	t.Helper()
	d := kongadmin.New()
	srv := httptest.NewServer(d)
	t.Cleanup(srv.Close)
	return d, srv
}

func kongAPI(edit func(map[string]any)) gateway.API {
	spec := map[string]any{
		"name":           "productcatalogmanagement",
		"apiType":        "openapi",
		"implementation": "ctk-prodcatapi",
		"path":           "/ctk/tmf-api/productCatalogManagement/v4",
		"port":           float64(8080),
		"rateLimit":      map[string]any{"enabled": true, "limit": "6"},
	}
	if edit != nil {
		edit(spec)
	}
	return gateway.API{Name: "ctk-pcm", Namespace: "components", UID: "u1", Spec: spec}
}

var kongCfg = gateway.Config{Gateway: gateway.GatewayKongAdmin}

func newKong(t *testing.T, url, tokenFile string) *KongAdmin {
	t.Helper()
	k, err := NewKongAdmin(url, tokenFile, &http.Client{Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestKongAdminSyncWritesByName(t *testing.T) {
	d, srv := kongDouble(t)
	k := newKong(t, srv.URL, "")
	api := kongAPI(nil)
	res, err := k.Sync(context.Background(), KongSyncInput{Config: kongCfg, API: api})
	if err != nil {
		t.Fatal(err)
	}
	if res.ServiceID == "" || res.RouteID == "" || len(res.PluginIDs) != 1 {
		t.Fatalf("result = %+v", res)
	}
	var writes []string
	for _, r := range d.Requests() {
		if r.Method != http.MethodGet {
			writes = append(writes, r.Method+" "+r.Path)
		}
	}
	want := []string{
		"PUT /services/components.ctk-pcm",
		"PUT /routes/components.ctk-pcm",
		"PUT /plugins/rate-limit-components.ctk-pcm",
	}
	if strings.Join(writes, "\n") != strings.Join(want, "\n") {
		t.Errorf("writes:\n%s\nwant:\n%s", strings.Join(writes, "\n"), strings.Join(want, "\n"))
	}
	// The route refers to the service by the id Kong gave it.
	for _, r := range d.Requests() {
		if r.Method == http.MethodPut && r.Path == "/routes/components.ctk-pcm" {
			var body map[string]any
			if err := json.Unmarshal(r.Body, &body); err != nil {
				t.Fatal(err)
			}
			if svc, _ := body["service"].(map[string]any); svc["id"] != res.ServiceID || svc["name"] != nil {
				t.Errorf("route body service = %v, want {id: %s}", body["service"], res.ServiceID)
			}
		}
	}
}

func TestKongAdminErrors(t *testing.T) {
	for _, c := range []struct {
		name      string
		fault     kongadmin.Fault
		api       gateway.API
		retryable bool
		errType   string
		says      string
	}{
		{name: "kong answers 503", fault: kongadmin.FaultUnavailable, api: kongAPI(nil),
			retryable: true, errType: ErrTypeKongUnavailable, says: "503"},
		{name: "kong drops the connection", fault: kongadmin.FaultDrop, api: kongAPI(nil),
			retryable: true, errType: ErrTypeKongUnavailable, says: "unreachable"},
		{name: "kong refuses a plugin config", api: kongAPI(func(s map[string]any) {
			s["CORS"] = map[string]any{"enabled": true, "handlePreflightRequests": map[string]any{"allowMethods": "GET, FETCH"}}
		}), retryable: false, errType: ErrTypeInvalid, says: "config.methods.2: expected one of"},
		{name: "a spec odaflow cannot map", api: kongAPI(func(s map[string]any) {
			s["rateLimit"] = map[string]any{"enabled": true}
		}), retryable: false, errType: ErrTypeInvalid, says: "spec.rateLimit.limit"},
	} {
		t.Run(c.name, func(t *testing.T) {
			d, srv := kongDouble(t)
			d.SetFault(c.fault)
			k := newKong(t, srv.URL, "")
			_, err := k.Sync(context.Background(), KongSyncInput{Config: kongCfg, API: c.api})
			var appErr *temporal.ApplicationError
			if !errors.As(err, &appErr) {
				t.Fatalf("err = %v, want an application error", err)
			}
			if appErr.NonRetryable() == c.retryable || appErr.Type() != c.errType {
				t.Errorf("err type %s non-retryable %v, want %s retryable %v: %v", appErr.Type(), appErr.NonRetryable(), c.errType, c.retryable, err)
			}
			if !strings.Contains(err.Error(), c.says) {
				t.Errorf("err %q does not say %q", err, c.says)
			}
		})
	}
}

func TestKongAdminRemoveTolerates404AndFaults(t *testing.T) {
	d, srv := kongDouble(t)
	k := newKong(t, srv.URL, "")
	api := kongAPI(nil)
	if _, err := k.Sync(context.Background(), KongSyncInput{Config: kongCfg, API: api}); err != nil {
		t.Fatal(err)
	}
	in := KongRemoveInput{Namespace: api.Namespace, Name: api.Name}
	d.SetFault(kongadmin.FaultUnavailable)
	err := k.Remove(context.Background(), in)
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) || appErr.NonRetryable() {
		t.Fatalf("Remove while Kong is down: %v, want a retryable error", err)
	}
	d.SetFault(kongadmin.FaultNone)
	if err := k.Remove(context.Background(), in); err != nil {
		t.Fatal(err)
	}
	for _, table := range []string{"services", "routes", "plugins"} {
		if n := d.Count(table); n != 0 {
			t.Errorf("%d %s left", n, table)
		}
	}
	if err := k.Remove(context.Background(), in); err != nil {
		t.Errorf("Remove of nothing: %v", err)
	}
}

func TestKongAdminToken(t *testing.T) {
	d, srv := kongDouble(t)
	const secret = "s3cret-token-value"
	d.Token = secret
	file := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(file, []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	k := newKong(t, srv.URL, file)
	if _, err := k.Sync(context.Background(), KongSyncInput{Config: kongCfg, API: kongAPI(nil)}); err != nil {
		t.Fatalf("with the right token: %v", err)
	}
	// A rotated Secret applies on the next request; a wrong token is
	// retried and named, never shown.
	if err := os.WriteFile(file, []byte("wrong-token"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := k.Sync(context.Background(), KongSyncInput{Config: kongCfg, API: kongAPI(nil)})
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) || appErr.NonRetryable() || !strings.Contains(err.Error(), "admin token") {
		t.Fatalf("with a wrong token: %v", err)
	}
	if strings.Contains(err.Error(), "wrong-token") || strings.Contains(err.Error(), secret) {
		t.Errorf("the error shows the token: %v", err)
	}
	if _, err := NewKongAdmin(srv.URL, filepath.Join(t.TempDir(), "missing"), nil); err == nil {
		t.Error("NewKongAdmin with a missing token file: no error")
	}
	if _, err := NewKongAdmin("", "", nil); err == nil {
		t.Error("NewKongAdmin without a URL: no error")
	}
}

func TestExposureKongAdminWiring(t *testing.T) {
	t.Run("kong-admin without a client fails for good", func(t *testing.T) {
		e := &Exposure{Config: kongCfg}
		_, err := e.exposeKongAdmin(context.Background(), kongAPI(nil))
		var appErr *temporal.ApplicationError
		if !errors.As(err, &appErr) || !appErr.NonRetryable() || !strings.Contains(err.Error(), "Kong Admin API URL") {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("unexpose removes the API's Kong entities", func(t *testing.T) {
		d, srv := kongDouble(t)
		k := newKong(t, srv.URL, "")
		api := kongAPI(nil)
		if _, err := k.Sync(context.Background(), KongSyncInput{Config: kongCfg, API: api}); err != nil {
			t.Fatal(err)
		}
		e := &Exposure{Config: kongCfg, Kong: k}
		// No finalizers to release, so no apiserver call is made.
		err := e.Unexpose(context.Background(), UnexposeInput{Ref: oda.Ref{Kind: oda.KindExposedAPI.Name, Namespace: api.Namespace, Name: api.Name}})
		if err != nil {
			t.Fatal(err)
		}
		if n := d.Count("services") + d.Count("routes") + d.Count("plugins"); n != 0 {
			t.Errorf("%d entities left", n)
		}
	})
}
