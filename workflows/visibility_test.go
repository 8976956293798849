package workflows

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/odaflow/odaflow/oda"
)

// recordUpserts captures every DeploymentStatus the workflow upserts.
func recordUpserts(env *testsuite.TestWorkflowEnvironment) *[]string {
	var got []string
	env.OnUpsertTypedSearchAttributes(mock.Anything).Run(func(args mock.Arguments) {
		sa := args.Get(0).(temporal.SearchAttributes)
		if v, ok := sa.GetKeyword(SearchAttrDeploymentStatus); ok {
			got = append(got, v)
		}
	}).Return(nil)
	return &got
}

func installComponent(t *testing.T, in ComponentInput) []string {
	t.Helper()
	env, _ := newEnv(t)
	got := recordUpserts(env)
	at(env, time.Second, SignalResourceEvent, event(productCatalogSpec(), "h1"))
	for i, n := range exposedNames {
		at(env, time.Duration(2+i)*time.Second, SignalChildStatus, exposedReady(n))
	}
	at(env, 10*time.Second, SignalChildStatus, ChildStatus{Kind: oda.KindIdentityConfig.Name, Name: testName, UID: "uid-" + testName, IdentityProvider: "Keycloak"})
	// A child update that changes no phase must not upsert again.
	at(env, 12*time.Second, SignalChildStatus, exposedReady(exposedNames[0]))
	at(env, 20*time.Second, SignalResourceEvent, ResourceEvent{UID: testUID, Deleted: true})
	env.ExecuteWorkflow(ComponentWorkflow, in)
	if err := env.GetWorkflowError(); err != nil {
		t.Fatalf("workflow error: %v", err)
	}
	return *got
}

func TestComponentKeepsDeploymentStatusSearchAttributeCurrent(t *testing.T) {
	got := installComponent(t, ComponentInput{Namespace: testNS, Name: testName, SearchAttributes: true})
	want := []string{oda.StatusCompCon, oda.StatusIDConfOp, oda.StatusComplete}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("DeploymentStatus upserts = %v, want one per phase change %v", got, want)
	}
}

func TestSearchAttributesOffUpsertsNothing(t *testing.T) {
	if got := installComponent(t, ComponentInput{Namespace: testNS, Name: testName}); len(got) != 0 {
		t.Errorf("upserts with search attributes off = %v, want none", got)
	}
}

func TestDependentAPIPublishesItsPhase(t *testing.T) {
	env, _ := newDependentEnv(t)
	got := recordUpserts(env)
	at(env, time.Second, SignalResourceEvent, depEvent("h1"))
	at(env, 5*time.Second, SignalResourceEvent, depEvent("h2", catalogProvider("https://10.0.0.1/catalog", true)))
	at(env, 20*time.Second, SignalResourceEvent, ResourceEvent{UID: "dep-uid", Deleted: true})
	env.ExecuteWorkflow(DependentAPIWorkflow, DependentAPIInput{Namespace: testNS, Name: "dep", SearchAttributes: true})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatalf("workflow error: %v", err)
	}
	want := []string{PhaseWaitingForProvider, PhaseResolved}
	if fmt.Sprint(*got) != fmt.Sprint(want) {
		t.Errorf("DeploymentStatus upserts = %v, want %v", *got, want)
	}
}

func TestInputsCarryTheSearchAttributesSwitch(t *testing.T) {
	for _, in := range []SearchAttributesInput{ComponentInput{}, ExposedAPIInput{}, DependentAPIInput{}, IdentityConfigInput{}, SecretsManagementInput{}} {
		var on bool
		switch v := in.WithSearchAttributes(true).(type) {
		case ComponentInput:
			on = v.SearchAttributes
		case ExposedAPIInput:
			on = v.SearchAttributes
		case DependentAPIInput:
			on = v.SearchAttributes
		case IdentityConfigInput:
			on = v.SearchAttributes
		case SecretsManagementInput:
			on = v.SearchAttributes
		default:
			t.Fatalf("%T.WithSearchAttributes returned %T", in, v)
		}
		if !on {
			t.Errorf("%T.WithSearchAttributes(true) left the switch off", in)
		}
	}
}
