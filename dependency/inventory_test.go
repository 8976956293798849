package dependency

import (
	"reflect"
	"testing"
)

func TestServiceBodyKeepsTheCanvasFieldsAndAddsTheOwner(t *testing.T) {
	reg := Registration{ComponentName: "f-cat", DependencyName: "downstreamproductcatalog", URL: "https://x/y", SpecURL: catalogSpec, Active: true}
	owner := Owner{Namespace: "team-a", Name: "f-cat-downstream", UID: "uid-1"}
	body := ServiceBody(reg, owner)
	if body["state"] != "active" || body["serviceType"] != "API" || body["@type"] != "Service" || body["name"] != "unknown" {
		t.Fatalf("body = %v", body)
	}
	for name, want := range map[string]string{
		CharComponentName: "f-cat", CharDependencyName: "downstreamproductcatalog", CharURL: "https://x/y", CharSpecification: catalogSpec,
		CharOwnerNamespace: "team-a", CharOwnerName: "f-cat-downstream", CharOwnerUID: "uid-1",
	} {
		if got := Characteristic(body, name); got != want {
			t.Errorf("characteristic %s = %q, want %q", name, got, want)
		}
	}
	reg.Active = false
	if ServiceBody(reg, owner)["state"] != "inactive" {
		t.Error("a lost provider must make the record inactive")
	}
}

// record is a stored Service as the inventory returns it.
func record(id, component, dependency string, owner Owner) map[string]any {
	s := ServiceBody(Registration{ComponentName: component, DependencyName: dependency}, owner)
	s["id"] = id
	return s
}

func TestOwnershipOf(t *testing.T) {
	me := Owner{Namespace: "team-a", Name: "pc-dep", UID: "uid-a"}
	legacy := record("l", "pc", "dep", Owner{})
	// The Python Canvas's body has no owner characteristics at all.
	legacy["serviceCharacteristic"] = legacy["serviceCharacteristic"].([]any)[:4]
	for _, tc := range []struct {
		name   string
		record map[string]any
		me     Owner
		want   Ownership
	}{
		{"same namespace, name and uid", record("1", "pc", "dep", me), me, RecordMine},
		{"another namespace, same component and dependency names", record("1", "pc", "dep", Owner{"team-b", "pc-dep", "uid-b"}), me, RecordForeign},
		{"another namespace claiming my uid", record("1", "pc", "dep", Owner{"team-b", "pc-dep", "uid-a"}), me, RecordForeign},
		{"an earlier DependentAPI of my name (another uid)", record("1", "pc", "dep", Owner{"team-a", "pc-dep", "uid-old"}), me, RecordForeign},
		{"another DependentAPI in my namespace", record("1", "pc", "dep", Owner{"team-a", "other", "uid-a"}), me, RecordForeign},
		{"only part of an owner recorded", record("1", "pc", "dep", Owner{Namespace: "team-a"}), me, RecordForeign},
		{"written by the Python Canvas (no owner)", legacy, me, RecordUnowned},
		{"owner characteristics present but empty", record("1", "pc", "dep", Owner{}), me, RecordUnowned},
		{"a caller that names no owner owns nothing", record("1", "pc", "dep", Owner{}), Owner{}, RecordUnowned},
		{"a caller with no uid does not own a record without uid", record("1", "pc", "dep", Owner{"team-a", "pc-dep", ""}), Owner{"team-a", "pc-dep", ""}, RecordForeign},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := OwnershipOf(tc.record, tc.me); got != tc.want {
				t.Errorf("OwnershipOf = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestRecordsAreTheOwnersOnly(t *testing.T) {
	me := Owner{Namespace: "team-a", Name: "pc-dep", UID: "uid-a"}
	other := Owner{Namespace: "team-b", Name: "pc-dep", UID: "uid-b"}
	for _, tc := range []struct {
		name     string
		services []map[string]any
		keep     string
		dups     []string
	}{
		{"none", nil, "", nil},
		{"mine among others: the lowest id kept, my duplicate removed", []map[string]any{
			record("b", "pc", "dep", me), record("a0", "pc", "dep", other), record("a", "pc", "dep", me), record("0", "pc", "dep", Owner{}),
		}, "a", []string{"b"}},
		{"only another tenant's and an unowned record of the same names", []map[string]any{
			record("a", "pc", "dep", other), record("b", "pc", "dep", Owner{}),
		}, "", nil},
		{"mine under another dependency name (spec.name changed): still mine", []map[string]any{record("c", "pc", "renamed", me)}, "c", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			keep, dups := Records(tc.services, me)
			if keep != tc.keep || (len(dups)+len(tc.dups) > 0 && !reflect.DeepEqual(dups, tc.dups)) {
				t.Errorf("Records = %q, %q; want %q, %q", keep, dups, tc.keep, tc.dups)
			}
		})
	}
}
