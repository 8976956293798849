package workflows

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/testsuite"

	"github.com/odaflow/odaflow/activities"
	"github.com/odaflow/odaflow/dependency"
	"github.com/odaflow/odaflow/oda"
)

const depSpecURL = "https://example.com/TMF620-ProductCatalog-v4.0.0.swagger.json"

type fakeDependency struct {
	statuses     []activities.WriteStatusInput
	registers    []activities.RegisterDependencyInput
	unregisters  []activities.RegisterDependencyInput
	released     []activities.RemoveFinalizersInput
	inventoryOff bool
	cleanupFails bool
	inventoryOn  bool // a Service Inventory is configured
}

func newDependentEnv(t *testing.T) (*testsuite.TestWorkflowEnvironment, *fakeDependency) {
	t.Helper()
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	env.RegisterWorkflow(DependentAPIWorkflow)
	var kube *activities.Kube
	var inv *activities.ServiceInventory
	env.RegisterActivity(kube)
	env.RegisterActivity(inv)
	f := &fakeDependency{}
	env.OnActivity(kube.WriteStatus, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.WriteStatusInput) error {
			f.statuses = append(f.statuses, in)
			return nil
		})
	env.OnActivity(kube.RemoveFinalizers, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.RemoveFinalizersInput) error {
			f.released = append(f.released, in)
			return nil
		})
	env.OnActivity(inv.RegisterDependency, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.RegisterDependencyInput) (activities.RegisterDependencyResult, error) {
			if f.inventoryOff {
				return activities.RegisterDependencyResult{}, errors.New("service inventory unreachable: connection refused")
			}
			f.registers = append(f.registers, in)
			if !f.inventoryOn {
				return activities.RegisterDependencyResult{}, nil
			}
			return activities.RegisterDependencyResult{ID: "svc-1"}, nil
		})
	env.OnActivity(inv.UnregisterDependency, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.RegisterDependencyInput) error {
			if f.cleanupFails {
				return errors.New("service inventory unreachable: connection refused")
			}
			f.unregisters = append(f.unregisters, in)
			return nil
		})
	return env, f
}

func depEvent(hash string, providers ...dependency.Provider) ResourceEvent {
	return ResourceEvent{
		UID: "dep-uid", Hash: hash, Generation: 1,
		Labels:     map[string]string{oda.LabelComponentName: "f-cat-productcatalogmanagement"},
		Spec:       map[string]any{"name": "downstreamproductcatalog", "apiType": "openapi", "specification": map[string]any{"url": depSpecURL}},
		Dependency: &Dependency{Providers: providers},
	}
}

func catalogProvider(url string, ready bool) dependency.Provider {
	return dependency.Provider{Namespace: testNS, Name: "r-cat-productcatalogmanagement-productcatalogmanagement-v4", APIType: "openapi",
		SpecURLs: []string{depSpecURL}, Ready: ready, URL: url}
}

// lastDepStatus returns the ready flag and url of the last status write.
func lastDepStatus(t *testing.T, f *fakeDependency) (bool, string) {
	t.Helper()
	if len(f.statuses) == 0 {
		t.Fatal("no status written")
	}
	s := f.statuses[len(f.statuses)-1].Status
	ready, _ := s["implementation"].(map[string]any)["ready"].(bool)
	url, _ := s["depapiStatus"].(map[string]any)["url"].(string)
	return ready, url
}

func TestDependentAPIWaitsDurablyThenFollowsItsProvider(t *testing.T) {
	env, f := newDependentEnv(t)
	var seen []string
	record := func() {
		ready, url := lastDepStatus(t, f)
		seen = append(seen, map[bool]string{true: "ready ", false: "waiting "}[ready]+url)
	}
	at(env, time.Second, SignalResourceEvent, depEvent("h1"))
	env.RegisterDelayedCallback(record, 2*time.Second)
	// The provider appears an hour later; meanwhile nothing happens at all.
	at(env, time.Hour, SignalResourceEvent, depEvent("h2", catalogProvider("https://10.0.0.1/r-cat/v4", true)))
	env.RegisterDelayedCallback(record, time.Hour+time.Second)
	at(env, 2*time.Hour, SignalResourceEvent, depEvent("h3", catalogProvider("https://10.0.0.2/r-cat/v4", true)))
	env.RegisterDelayedCallback(record, 2*time.Hour+time.Second)
	at(env, 3*time.Hour, SignalResourceEvent, depEvent("h4", catalogProvider("https://10.0.0.2/r-cat/v4", false)))
	env.RegisterDelayedCallback(record, 3*time.Hour+time.Second)
	at(env, 4*time.Hour, SignalResourceEvent, depEvent("h5"))
	env.RegisterDelayedCallback(record, 4*time.Hour+time.Second)
	at(env, 5*time.Hour, SignalResourceEvent, ResourceEvent{UID: "dep-uid", Deleted: true})
	env.ExecuteWorkflow(DependentAPIWorkflow, DependentAPIInput{Namespace: testNS, Name: "dep"})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	want := []string{"waiting ", "ready https://10.0.0.1/r-cat/v4", "ready https://10.0.0.2/r-cat/v4", "waiting ", "waiting "}
	if len(seen) != len(want) {
		t.Fatalf("statuses = %q, want %q", seen, want)
	}
	for i := range want {
		if seen[i] != want[i] {
			t.Fatalf("statuses = %q, want %q", seen, want)
		}
	}
	if len(f.statuses) != 5 {
		t.Errorf("status writes = %d, want 5 (one per change, none while waiting)", len(f.statuses))
	}
	if f.statuses[0].Event == nil || f.statuses[1].Event == nil || f.statuses[1].Event.Reason != PhaseResolved {
		t.Errorf("events = %+v, %+v; want one when waiting starts and one on resolution", f.statuses[0].Event, f.statuses[1].Event)
	}
}

func TestDependentAPIRecordsInTheServiceInventoryAndSurvivesItsOutage(t *testing.T) {
	env, f := newDependentEnv(t)
	f.inventoryOn, f.inventoryOff = true, true
	at(env, time.Second, SignalResourceEvent, depEvent("h1", catalogProvider("https://10.0.0.1/v4", true)))
	env.RegisterDelayedCallback(func() {
		ready, url := lastDepStatus(t, f)
		if !ready || url == "" {
			t.Errorf("an unreachable inventory held up the resolution: ready=%v url=%q", ready, url)
		}
		if c := f.statuses[len(f.statuses)-1]; c.Event == nil || c.Event.Reason != "ServiceInventoryUnavailable" {
			t.Errorf("the outage is not visible: %+v", c.Event)
		}
		f.inventoryOff = false
	}, 30*time.Second) // after three quick attempts, before the backoff timer
	at(env, 3*time.Hour, SignalResourceEvent, ResourceEvent{UID: "dep-uid", Hash: "h2", Deleting: true, Finalizers: []string{oda.Finalizer},
		Labels: depEvent("").Labels, Spec: depEvent("").Spec, Dependency: depEvent("").Dependency})
	at(env, 4*time.Hour, SignalResourceEvent, ResourceEvent{UID: "dep-uid", Deleted: true})
	env.ExecuteWorkflow(DependentAPIWorkflow, DependentAPIInput{Namespace: testNS, Name: "dep"})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if len(f.registers) != 1 || f.registers[0].Registration.URL != "https://10.0.0.1/v4" || !f.registers[0].Registration.Active {
		t.Fatalf("registrations = %+v, want one after the inventory came back", f.registers)
	}
	var svcID string
	for _, s := range f.statuses {
		if id, ok := s.Status["depapiStatus"].(map[string]any)["svcInvID"].(string); ok {
			svcID = id
		}
	}
	if svcID != "svc-1" {
		t.Errorf("svcInvID never reported")
	}
	if len(f.unregisters) != 1 || len(f.released) != 1 {
		t.Fatalf("deletion: unregisters=%d released=%d, want 1 and 1", len(f.unregisters), len(f.released))
	}
	// The inventory deletes only records carrying the DependentAPI's own
	// namespace, name and uid, so the deletion must name them.
	if u := f.unregisters[0]; u.Ref.Namespace != testNS || u.Ref.Name != "dep" || u.UID != "dep-uid" {
		t.Errorf("unregister names %s/%s uid %q, want %s/dep uid dep-uid", u.Ref.Namespace, u.Ref.Name, u.UID, testNS)
	}
}

func TestDependentAPIWithoutSpecificationIsFailed(t *testing.T) {
	env, f := newDependentEnv(t)
	ev := depEvent("h1")
	ev.Spec = map[string]any{"name": "x", "apiType": "openapi"}
	at(env, time.Second, SignalResourceEvent, ev)
	at(env, time.Hour, SignalResourceEvent, ResourceEvent{UID: "dep-uid", Deleted: true})
	env.ExecuteWorkflow(DependentAPIWorkflow, DependentAPIInput{Namespace: testNS, Name: "dep"})
	if len(f.statuses) != 1 || f.statuses[0].Event == nil || f.statuses[0].Event.Reason != "InvalidSpec" || f.statuses[0].Event.Type != "Warning" {
		t.Fatalf("statuses = %+v", f.statuses)
	}
	cond := f.statuses[0].Status["conditions"].([]any)[0].(map[string]any)
	if cond["status"] != "False" || cond["reason"] != "InvalidSpec" {
		t.Errorf("condition = %v", cond)
	}
}

func TestDependentAPIBlockedDeletionHasAWayOut(t *testing.T) {
	env, f := newDependentEnv(t)
	f.inventoryOn, f.cleanupFails = true, true
	base := depEvent("")
	deleting := func(hash string, ann map[string]string) ResourceEvent {
		return ResourceEvent{UID: "dep-uid", Hash: hash, Deleting: true, Finalizers: []string{oda.Finalizer}, Labels: base.Labels, Annotations: ann, Spec: base.Spec, Dependency: base.Dependency}
	}
	at(env, time.Second, SignalResourceEvent, depEvent("h1", catalogProvider("https://x/v4", true)))
	at(env, time.Minute, SignalResourceEvent, deleting("h2", nil))
	// Six failed attempts take 1+2+4+8+10+10 minutes; then the annotation.
	at(env, 3*time.Hour, SignalResourceEvent, deleting("h3", map[string]string{oda.AnnotationSkipCleanup: "true"}))
	at(env, 4*time.Hour, SignalResourceEvent, ResourceEvent{UID: "dep-uid", Deleted: true})
	env.ExecuteWorkflow(DependentAPIWorkflow, DependentAPIInput{Namespace: testNS, Name: "dep"})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	var blocked, skipped bool
	for _, s := range f.statuses {
		if s.Event != nil && s.Event.Reason == "CleanupBlocked" {
			blocked = true
		}
		if s.Event != nil && s.Event.Reason == "CleanupSkipped" {
			skipped = true
		}
	}
	if !blocked || !skipped || len(f.released) != 1 || len(f.unregisters) != 0 {
		t.Fatalf("blocked=%v skipped=%v released=%d", blocked, skipped, len(f.released))
	}
}
