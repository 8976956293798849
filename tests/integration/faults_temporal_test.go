package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/odaflow/odaflow/internal/localstack"
	"github.com/odaflow/odaflow/oda"
	"github.com/odaflow/odaflow/workflows"
)

// TestTemporalServerRestartMidLifecycle stops a file-backed Temporal
// server while a Component is half way (children applied, gateway without
// address, implementations down), changes the world while it is down (the
// gateway gets its address, the implementations come up, a second
// Component is applied), and starts the server again on the same file. The
// watcher's signals and starts from the outage must not be lost: both
// Components reach Complete, the first in the same workflow runs, and
// nothing is created twice.
func TestTemporalServerRestartMidLifecycle(t *testing.T) {
	started := time.Now()
	tools, err := localstack.LookupTools()
	if err != nil {
		t.Fatalf("the Temporal CLI: %v", err)
	}
	attrs := workflows.SearchAttributeTypes()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	temporal, err := localstack.StartTemporal(ctx, localstack.Options{ToolsDir: tools, DataDir: t.TempDir(), Persist: true, SearchAttributes: attrs})
	if err != nil {
		t.Fatalf("start a file-backed Temporal: %v", err)
	}
	t.Cleanup(func() { _ = temporal.Stop() })
	tc, err := temporal.Dial(ctx)
	if err != nil {
		t.Fatalf("dial Temporal: %v", err)
	}
	t.Cleanup(tc.Close)

	created := watchCreations(t, "it-tr-")
	fs := startFaultStack(t, "it-tr-*", "odaflow-it-tr", temporal.Address)
	fs.startWorker(t, temporal.Address, nil)
	kcFrom := len(stack.keycloak.Requests())

	ns, name := "it-tr-restart", "tr-productcatalogmanagement"
	installHalfWay(t, ns, name)
	waitIdentity(t, ns, name)
	var apis []string
	for _, api := range listChildren(t, oda.KindExposedAPI, ns, name) {
		apis = append(apis, strings.Replace(api, name, "C", 1))
	}
	runsBefore := lifecycleRunsIn(t, tc, ns, name, apis)

	if err := temporal.StopServer(); err != nil {
		t.Fatalf("stop Temporal: %v", err)
	}
	down := time.Now()
	// While Temporal is down: the world changes under the watcher, which
	// can neither signal nor start workflows.
	bringUpGatewayAndImplementations(t, ns)
	ns2 := "it-tr-during"
	name2 := installReady(t, ns2)
	// The outage itself is what is tested: for these seconds the watcher's
	// signals and starts fail and back off.
	time.Sleep(5 * time.Second)
	if err := temporal.StartServer(ctx); err != nil {
		t.Fatalf("start Temporal again: %v", err)
	}
	t.Logf("Temporal down for %s", time.Since(down).Round(time.Millisecond))

	waitPhase(t, ns, name, oda.StatusComplete, 2*time.Minute)
	waitPhase(t, ns2, name2, oda.StatusComplete, 2*time.Minute)
	t.Logf("both Complete %s after the restart began", time.Since(down).Round(time.Millisecond))
	if bad := sameLifecycles(runsBefore, lifecycleRunsIn(t, tc, ns, name, apis)); len(bad) > 0 {
		t.Errorf("the same lifecycles must continue: %v", bad)
	}
	if bad := sameLifecycles(nil, lifecycleRunsIn(t, tc, ns2, name2, apis)); len(bad) > 0 {
		t.Errorf("the Component applied during the outage: %v", bad)
	}
	for _, n := range []string{ns, ns2} {
		kinds, twice := created.objects(n)
		want := "map[Component:1 ExposedAPI:4 IdentityConfig:1 Secret:1 ServiceMonitor:1 VirtualService:4]"
		if fmt.Sprint(kinds) != want {
			t.Errorf("%s: objects %v, want %s", n, kinds, want)
		}
		if len(twice) > 0 {
			t.Errorf("%s: created twice: %v", n, twice)
		}
	}
	if got := keycloakWrites(kcFrom)["POST /admin/realms/*/clients 201"]; got != 2 {
		t.Errorf("Keycloak clients created: %d, want 2 (one per IdentityConfig)", got)
	}
	t.Logf("Temporal restart test: %s", time.Since(started).Round(time.Millisecond))
}

// lifecycleRunsIn is lifecycleRuns on another Temporal server.
func lifecycleRunsIn(t *testing.T, tc client.Client, ns, name string, apis []string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, id := range lifecycleIDs(ns, name, apis) {
		out[id] = runsIn(t, tc, id)
	}
	return out
}
