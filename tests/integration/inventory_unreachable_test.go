package integration

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/odaflow/odaflow/dependency"
	"github.com/odaflow/odaflow/oda"
)

// readyConditionOf is an object's Ready condition (nil when none).
func readyConditionOf(u *unstructured.Unstructured) map[string]any {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		if m, _ := c.(map[string]any); m["type"] == "Ready" {
			return m
		}
	}
	return nil
}

// ownRecords counts the inventory's records of one DependentAPI (the
// inventory is shared by every test).
func ownRecords(ns, name string) int {
	n := 0
	for _, s := range stack.inventory.Services() {
		if dependency.Characteristic(s, dependency.CharOwnerNamespace) == ns && dependency.Characteristic(s, dependency.CharOwnerName) == name {
			n++
		}
	}
	return n
}

// TestDependencyRecordWhileTheInventoryIsUnreachable installs a dependant
// while the Service Inventory drops every connection: the dependency still
// resolves and the Component reaches Complete (the record is bookkeeping),
// the DependentAPI's Ready condition says ServiceInventoryUnavailable and
// names the inventory's host, with a Warning Event; once the inventory
// answers, the record is made and the reason clears.
func TestDependencyRecordWhileTheInventoryIsUnreachable(t *testing.T) {
	ns := "it-deps-inv-unreachable"
	stack.inventory.SetUnreachable(true)
	t.Cleanup(func() { stack.inventory.SetUnreachable(false) })
	invURL, err := url.Parse(stack.inventoryURL)
	if err != nil {
		t.Fatal(err)
	}

	dep, _ := installDependencyPair(t, ns, true)
	eventually(t, 60*time.Second, "the reason on the DependentAPI and a Warning Event", func() (bool, string) {
		u, err := get(oda.KindDependentAPI, ns, dep)
		if err != nil {
			return false, err.Error()
		}
		c := readyConditionOf(u)
		msg := fmt.Sprint(c["message"])
		ok := c["status"] == "True" && c["reason"] == "ServiceInventoryUnavailable" &&
			strings.Contains(msg, "service inventory at "+invURL.Host+" unreachable") &&
			containsAny(eventsFor(t, ns, dep), "Warning/ServiceInventoryUnavailable")
		return ok, fmt.Sprint(c, eventsFor(t, ns, dep))
	})
	if n := ownRecords(ns, dep); n != 0 {
		t.Fatalf("%d records made while the inventory was unreachable", n)
	}

	stack.inventory.SetUnreachable(false)
	eventually(t, 3*time.Minute, "the record made and the reason cleared", func() (bool, string) {
		u, err := get(oda.KindDependentAPI, ns, dep)
		if err != nil {
			return false, err.Error()
		}
		c := readyConditionOf(u)
		n := ownRecords(ns, dep)
		return n == 1 && c["status"] == "True" && c["reason"] != "ServiceInventoryUnavailable", fmt.Sprint(n, " records; ", c)
	})
}
