// Package serviceinventory_test is the Service Inventory contract: the same
// tests run odaflow's ServiceInventory activities against the TMF638 double
// always, and against a real TMF638 Service Inventory when
// SERVICE_INVENTORY_URL names one (the API base, up to /service).
package serviceinventory_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/odaflow/odaflow/activities"
	"github.com/odaflow/odaflow/dependency"
	"github.com/odaflow/odaflow/internal/doubles/serviceinventory"
	"github.com/odaflow/odaflow/oda"
)

const basePath = "/tmf-api/serviceInventoryManagement/v4"

type target struct {
	name   string
	url    string
	double *serviceinventory.Double // nil for a real inventory
}

func targets(t *testing.T) []target {
	d := serviceinventory.New(basePath)
	srv := httptest.NewServer(d)
	t.Cleanup(srv.Close)
	out := []target{{name: "double", url: srv.URL + basePath, double: d}}
	if u := os.Getenv("SERVICE_INVENTORY_URL"); u != "" {
		out = append(out, target{name: "real", url: u})
	} else {
		t.Log("SERVICE_INVENTORY_URL not set: the contract ran against the TMF638 double only")
	}
	return out
}

// input is a request of the DependentAPI owner, the contract's usual one.
func input(reg dependency.Registration) activities.RegisterDependencyInput {
	return activities.RegisterDependencyInput{Registration: reg, Ref: oda.Ref{Kind: oda.KindDependentAPI.Name, Namespace: owner.Namespace, Name: owner.Name}, UID: owner.UID, HasFinalizer: true}
}

var owner = dependency.Owner{Namespace: "team-a", Name: "contract-dep", UID: fmt.Sprintf("uid-%d", time.Now().UnixNano())}

func registration(component string, url string) dependency.Registration {
	return dependency.Registration{ComponentName: component, DependencyName: "downstreamproductcatalog", URL: url,
		SpecURL: "https://example.com/TMF620.json", Active: true}
}

// records lists what the inventory holds for a component.
func records(t *testing.T, tg target, component string) []map[string]any {
	t.Helper()
	var out []map[string]any
	// A plain GET, so the check does not trust the code under test.
	req, _ := http.NewRequest(http.MethodGet, tg.url+"/service?serviceCharacteristic.value="+component, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := decodeJSON(resp, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestContract(t *testing.T) {
	for _, tg := range targets(t) {
		t.Run(tg.name, func(t *testing.T) {
			ctx := context.Background()
			inv := &activities.ServiceInventory{URL: tg.url, HTTP: &http.Client{Timeout: 10 * time.Second}}
			component := fmt.Sprintf("odaflow-contract-%d", time.Now().UnixNano())
			t.Cleanup(func() {
				_ = inv.UnregisterDependency(ctx, input(registration(component, "")))
			})

			first, err := inv.RegisterDependency(ctx, input(registration(component, "https://a/v4")))
			if err != nil || first.ID == "" {
				t.Fatalf("create: %v, id %q", err, first.ID)
			}
			// Again with a new url: the same record, patched; never a second one.
			again, err := inv.RegisterDependency(ctx, input(registration(component, "https://b/v4")))
			if err != nil || again.ID != first.ID {
				t.Fatalf("update: %v, id %q, want %q", err, again.ID, first.ID)
			}
			recs := records(t, tg, component)
			if len(recs) != 1 || dependency.Characteristic(recs[0], dependency.CharURL) != "https://b/v4" || recs[0]["state"] != "active" {
				t.Fatalf("records after update = %v", recs)
			}
			// A lost provider leaves the record, inactive.
			lost := registration(component, "")
			lost.Active = false
			if _, err := inv.RegisterDependency(ctx, input(lost)); err != nil {
				t.Fatal(err)
			}
			if recs := records(t, tg, component); len(recs) != 1 || recs[0]["state"] != "inactive" {
				t.Fatalf("records after the provider left = %v", recs)
			}
			if err := inv.UnregisterDependency(ctx, input(lost)); err != nil {
				t.Fatal(err)
			}
			if recs := records(t, tg, component); len(recs) != 0 {
				t.Fatalf("records after unregister = %v", recs)
			}
			// Unregistering what is gone is success (a retried delete).
			if err := inv.UnregisterDependency(ctx, input(lost)); err != nil {
				t.Fatalf("second unregister: %v", err)
			}
		})
	}
}

func TestOwnDuplicatesAreRemoved(t *testing.T) {
	d := serviceinventory.New(basePath)
	srv := httptest.NewServer(d)
	defer srv.Close()
	reg := registration("f-cat", "https://a/v4")
	keep := d.Put(dependency.ServiceBody(reg, owner))
	d.Put(dependency.ServiceBody(reg, owner))
	d.Put(dependency.ServiceBody(registration("g-cat", "https://a/v4"), dependency.Owner{Namespace: "team-b", Name: "g", UID: "uid-g"})) // another component's: untouched
	inv := &activities.ServiceInventory{URL: srv.URL + basePath}
	res, err := inv.RegisterDependency(context.Background(), input(reg))
	if err != nil || res.ID != keep {
		t.Fatalf("register = %q, %v; want %q", res.ID, err, keep)
	}
	if n := len(d.Services()); n != 2 {
		t.Fatalf("services = %d, want 2 (the duplicate removed, the other component's kept)", n)
	}
}

// TestOtherOwnersRecordsAreNeverChanged: records of the same component and
// dependency names that name another DependentAPI (another namespace, or
// an earlier uid) or none (the Python Canvas's) are neither patched nor
// deleted by a register or unregister; the owner gets a record of its own.
func TestOtherOwnersRecordsAreNeverChanged(t *testing.T) {
	d := serviceinventory.New(basePath)
	srv := httptest.NewServer(d)
	defer srv.Close()
	reg := registration("f-cat", "https://victim/v4")
	victim := d.Put(dependency.ServiceBody(reg, dependency.Owner{Namespace: "team-b", Name: owner.Name, UID: "uid-victim"}))
	earlier := d.Put(dependency.ServiceBody(reg, dependency.Owner{Namespace: owner.Namespace, Name: owner.Name, UID: "uid-earlier"}))
	legacyBody := dependency.ServiceBody(reg, dependency.Owner{})
	legacyBody["serviceCharacteristic"] = legacyBody["serviceCharacteristic"].([]any)[:4]
	legacy := d.Put(legacyBody)
	before := d.Services()

	inv := &activities.ServiceInventory{URL: srv.URL + basePath}
	ctx := context.Background()
	res, err := inv.RegisterDependency(ctx, input(registration("f-cat", "https://attacker/v4")))
	if err != nil || res.ID == "" || res.ID == victim || res.ID == earlier || res.ID == legacy {
		t.Fatalf("register = %q, %v; want a record of its own", res.ID, err)
	}
	if err := inv.UnregisterDependency(ctx, input(reg)); err != nil {
		t.Fatal(err)
	}
	after := d.Services()
	if _, mine := after[res.ID]; mine || len(after) != 3 {
		t.Errorf("after unregister: %d records, own %s still there: %v", len(after), res.ID, after)
	}
	for _, id := range []string{victim, earlier, legacy} {
		if !reflect.DeepEqual(after[id], before[id]) {
			t.Errorf("record %s changed:\nbefore %v\nafter  %v", id, before[id], after[id])
		}
	}
	for _, r := range d.Requests() {
		if r.Method != http.MethodGet && r.Method != http.MethodPost && !strings.HasSuffix(r.Path, "/"+res.ID) {
			t.Errorf("%s %s touched a record that is not the owner's", r.Method, r.Path)
		}
	}
}

func TestARequestWithoutOwnerChangesNothing(t *testing.T) {
	d := serviceinventory.New(basePath)
	srv := httptest.NewServer(d)
	defer srv.Close()
	reg := registration("f-cat", "https://a/v4")
	d.Put(dependency.ServiceBody(reg, owner))
	inv := &activities.ServiceInventory{URL: srv.URL + basePath}
	in := input(reg)
	in.UID = ""
	var appErr *temporal.ApplicationError
	if _, err := inv.RegisterDependency(context.Background(), in); !errors.As(err, &appErr) || !appErr.NonRetryable() {
		t.Errorf("register without uid: %v, want a non-retryable refusal", err)
	}
	if err := inv.UnregisterDependency(context.Background(), in); !errors.As(err, &appErr) || !appErr.NonRetryable() {
		t.Errorf("unregister without uid: %v, want a non-retryable refusal", err)
	}
	if n := len(d.Requests()); n != 0 {
		t.Errorf("%d requests made for a request naming no owner", n)
	}
}

func TestOutagesAreRetryableAndRefusalsAreNot(t *testing.T) {
	d := serviceinventory.New(basePath)
	srv := httptest.NewServer(d)
	defer srv.Close()
	inv := &activities.ServiceInventory{URL: srv.URL + basePath}
	ctx := context.Background()
	d.SetDown(true)
	_, err := inv.RegisterDependency(ctx, input(registration("c", "https://a")))
	var appErr *temporal.ApplicationError
	if err == nil || (errors.As(err, &appErr) && appErr.NonRetryable()) {
		t.Fatalf("503: err = %v, want a retryable error", err)
	}
	d.SetDown(false)
	bad := registration("c", "https://a")
	bad.ComponentName = ""
	// A state the inventory refuses: 400, not worth retrying.
	_, err = (&activities.ServiceInventory{URL: srv.URL + "/nowhere"}).RegisterDependency(ctx, input(bad))
	if !errors.As(err, &appErr) || !appErr.NonRetryable() || appErr.Type() != activities.ErrTypeInventoryRejected {
		t.Fatalf("404 on a wrong base path: err = %v, want non-retryable %s", err, activities.ErrTypeInventoryRejected)
	}
	closed := httptest.NewServer(d)
	closed.Close()
	_, err = (&activities.ServiceInventory{URL: closed.URL + basePath}).RegisterDependency(ctx, input(bad))
	if err == nil || (errors.As(err, &appErr) && appErr.NonRetryable()) {
		t.Fatalf("connection refused: err = %v, want a retryable error", err)
	}
}

func TestNoInventoryConfiguredMakesNoRequests(t *testing.T) {
	inv := &activities.ServiceInventory{}
	res, err := inv.RegisterDependency(context.Background(), activities.RegisterDependencyInput{Registration: registration("c", "u")})
	if err != nil || res.ID != "" {
		t.Fatalf("register without inventory = %q, %v", res.ID, err)
	}
}

func decodeJSON(resp *http.Response, out any) error {
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("list answered %d", resp.StatusCode)
	}
	return json.NewDecoder(resp.Body).Decode(out)
}
