package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/odaflow/odaflow/oda"
	"github.com/odaflow/odaflow/secrets"
	"github.com/odaflow/odaflow/tests/fixtures"
	"github.com/odaflow/odaflow/workflows"
)

// canHistoryLimit makes every lifecycle of the test continue as new after
// almost every step, so that each hand-over of state is exercised: a
// lifecycle started idle is at 7 events when its first object event is
// handled.
const canHistoryLimit = 6

// TestContinueAsNewKeepsEveryLifecycle runs a provider and a dependant
// Component whose every workflow (Component, ExposedAPI, IdentityConfig,
// DependentAPI) continues as new many times on the real server: the state
// handed over is enough for the next run to carry on, so both reach
// Complete, a later change is followed, and nothing is created twice. It
// records the first run and a continued run of each kind for the replay
// suite.
func TestContinueAsNewKeepsEveryLifecycle(t *testing.T) {
	ns := "it-can"
	provider := fixtures.WithOwnPaths(fixtures.WithoutDependentAPIs(fixtures.ProductCatalog(ns, providerComponent)))
	dependant := fixtures.WithOwnPaths(fixtures.ProductCatalog(ns, dependantComponent))
	// The lifecycles start before the objects exist, with a small history
	// limit; the watcher's signal-with-start then finds them running.
	var ids []string
	for _, comp := range []*unstructured.Unstructured{provider, dependant} {
		spec, _, _ := unstructured.NestedMap(comp.Object, "spec")
		desired, errs := oda.DesiredChildren(comp.GetName(), spec)
		if len(errs) > 0 {
			t.Fatalf("fixture %s: %v", comp.GetName(), errs)
		}
		ids = append(ids, startSmallLifecycle(t, oda.KindComponent.Name, ns, comp.GetName()))
		for _, kind := range []oda.Kind{oda.KindExposedAPI, oda.KindIdentityConfig, oda.KindDependentAPI} {
			for _, c := range desired.ByKind(kind.Name) {
				ids = append(ids, startSmallLifecycle(t, kind.Name, ns, c.Name))
			}
		}
	}
	createsBefore := keycloakClientCreates()
	depName, _ := installDependencyPair(t, ns, true)

	uids := childUIDs(t, ns, providerComponent, dependantComponent)
	// A change after install: an implementation goes down and comes back.
	setEndpoints(t, ns, "ctk-prodcatapi", false)
	waitPhase(t, ns, providerComponent, oda.StatusCompCon, 60*time.Second)
	setEndpoints(t, ns, "ctk-prodcatapi", true)
	waitPhase(t, ns, providerComponent, oda.StatusComplete, 60*time.Second)
	waitPhase(t, ns, dependantComponent, oda.StatusComplete, 60*time.Second)

	for _, id := range ids {
		if runs := runsOf(t, id); len(runs) < 2 {
			t.Errorf("%s has %d run(s), want it to have continued as new", id, len(runs))
		}
	}
	if after := childUIDs(t, ns, providerComponent, dependantComponent); fmt.Sprint(after) != fmt.Sprint(uids) {
		t.Errorf("children changed across continue-as-new:\nbefore %v\nafter  %v", uids, after)
	}
	if n := keycloakClientCreates() - createsBefore; n != 2 {
		t.Errorf("Keycloak clients created = %d, want one per Component (2)", n)
	}

	// The replay suite keeps the first run (ending in continue-as-new) and
	// the newest (started from handed-over state) of each kind.
	record := map[string]string{
		oda.WorkflowID(oda.KindComponent.Name, ns, providerComponent):                                 "component",
		oda.WorkflowID(oda.KindExposedAPI.Name, ns, providerComponent+"-productcatalogmanagement-v4"): "exposedapi",
		oda.WorkflowID(oda.KindIdentityConfig.Name, ns, providerComponent):                            "identityconfig",
		oda.WorkflowID(oda.KindDependentAPI.Name, ns, depName):                                        "dependentapi",
	}
	for id, prefix := range record {
		runs := runsOf(t, id)
		if len(runs) < 2 {
			t.Errorf("%s: %d run(s), nothing to record", id, len(runs))
			continue
		}
		recordRun(t, id, runID(runs[len(runs)-1]), prefix+"-continue-as-new-first-run.json")
		recordRun(t, id, busiestContinuedRun(t, id), prefix+"-continue-as-new-continued-run.json")
	}
	deleteComponent(t, ns, dependantComponent)
	deleteComponent(t, ns, providerComponent)
}

// TestSecretsManagementContinuesAsNew: a SecretsManagement whose lifecycle
// continues as new after almost every step still configures its Vault
// store once, reaches ready, and removes the store on uninstall. It records
// a first and a continued run for the replay suite.
func TestSecretsManagementContinuesAsNew(t *testing.T) {
	requireVault(t)
	ns := "it-can-secrets"
	name := "cans-productcatalogmanagement"
	readyNamespace(t, ns)
	ensureServiceAccount(t, ns, "default")
	newSidecarWorkload(t, ns, name).runPod(t, "aaaaa", true)
	id := startSmallLifecycle(t, oda.KindSecretsManagement.Name, ns, name)
	names := secrets.NamesFor(ns, name)

	create(t, oda.KindComponent, withSecretsManagement(fixtures.WithOwnPaths(fixtures.WithoutDependentAPIs(fixtures.ProductCatalog(ns, name))), 5000))
	waitVaultStore(t, names, true, 60*time.Second)
	waitSecrets(t, ns, name, "ready", 60*time.Second, func(s smState) bool { return s.ready && s.reason == workflows.PhaseSecretsReady })
	waitPhase(t, ns, name, oda.StatusComplete, 60*time.Second)
	// An upgrade after the hand-overs: a run started from handed-over
	// state reconfigures and reports.
	mergePatch(t, oda.KindComponent, ns, name, `{"spec":{"securityFunction":{"secretsManagement":{"sideCar":{"port":5001}}}}}`)
	eventually(t, 60*time.Second, "the SecretsManagement follows the new port", func() (bool, string) {
		u := mustGet(t, oda.KindSecretsManagement, ns, name)
		port, _, _ := unstructured.NestedInt64(u.Object, "spec", "sideCar", "port")
		return port == 5001 && secretsState(u).ready, fmt.Sprint(port, secretsState(u))
	})
	waitPhase(t, ns, name, oda.StatusComplete, 60*time.Second)
	runs := runsOf(t, id)
	if len(runs) < 2 {
		t.Fatalf("%s has %d run(s), want it to have continued as new", id, len(runs))
	}
	recordRun(t, id, runID(runs[len(runs)-1]), "secretsmanagement-continue-as-new-first-run.json")
	recordRun(t, id, busiestContinuedRun(t, id), "secretsmanagement-continue-as-new-continued-run.json")
	deleteComponent(t, ns, name)
	waitVaultStore(t, names, false, 60*time.Second)
}

// startSmallLifecycle starts a kind's lifecycle workflow the way the
// watcher does, with canHistoryLimit, and returns its workflow id.
func startSmallLifecycle(t *testing.T, kind, ns, name string) string {
	t.Helper()
	var in any
	switch kind {
	case oda.KindComponent.Name:
		in = workflows.ComponentInput{Namespace: ns, Name: name, HistoryLimit: canHistoryLimit}
	case oda.KindExposedAPI.Name:
		in = workflows.ExposedAPIInput{Namespace: ns, Name: name, HistoryLimit: canHistoryLimit}
	case oda.KindIdentityConfig.Name:
		in = workflows.IdentityConfigInput{Namespace: ns, Name: name, HistoryLimit: canHistoryLimit, CheckInterval: 10 * time.Minute}
	case oda.KindDependentAPI.Name:
		in = workflows.DependentAPIInput{Namespace: ns, Name: name, HistoryLimit: canHistoryLimit}
	case oda.KindSecretsManagement.Name:
		in = workflows.SecretsManagementInput{Namespace: ns, Name: name, HistoryLimit: canHistoryLimit, CheckInterval: 10 * time.Minute}
	}
	if sa, ok := in.(workflows.SearchAttributesInput); ok {
		in = sa.WithSearchAttributes(true)
	}
	id := oda.WorkflowID(kind, ns, name)
	wf := map[string]any{
		oda.KindComponent.Name: workflows.ComponentWorkflow, oda.KindExposedAPI.Name: workflows.ExposedAPIWorkflow,
		oda.KindIdentityConfig.Name: workflows.IdentityConfigWorkflow, oda.KindDependentAPI.Name: workflows.DependentAPIWorkflow,
		oda.KindSecretsManagement.Name: workflows.SecretsManagementWorkflow,
	}[kind]
	if _, err := stack.tc.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{
		ID: id, TaskQueue: stack.common.TaskQueue, WorkflowIDReusePolicy: 1,
	}, wf, in); err != nil {
		t.Fatalf("start %s: %v", id, err)
	}
	return id
}

// childUIDs lists kind/name=uid of every child of the components.
func childUIDs(t *testing.T, ns string, components ...string) []string {
	t.Helper()
	var out []string
	for _, comp := range components {
		for _, kind := range []oda.Kind{oda.KindExposedAPI, oda.KindIdentityConfig, oda.KindDependentAPI} {
			for _, name := range listChildren(t, kind, ns, comp) {
				out = append(out, kind.Name+"/"+name+"="+string(mustGet(t, kind, ns, name).GetUID()))
			}
		}
	}
	return out
}

// keycloakClientCreates counts client creations the Keycloak double served.
func keycloakClientCreates() int {
	n := 0
	for _, r := range stack.keycloak.Requests() {
		if r.Method == "POST" && strings.HasSuffix(r.Path, "/admin/realms/"+keycloakRealm+"/clients") && r.Status == 201 {
			n++
		}
	}
	return n
}

// busiestContinuedRun picks, among the runs started by continue-as-new
// (all but the first; runs are listed newest first), the one with the
// longest history: a run that took over state and then did work is the
// one worth replaying. The list comes from
// Temporal's visibility store, which lags behind: a lifecycle that went
// through its runs in under a second may not be listed whole yet, so it
// waits until a continued run that did some work is listed.
func busiestContinuedRun(t *testing.T, id string) string {
	t.Helper()
	best, most := "", -1
	eventually(t, 20*time.Second, id+": a listed continued run that did some work", func() (bool, string) {
		runs := runsOf(t, id)
		best, most = "", -1
		for _, r := range runs[:max(len(runs)-1, 0)] {
			n := 0
			it := stack.tc.GetWorkflowHistory(context.Background(), id, runID(r), false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
			for it.HasNext() {
				if _, err := it.Next(); err != nil {
					t.Fatalf("history of %s/%s: %v", id, r, err)
				}
				n++
			}
			if n > most {
				best, most = runID(r), n
			}
		}
		// A continued run that only started proves nothing in the replay.
		return most >= 5, fmt.Sprintf("%d runs listed, the busiest continued one has %d events", len(runs), most)
	})
	return best
}

// runID is the run id part of a runsOf entry ("<run id>:<status>").
func runID(entry string) string { return strings.SplitN(entry, ":", 2)[0] }
