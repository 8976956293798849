package activities

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"

	"go.temporal.io/sdk/temporal"

	"github.com/odaflow/odaflow/dependency"
	"github.com/odaflow/odaflow/oda"
)

// An inventory that does not answer is a retryable error whose message,
// which becomes the DependentAPI's Ready condition message and Event,
// names the inventory's host and never the credentials in its address.
func TestRegisterDependencyUnreachableNamesHostOnly(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	host := strings.TrimPrefix(srv.URL, "http://")
	srv.Close() // nothing listens there any more: connection refused
	in := RegisterDependencyInput{
		Registration: dependency.Registration{ComponentName: "r-cat", DependencyName: "downstream", URL: "http://p/api", Active: true},
		Ref:          oda.Ref{Kind: oda.KindDependentAPI.Name, Namespace: "components", Name: "r-cat-downstream"},
		UID:          "0f0e",
		HasFinalizer: true,
	}
	for _, c := range []struct {
		name, base string
		secrets    []string
	}{
		{"plain", "http://" + host, nil},
		{"with a path", "http://" + host + "/tmf-api/serviceInventoryManagement/v5", nil},
		{"with credentials", "http://inv-user:s3cr3t@" + host, []string{"inv-user", "s3cr3t"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			inv := &ServiceInventory{URL: c.base}
			_, err := inv.RegisterDependency(context.Background(), in)
			if err == nil {
				t.Fatal("no error from an inventory nothing listens for")
			}
			msg := err.Error()
			if !strings.Contains(msg, "service inventory at "+host+" unreachable") {
				t.Errorf("message %q does not name the host %s", msg, host)
			}
			for _, s := range append(c.secrets, "0f0e") {
				if strings.Contains(msg, s) {
					t.Errorf("message %q carries %q", msg, s)
				}
			}
			var app *temporal.ApplicationError
			if errors.As(err, &app) && app.NonRetryable() {
				t.Errorf("an unreachable inventory is not retryable: %v", err)
			}
			if !errors.Is(err, syscall.ECONNREFUSED) {
				t.Errorf("the cause is not kept: %v", err)
			}
		})
	}
}

// An unparsable address still gives a message, without the address.
func TestUnreachableUnparsableAddress(t *testing.T) {
	err := unreachable("http://u:p@[::1", http.MethodGet, "/service?x=1", errors.New("boom"))
	if got, want := err.Error(), "service inventory at (unparsable address) unreachable: GET /service: boom"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
