package workflows

import (
	"errors"
	"testing"
	"time"

	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"
)

// burst delivers several signals in one go, before the workflow's first
// task: the workflow takes them in one batch, as it does on a real server
// when an object is deleted and created again under the same name while a
// workflow task is pending (a Component upgrade that removes an API and
// adds it back).
func burst(env *testsuite.TestWorkflowEnvironment, d time.Duration, signal string, args ...any) {
	env.RegisterDelayedCallback(func() {
		for _, a := range args {
			env.SignalWorkflow(signal, a)
		}
	}, d)
}

// successorCase is one batch a per-resource workflow takes: its object's
// event, then the old object's deletion and what follows for a new object
// under the same name; the workflow must continue as new from the new
// object's latest event (wantUID, wantHash), or end when there is none.
type successorCase struct {
	name    string
	first   ResourceEvent
	after   func(old, reborn ResourceEvent) []any
	wantUID string // "" when the workflow must end
	// wantHash tells the later event of the new object from the first.
	wantHash string
}

func successorCases(first ResourceEvent) []successorCase {
	return []successorCase{
		{
			name:  "deleted and created again together",
			first: first,
			after: func(old, reborn ResourceEvent) []any {
				return []any{ResourceEvent{UID: old.UID, Deleted: true}, reborn}
			},
			wantUID: "uid-reborn", wantHash: "reborn-1",
		},
		{
			name:  "created again and at once updated",
			first: first,
			after: func(old, reborn ResourceEvent) []any {
				later := reborn
				later.Hash = "reborn-2"
				return []any{ResourceEvent{UID: old.UID, Deleted: true}, reborn, later}
			},
			wantUID: "uid-reborn", wantHash: "reborn-2",
		},
		{
			name:  "new uid first, then the new object's update",
			first: first,
			after: func(old, reborn ResourceEvent) []any {
				later := reborn
				later.Hash = "reborn-2"
				return []any{reborn, ResourceEvent{UID: old.UID, Deleted: true}, later}
			},
			wantUID: "uid-reborn", wantHash: "reborn-2",
		},
		{
			name:  "created again and deleted again",
			first: first,
			after: func(old, reborn ResourceEvent) []any {
				return []any{ResourceEvent{UID: old.UID, Deleted: true}, reborn, ResourceEvent{UID: reborn.UID, Deleted: true}}
			},
		},
		{
			name:  "deleted twice",
			first: first,
			after: func(old, _ ResourceEvent) []any {
				return []any{ResourceEvent{UID: old.UID, Deleted: true}, ResourceEvent{UID: old.UID, Deleted: true}}
			},
		},
	}
}

// checkSuccessor runs the case on env (a workflow of the kind under test
// started by run) and checks how the workflow ended.
func checkSuccessor(t *testing.T, env *testsuite.TestWorkflowEnvironment, tc successorCase, run func(), pending func(*workflow.ContinueAsNewError) *ResourceEvent) {
	t.Helper()
	reborn := tc.first
	reborn.UID, reborn.Hash = "uid-reborn", "reborn-1"
	burst(env, 0, SignalResourceEvent, append([]any{tc.first}, tc.after(tc.first, reborn)...)...)
	run()
	err := env.GetWorkflowError()
	var can *workflow.ContinueAsNewError
	switch {
	case tc.wantUID == "" && err != nil:
		t.Fatalf("workflow error = %v, want the lifecycle to end", err)
	case tc.wantUID == "":
		return
	case !errors.As(err, &can):
		t.Fatalf("workflow error = %v, want continue-as-new with the new object's event", err)
	}
	next := pending(can)
	if next == nil || next.UID != tc.wantUID || next.Hash != tc.wantHash {
		t.Errorf("next lifecycle starts from %+v, want uid %s hash %s", next, tc.wantUID, tc.wantHash)
	}
}

func decodeInput[T any](t *testing.T, can *workflow.ContinueAsNewError) T {
	t.Helper()
	var in T
	if err := converter.GetDefaultDataConverter().FromPayloads(can.Input, &in); err != nil {
		t.Fatalf("decode continue-as-new input: %v", err)
	}
	return in
}

func TestExposedAPISuccessorEventsStartTheNextLifecycle(t *testing.T) {
	first := apiEvent("h1", apiSpec("/ctk/tmf-api/productCatalogManagement/v4"), &Exposure{Ingress: ingress, ImplementationReady: true})
	for _, tc := range successorCases(first) {
		t.Run(tc.name, func(t *testing.T) {
			env, _ := newExposedEnv(t)
			checkSuccessor(t, env, tc, func() {
				env.ExecuteWorkflow(ExposedAPIWorkflow, ExposedAPIInput{Namespace: testNS, Name: "api"})
			}, func(can *workflow.ContinueAsNewError) *ResourceEvent {
				in := decodeInput[ExposedAPIInput](t, can)
				if in.State != nil {
					t.Errorf("the new lifecycle carries the old one's state: %+v", in.State)
				}
				return in.Pending
			})
		})
	}
}

func TestComponentSuccessorEventsStartTheNextLifecycle(t *testing.T) {
	for _, tc := range successorCases(event(productCatalogSpec(), "h1")) {
		t.Run(tc.name, func(t *testing.T) {
			env, _ := newEnv(t)
			checkSuccessor(t, env, tc, func() {
				env.ExecuteWorkflow(ComponentWorkflow, ComponentInput{Namespace: testNS, Name: testName})
			}, func(can *workflow.ContinueAsNewError) *ResourceEvent {
				in := decodeInput[ComponentInput](t, can)
				if in.State != nil {
					t.Errorf("the new lifecycle carries the old one's state: %+v", in.State)
				}
				return in.Pending
			})
		})
	}
}

// The shared loop of DependentAPI, IdentityConfig and SecretsManagement.
func TestResourceLoopSuccessorEventsStartTheNextLifecycle(t *testing.T) {
	for _, tc := range successorCases(depEvent("h1")) {
		t.Run(tc.name, func(t *testing.T) {
			env, _ := newDependentEnv(t)
			checkSuccessor(t, env, tc, func() {
				env.ExecuteWorkflow(DependentAPIWorkflow, DependentAPIInput{Namespace: testNS, Name: "dep"})
			}, func(can *workflow.ContinueAsNewError) *ResourceEvent {
				in := decodeInput[DependentAPIInput](t, can)
				if in.State != nil {
					t.Errorf("the new lifecycle carries the old one's state: %+v", in.State)
				}
				return in.Pending
			})
		})
	}
}
