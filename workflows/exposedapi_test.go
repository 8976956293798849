package workflows

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/odaflow/odaflow/activities"
	"github.com/odaflow/odaflow/gateway"
	"github.com/odaflow/odaflow/oda"
)

type fakeExposure struct {
	exposes   []activities.ExposeInput
	unexposes []activities.UnexposeInput
	statuses  []activities.WriteStatusInput
	failNext  int
	// gatewayDown makes every Unexpose that cleans up fail.
	gatewayDown bool
}

func newExposedEnv(t *testing.T) (*testsuite.TestWorkflowEnvironment, *fakeExposure) {
	t.Helper()
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	env.RegisterWorkflow(ExposedAPIWorkflow)
	var exposure *activities.Exposure
	var kube *activities.Kube
	env.RegisterActivity(exposure)
	env.RegisterActivity(kube)
	f := &fakeExposure{}
	env.OnActivity(exposure.Expose, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.ExposeInput) (activities.ExposeResult, error) {
			if f.failNext > 0 {
				f.failNext--
				return activities.ExposeResult{}, temporal.NewNonRetryableApplicationError("gateway CRD missing", "Boom", errors.New("boom"))
			}
			f.exposes = append(f.exposes, in)
			phase := activities.PhaseExposed
			switch {
			case in.Failure != nil:
				phase = activities.PhaseFailed
			case in.Ingress == nil:
				phase = activities.PhaseWaiting
			case !in.ImplementationReady:
				phase = activities.PhaseNotReady
			}
			applied := in.Applied
			if !in.SkipApply && in.Failure == nil {
				applied = []activities.ObjectRef{{APIVersion: "networking.istio.io/v1", Kind: "VirtualService", Namespace: testNS, Name: "api", Owned: true}}
			}
			return activities.ExposeResult{Applied: applied, Phase: phase}, nil
		})
	env.OnActivity(exposure.Unexpose, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.UnexposeInput) error {
			if f.gatewayDown && !in.SkipCleanup {
				return temporal.NewApplicationError("kong admin: connection refused", "KongUnavailable")
			}
			f.unexposes = append(f.unexposes, in)
			return nil
		})
	env.OnActivity(kube.WriteStatus, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.WriteStatusInput) error {
			f.statuses = append(f.statuses, in)
			return nil
		})
	return env, f
}

func apiSpec(path string) map[string]any {
	return map[string]any{"name": "productcatalogmanagement", "apiType": "openapi", "implementation": "ctk-prodcatapi", "path": path, "port": int64(8080)}
}

func apiEvent(hash string, spec map[string]any, exp *Exposure) ResourceEvent {
	return ResourceEvent{UID: "api-uid", Hash: hash, Spec: spec, Exposure: exp}
}

var ingress = &gateway.Ingress{IP: "34.159.217.74", Ports: []gateway.Port{{Name: "http2", Port: 80}}}

func TestExposedAPIWaitsForTheAddressThenFollowsReadiness(t *testing.T) {
	env, f := newExposedEnv(t)
	spec := apiSpec("/ctk/tmf-api/productCatalogManagement/v4")
	at(env, time.Second, SignalResourceEvent, apiEvent("h1", spec, &Exposure{}))
	// An hour later the load balancer gets its address: no polling meanwhile.
	at(env, time.Hour, SignalResourceEvent, apiEvent("h2", spec, &Exposure{Ingress: ingress}))
	at(env, time.Hour+time.Minute, SignalResourceEvent, apiEvent("h3", spec, &Exposure{Ingress: ingress, ImplementationReady: true}))
	at(env, time.Hour+2*time.Minute, SignalResourceEvent, apiEvent("h4", spec, &Exposure{Ingress: ingress, ImplementationReady: false}))
	at(env, 2*time.Hour, SignalResourceEvent, ResourceEvent{UID: "api-uid", Deleted: true})
	env.ExecuteWorkflow(ExposedAPIWorkflow, ExposedAPIInput{Namespace: testNS, Name: "api"})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if len(f.exposes) != 4 {
		t.Fatalf("expose calls = %d, want 4 (one per change, none while waiting)", len(f.exposes))
	}
	if f.exposes[0].SkipApply || f.exposes[0].Ingress != nil {
		t.Errorf("first call: %+v, want the route applied and no address", f.exposes[0])
	}
	for i, e := range f.exposes[1:] {
		if !e.SkipApply {
			t.Errorf("call %d re-applied the route for an address or readiness change", i+2)
		}
	}
	if !f.exposes[2].ImplementationReady || f.exposes[3].ImplementationReady {
		t.Errorf("readiness did not go true then false: %v, %v", f.exposes[2].ImplementationReady, f.exposes[3].ImplementationReady)
	}
	if f.exposes[3].PreviousPhase != activities.PhaseExposed {
		t.Errorf("previous phase = %q, want %q", f.exposes[3].PreviousPhase, activities.PhaseExposed)
	}
}

func TestExposedAPIPathChangeReappliesTheRoute(t *testing.T) {
	env, f := newExposedEnv(t)
	at(env, time.Second, SignalResourceEvent, apiEvent("h1", apiSpec("/a"), &Exposure{Ingress: ingress, ImplementationReady: true}))
	at(env, time.Minute, SignalResourceEvent, apiEvent("h2", apiSpec("/b"), &Exposure{Ingress: ingress, ImplementationReady: true}))
	at(env, time.Hour, SignalResourceEvent, ResourceEvent{UID: "api-uid", Deleted: true})
	env.ExecuteWorkflow(ExposedAPIWorkflow, ExposedAPIInput{Namespace: testNS, Name: "api"})
	if len(f.exposes) != 2 || f.exposes[1].SkipApply || f.exposes[1].API.Spec["path"] != "/b" {
		t.Fatalf("exposes = %+v", f.exposes)
	}
	if len(f.exposes[1].Applied) != 1 {
		t.Errorf("the second apply does not know the first one's objects: %+v", f.exposes[1].Applied)
	}
}

func TestExposedAPIInvalidSpecAndConflictAreReportedNotApplied(t *testing.T) {
	env, f := newExposedEnv(t)
	bad := apiSpec("/a")
	bad["port"] = "not-a-port"
	at(env, time.Second, SignalResourceEvent, apiEvent("h1", bad, &Exposure{Ingress: ingress}))
	at(env, time.Minute, SignalResourceEvent, apiEvent("h2", apiSpec("/a"), &Exposure{Ingress: ingress, ConflictsWith: "other/first"}))
	at(env, 2*time.Minute, SignalResourceEvent, apiEvent("h3", apiSpec("/a"), &Exposure{Ingress: ingress}))
	at(env, time.Hour, SignalResourceEvent, ResourceEvent{UID: "api-uid", Deleted: true})
	env.ExecuteWorkflow(ExposedAPIWorkflow, ExposedAPIInput{Namespace: testNS, Name: "api"})
	if len(f.exposes) != 3 {
		t.Fatalf("expose calls = %d", len(f.exposes))
	}
	if fl := f.exposes[0].Failure; fl == nil || fl.Reason != "InvalidSpec" {
		t.Errorf("invalid spec: failure %+v", fl)
	}
	if fl := f.exposes[1].Failure; fl == nil || fl.Reason != "PathConflict" {
		t.Errorf("conflict: failure %+v", fl)
	}
	if f.exposes[2].Failure != nil || f.exposes[2].SkipApply {
		t.Errorf("after the conflict cleared: %+v, want a fresh apply", f.exposes[2])
	}
}

func TestExposedAPIFailureIsReportedAndRetried(t *testing.T) {
	env, f := newExposedEnv(t)
	f.failNext = 1
	at(env, time.Second, SignalResourceEvent, apiEvent("h1", apiSpec("/a"), &Exposure{Ingress: ingress, ImplementationReady: true}))
	at(env, time.Hour, SignalResourceEvent, ResourceEvent{UID: "api-uid", Deleted: true})
	env.ExecuteWorkflow(ExposedAPIWorkflow, ExposedAPIInput{Namespace: testNS, Name: "api"})
	if len(f.statuses) != 1 || f.statuses[0].Event == nil || f.statuses[0].Event.Reason != "ExposeFailed" {
		t.Fatalf("failure report = %+v", f.statuses)
	}
	if len(f.exposes) != 1 || f.exposes[0].Failure != nil {
		t.Errorf("retry after backoff: %+v", f.exposes)
	}
}

func TestExposedAPIDeletionRemovesGatewayObjectsAndFinalizers(t *testing.T) {
	env, f := newExposedEnv(t)
	at(env, time.Second, SignalResourceEvent, apiEvent("h1", apiSpec("/a"), &Exposure{Ingress: ingress, ImplementationReady: true}))
	deleting := apiEvent("h2", apiSpec("/a"), &Exposure{Ingress: ingress, ImplementationReady: true})
	deleting.Deleting = true
	deleting.Finalizers = []string{oda.Finalizer, oda.KopfFinalizer}
	at(env, time.Minute, SignalResourceEvent, deleting)
	at(env, 2*time.Minute, SignalResourceEvent, ResourceEvent{UID: "api-uid", Deleted: true})
	env.ExecuteWorkflow(ExposedAPIWorkflow, ExposedAPIInput{Namespace: testNS, Name: "api"})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if len(f.unexposes) != 1 || len(f.unexposes[0].Applied) != 1 || len(f.unexposes[0].Finalizers) != 2 {
		t.Fatalf("unexpose = %+v", f.unexposes)
	}
}

func TestExposedAPIBlockedDeletionIsReportedAndHasAWayOut(t *testing.T) {
	env, f := newExposedEnv(t)
	f.gatewayDown = true
	spec := apiSpec("/a")
	exp := &Exposure{Ingress: ingress, ImplementationReady: true}
	deleting := func(hash string, ann map[string]string) ResourceEvent {
		ev := apiEvent(hash, spec, exp)
		ev.Deleting, ev.Finalizers, ev.Annotations = true, []string{oda.Finalizer}, ann
		return ev
	}
	at(env, time.Second, SignalResourceEvent, apiEvent("h1", spec, exp))
	at(env, time.Minute, SignalResourceEvent, deleting("h2", nil))
	// Six failed attempts take about 35 minutes of backoff.
	at(env, 3*time.Hour, SignalResourceEvent, deleting("h3", map[string]string{oda.AnnotationSkipCleanup: "true"}))
	at(env, 4*time.Hour, SignalResourceEvent, ResourceEvent{UID: "api-uid", Deleted: true})
	env.ExecuteWorkflow(ExposedAPIWorkflow, ExposedAPIInput{Namespace: testNS, Name: "api"})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	var blocked int
	for _, s := range f.statuses {
		if s.Event != nil && s.Event.Reason == "CleanupBlocked" {
			blocked++
			if !strings.Contains(s.Event.Message, oda.AnnotationSkipCleanup) {
				t.Errorf("the blocked deletion does not name the way out: %s", s.Event.Message)
			}
		}
	}
	if blocked != 1 {
		t.Errorf("CleanupBlocked events = %d, want 1", blocked)
	}
	if len(f.unexposes) != 1 || !f.unexposes[0].SkipCleanup {
		t.Fatalf("unexposes = %+v, want one that skips the cleanup", f.unexposes)
	}
}
