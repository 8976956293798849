package listener

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"go.temporal.io/api/serviceerror"

	"github.com/odaflow/odaflow/identity"
)

var (
	key    = []byte("current-listener-key-0123456789abcdef")
	oldKey = []byte("previous-listener-key-0123456789abcdef")
)

type signal struct {
	workflowID, name string
	arg              identity.RoleEvent
}

// fakeSignaller records signals; err, when set, is returned instead.
type fakeSignaller struct {
	mu   sync.Mutex
	sent []signal
	err  error
}

func (f *fakeSignaller) SignalWorkflow(_ context.Context, workflowID, runID, signalName string, arg any) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return f.err
	}
	f.sent = append(f.sent, signal{workflowID: workflowID, name: signalName, arg: arg.(identity.RoleEvent)})
	return nil
}

const created = `{"eventId":"e1","eventType":"PermissionSpecificationSetCreationNotification","event":{"permissionSpecificationSet":{"@baseType":"PermissionSpecificationSet","name":"DynamicRole1","description":"d1","href":"/someone-else/x"}}}`

func TestIdentityListener(t *testing.T) {
	tok := identity.ListenerToken(key, "comp", "dyn-pc")
	path := "/listener/comp/dyn-pc"
	for _, tc := range []struct {
		name     string
		method   string
		target   string
		bearer   string
		body     string
		sigErr   error
		keysErr  error
		code     int
		signaled bool
	}{
		{name: "valid create event", target: path + "?token=" + tok, body: created, code: http.StatusCreated, signaled: true},
		{name: "bearer header", target: path, bearer: tok, body: created, code: http.StatusCreated, signaled: true},
		{name: "token of the previous key during a rotation", target: path + "?token=" + identity.ListenerToken(oldKey, "comp", "dyn-pc"), body: created, code: http.StatusCreated, signaled: true},
		{name: "no token", target: path, body: created, code: http.StatusUnauthorized},
		{name: "wrong token", target: path + "?token=nope", body: created, code: http.StatusUnauthorized},
		{name: "another IdentityConfig's token", target: path + "?token=" + identity.ListenerToken(key, "comp", "other"), body: created, code: http.StatusUnauthorized},
		{name: "another namespace's path", target: "/listener/comp2/dyn-pc?token=" + tok, body: created, code: http.StatusUnauthorized},
		{name: "malformed body", target: path + "?token=" + tok, body: `{"eventType":"PartyRoleCreateEvent","event":{}}`, code: http.StatusBadRequest},
		{name: "bad auth is checked before the body", target: path, body: `not json`, code: http.StatusUnauthorized},
		{name: "attribute change acknowledged, not signalled", target: path + "?token=" + tok, body: `{"eventType":"PartyRoleAttributeValueChangeEvent","event":{"partyRole":{"name":"x"}}}`, code: http.StatusNoContent},
		{name: "unknown IdentityConfig", target: path + "?token=" + tok, body: created, sigErr: serviceerror.NewNotFound("workflow not found"), code: http.StatusNotFound},
		{name: "Temporal unreachable", target: path + "?token=" + tok, body: created, sigErr: serviceerror.NewUnavailable("connection refused"), code: http.StatusServiceUnavailable},
		{name: "Temporal slow", target: path + "?token=" + tok, body: created, sigErr: context.DeadlineExceeded, code: http.StatusServiceUnavailable},
		{name: "key file unreadable", target: path + "?token=" + tok, body: created, keysErr: errors.New("listener key file: no such file"), code: http.StatusServiceUnavailable},
		{name: "GET not allowed", method: http.MethodGet, target: path + "?token=" + tok, code: http.StatusMethodNotAllowed},
		{name: "other path", target: "/listener?token=" + tok, body: created, code: http.StatusNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sig := &fakeSignaller{err: tc.sigErr}
			var logs bytes.Buffer
			h := New(sig, func() ([][]byte, error) {
				if tc.keysErr != nil {
					return nil, tc.keysErr
				}
				return [][]byte{key, oldKey}, nil
			}, slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
			srv := httptest.NewServer(h)
			defer srv.Close()
			method := tc.method
			if method == "" {
				method = http.MethodPost
			}
			req, err := http.NewRequest(method, srv.URL+tc.target, strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			if tc.bearer != "" {
				req.Header.Set("Authorization", "Bearer "+tc.bearer)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != tc.code {
				b, _ := io.ReadAll(resp.Body)
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.code, b)
			}
			if tc.code == http.StatusServiceUnavailable && tc.keysErr == nil && resp.Header.Get("Retry-After") == "" {
				t.Error("503 without Retry-After")
			}
			if got := len(sig.sent) == 1; got != tc.signaled {
				t.Fatalf("signalled = %v, want %v", got, tc.signaled)
			}
			if tc.signaled {
				s := sig.sent[0]
				want := identity.RoleEvent{Component: "dyn-pc", API: identity.APIPermissionSpecificationSet, Action: identity.RoleAdd,
					Role: identity.Role{Name: "DynamicRole1", Description: "d1"}, EventType: "PermissionSpecificationSetCreationNotification", EventID: "e1"}
				if s.workflowID != "IdentityConfig/comp/dyn-pc" || s.name != identity.SignalRoleEvent || s.arg != want {
					t.Errorf("signal = %+v", s)
				}
			}
			if strings.Contains(logs.String(), tok) {
				t.Errorf("the token reached the log: %s", logs.String())
			}
		})
	}
}

func TestIdentityListenerBodyLimit(t *testing.T) {
	sig := &fakeSignaller{}
	h := New(sig, func() ([][]byte, error) { return [][]byte{key}, nil }, nil)
	tok := identity.ListenerToken(key, "comp", "dyn-pc")
	rec := httptest.NewRecorder()
	big := `{"eventType":"PartyRoleCreateEvent","event":{"partyRole":{"name":"x","pad":"` + strings.Repeat("a", MaxBody) + `"}}}`
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/listener/comp/dyn-pc?token="+tok, strings.NewReader(big)))
	if rec.Code != http.StatusRequestEntityTooLarge || len(sig.sent) != 0 {
		t.Fatalf("status %d, signals %d", rec.Code, len(sig.sent))
	}
}

func TestIdentityListenerKeyFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		name    string
		content string
		keys    int
		bad     string
	}{
		{"one key with newline", string(key) + "\n", 1, ""},
		{"rotation: new first, old kept", string(key) + "\n\n" + string(oldKey) + "\n", 2, ""},
		{"short key", "short\n", 0, "shorter than 32"},
		{"empty", "\n\n", 0, "holds no key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			keys, err := KeyFile(write(strings.ReplaceAll(tc.name, " ", "_"), tc.content))()
			if tc.bad != "" {
				if err == nil || !strings.Contains(err.Error(), tc.bad) {
					t.Fatalf("err = %v, want %q", err, tc.bad)
				}
				if strings.Contains(err.Error(), tc.content) && strings.TrimSpace(tc.content) != "" {
					t.Errorf("error shows the key: %v", err)
				}
				return
			}
			if err != nil || len(keys) != tc.keys || !bytes.Equal(keys[0], key) {
				t.Fatalf("keys %q, err %v", keys, err)
			}
		})
	}
	if _, err := KeyFile(filepath.Join(dir, "missing"))(); err == nil {
		t.Error("a missing file gave keys")
	}
}

// A hub's redelivery of a recorded event is acknowledged without a second
// signal; a flood from one IdentityConfig's path is cut at the burst with
// 429, and another IdentityConfig's events still pass.
func TestIdentityListenerDeduplicatesAndLimits(t *testing.T) {
	sig := &fakeSignaller{}
	h := New(sig, func() ([][]byte, error) { return [][]byte{key}, nil }, nil)
	post := func(name, body string) int {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/listener/comp/"+name+"?token="+identity.ListenerToken(key, "comp", name), strings.NewReader(body)))
		return rec.Code
	}
	if c := post("dyn-pc", created); c != http.StatusCreated {
		t.Fatalf("first delivery: %d", c)
	}
	if c := post("dyn-pc", created); c != http.StatusOK || len(sig.sent) != 1 {
		t.Fatalf("redelivery: %d, %d signals", c, len(sig.sent))
	}
	withID := func(i int) string { return strings.Replace(created, `"e1"`, fmt.Sprintf(`"flood-%d"`, i), 1) }
	limited := 0
	for i := 0; i < EventBurst+20; i++ {
		if post("flood", withID(i)) == http.StatusTooManyRequests {
			limited++
		}
	}
	if limited == 0 || len(sig.sent) > 1+EventBurst+5 {
		t.Errorf("%d refused, %d signals: the flood was not limited", limited, len(sig.sent))
	}
	if c := post("dyn-pc", withID(9999)); c != http.StatusCreated {
		t.Errorf("another IdentityConfig's event during the flood: %d", c)
	}
}
