package activities

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"go.temporal.io/sdk/temporal"

	"github.com/odaflow/odaflow/secrets"
)

// fakeVault answers the requests ConfigureStore makes, records them, and
// answers "upgrading" for the new kv mount's first reads.
type fakeVault struct {
	mu        sync.Mutex
	requests  []string
	tokens    map[string]bool
	upgrading int
	fail      func(r *http.Request) (int, string) // optional canned failure
}

func (f *fakeVault) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests = append(f.requests, r.Method+" "+r.URL.Path)
	f.tokens[r.Header.Get("X-Vault-Token")] = true
	if f.fail != nil {
		if code, body := f.fail(r); code != 0 {
			w.WriteHeader(code)
			_, _ = w.Write([]byte(body))
			return
		}
	}
	switch {
	case r.Method == http.MethodGet && (r.URL.Path == "/v1/sys/mounts" || r.URL.Path == "/v1/sys/auth"):
		_, _ = w.Write([]byte(`{"data":{}}`))
	case r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/config") && strings.HasPrefix(r.URL.Path, "/v1/kv-sman-"):
		if f.upgrading > 0 {
			f.upgrading--
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"errors":["Upgrading from non-versioned to versioned data. This backend will be unavailable for a brief period and will resume service shortly."]}`))
			return
		}
		_, _ = w.Write([]byte(`{"data":{"max_versions":0}}`))
	default:
		w.WriteHeader(http.StatusNoContent)
	}
}

func newFakeVault(t *testing.T, f *fakeVault) *Vault {
	t.Helper()
	f.tokens = map[string]bool{}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("file-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	v, err := NewVault(VaultConfig{Address: srv.URL, TokenFile: tokenFile}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestConfigureStoreRequests(t *testing.T) {
	// A token in the environment must never be used: odaflow's comes from
	// the file only.
	t.Setenv("VAULT_TOKEN", "env-token")
	f := &fakeVault{upgrading: 2}
	v := newFakeVault(t, f)
	in := StoreInput{Namespace: "components", Name: "demo-a", Spec: secrets.Spec{Type: secrets.TypeSideCar, PodSelector: secrets.Selector{ServiceAccount: "demo-a"}}}
	res, err := v.ConfigureStore(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"GET /v1/sys/mounts",
		"POST /v1/sys/mounts/kv-sman-components.demo-a",
		"PUT /v1/sys/policies/acl/sman-components.demo-a-policy",
		"GET /v1/sys/auth",
		"POST /v1/sys/auth/kubernetes-sman",
		"PUT /v1/auth/kubernetes-sman/config",
		"PUT /v1/auth/kubernetes-sman/role/sman-components.demo-a-role",
		"GET /v1/kv-sman-components.demo-a/config", // upgrading
		"GET /v1/kv-sman-components.demo-a/config", // upgrading
		"GET /v1/kv-sman-components.demo-a/config",
	}
	if strings.Join(f.requests, "\n") != strings.Join(want, "\n") {
		t.Fatalf("requests:\n%s\nwant:\n%s", strings.Join(f.requests, "\n"), strings.Join(want, "\n"))
	}
	if !res.MountCreated || res.Requests != len(want) {
		t.Errorf("result %+v", res)
	}
	if len(f.tokens) != 1 || !f.tokens["file-token"] {
		t.Errorf("tokens used: %v, want only the file's", f.tokens)
	}
	// The auth method is checked once per process.
	f.requests = nil
	if _, err := v.ConfigureStore(context.Background(), in); err != nil {
		t.Fatal(err)
	}
	// list mounts, mount (the fake never lists it), policy, role, kv check:
	// no auth requests.
	if len(f.requests) != 5 || strings.Contains(strings.Join(f.requests, " "), "sys/auth") {
		t.Errorf("second configure made %d requests: %v", len(f.requests), f.requests)
	}
}

func TestVaultErrorClassification(t *testing.T) {
	for _, tc := range []struct {
		name         string
		code         int
		body         string
		wantType     string
		nonRetryable bool
		wantMsg      string
	}{
		{"sealed", 503, `{"errors":["Vault is sealed"]}`, ErrTypeVaultUnavailable, false, "is sealed"},
		{"5xx", 500, `{"errors":["internal error"]}`, ErrTypeVaultUnavailable, false, "answered 500: internal error"},
		{"forbidden", 403, `{"errors":["permission denied"]}`, ErrTypeVaultForbidden, true, "Vault refused odaflow's token (403 permission denied)"},
		{"bad request", 400, `{"errors":["invalid role"]}`, ErrTypeVaultRejected, true, "Vault refused the request (400): invalid role"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeVault{fail: func(*http.Request) (int, string) { return tc.code, tc.body }}
			v := newFakeVault(t, f)
			_, err := v.ConfigureStore(context.Background(), StoreInput{Namespace: "ns", Name: "n"})
			var appErr *temporal.ApplicationError
			if !errors.As(err, &appErr) {
				t.Fatalf("err %v is not an ApplicationError", err)
			}
			if appErr.Type() != tc.wantType || appErr.NonRetryable() != tc.nonRetryable || !strings.Contains(appErr.Message(), tc.wantMsg) {
				t.Errorf("got %s nonRetryable=%v %q", appErr.Type(), appErr.NonRetryable(), appErr.Message())
			}
			if strings.Contains(err.Error(), "file-token") {
				t.Error("the token leaked into the error")
			}
		})
	}
	// Unreachable.
	v, _ := NewVault(VaultConfig{Address: "http://127.0.0.1:1", TokenFile: "/dev/null"}, nil)
	_, err := v.DeleteStore(context.Background(), DeleteStoreInput{Namespace: "ns", Name: "n"})
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) || appErr.Type() != ErrTypeVaultCredentials {
		t.Errorf("empty token file: %v", err)
	}
}

func TestDeleteStoreToleratesMissing(t *testing.T) {
	f := &fakeVault{fail: func(r *http.Request) (int, string) {
		if r.Method == http.MethodDelete && strings.Contains(r.URL.Path, "/role/") {
			return 400, `{"errors":["no handler for route \"auth/kubernetes-sman/role/x\". route entry not found."]}`
		}
		if r.Method == http.MethodDelete {
			return 404, `{"errors":[]}`
		}
		return 0, ""
	}}
	v := newFakeVault(t, f)
	res, err := v.DeleteStore(context.Background(), DeleteStoreInput{Namespace: "ns", Name: "n"})
	if err != nil {
		t.Fatal(err)
	}
	// Mount absent from the list: no unmount request.
	if res.Requests != 3 {
		t.Errorf("requests %d: %v", res.Requests, f.requests)
	}
}

func TestNewVaultNeedsCredentials(t *testing.T) {
	if _, err := NewVault(VaultConfig{Address: "http://v"}, nil); err == nil {
		t.Error("no token file and no login accepted")
	}
	if _, err := NewVault(VaultConfig{TokenFile: "/x"}, nil); err == nil {
		t.Error("no address accepted")
	}
	if _, err := NewVault(VaultConfig{Address: "http://v", LoginAuthPath: "kubernetes", LoginRole: "odaflow"}, nil); err != nil {
		t.Errorf("kubernetes login refused: %v", err)
	}
}

func TestDisabledVault(t *testing.T) {
	_, err := DisabledVault().ConfigureStore(context.Background(), StoreInput{Namespace: "ns", Name: "n"})
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) || appErr.Type() != ErrTypeVaultNotConfigured || !appErr.NonRetryable() {
		t.Fatalf("err %v", err)
	}
}

// A mount under the store's name that records another SecretsManagement,
// or no owner at all (made by hand, or by someone else), is neither
// configured nor deleted: ConfigureStore is refused with the reason, and
// DeleteStore leaves mount, policy and role alone.
func TestStoreOfAnotherOwnerIsLeftAlone(t *testing.T) {
	for _, description := range []string{
		secrets.MountDescription("team-b", "billing", "uid-b"),
		"made by an administrator",
	} {
		mounts := fmt.Sprintf(`{"data":{"kv-sman-team-a.billing/":{"type":"kv","description":%q,"options":{"version":"2"}}}}`, description)
		f := &fakeVault{fail: func(r *http.Request) (int, string) {
			if r.Method == http.MethodGet && r.URL.Path == "/v1/sys/mounts" {
				return http.StatusOK, mounts
			}
			return 0, ""
		}}
		v := newFakeVault(t, f)
		_, err := v.ConfigureStore(context.Background(), StoreInput{Namespace: "team-a", Name: "billing", UID: "uid-a", Spec: secrets.Spec{Type: secrets.TypeSideCar}})
		assertAppError(t, err, ErrTypeVaultOwnedElsewhere, true)
		if !strings.Contains(err.Error(), "kv-sman-team-a.billing") {
			t.Errorf("refusal does not name the mount: %v", err)
		}
		res, err := v.DeleteStore(context.Background(), DeleteStoreInput{Namespace: "team-a", Name: "billing"})
		if err != nil || res.Kept == "" {
			t.Fatalf("delete: %+v %v", res, err)
		}
		for _, r := range f.requests {
			if !strings.HasPrefix(r, "GET ") {
				t.Errorf("%q: wrote to Vault: %s", description, r)
			}
		}
	}
	// The owner's own mount, from an earlier lifecycle: the new uid is
	// recorded and the store configured.
	mounts := fmt.Sprintf(`{"data":{"kv-sman-team-a.billing/":{"type":"kv","description":%q,"options":{"version":"2"}}}}`, secrets.MountDescription("team-a", "billing", "uid-old"))
	f := &fakeVault{fail: func(r *http.Request) (int, string) {
		if r.Method == http.MethodGet && r.URL.Path == "/v1/sys/mounts" {
			return http.StatusOK, mounts
		}
		return 0, ""
	}}
	v := newFakeVault(t, f)
	if _, err := v.ConfigureStore(context.Background(), StoreInput{Namespace: "team-a", Name: "billing", UID: "uid-a", Spec: secrets.Spec{Type: secrets.TypeSideCar}}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(f.requests, " "), "POST /v1/sys/mounts/kv-sman-team-a.billing/tune") {
		t.Errorf("the new uid was not recorded: %v", f.requests)
	}
}

func TestMountOwnerRoundTrip(t *testing.T) {
	ns, name, uid, ok := secrets.MountOwner(secrets.MountDescription("team-a", "x.billing", "u-1"))
	if !ok || ns != "team-a" || name != "x.billing" || uid != "u-1" {
		t.Errorf("MountOwner = %q %q %q %v", ns, name, uid, ok)
	}
	for _, d := range []string{"", "ODA SecretsManagement for team-a:x", secrets.MountOwnerPrefix + "team-a", secrets.MountOwnerPrefix + "/x uid 1"} {
		if _, _, _, ok := secrets.MountOwner(d); ok {
			t.Errorf("MountOwner(%q) found an owner", d)
		}
	}
}
