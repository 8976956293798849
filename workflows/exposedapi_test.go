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
	released  []activities.RemoveFinalizersInput
	failNext  int
	// gatewayDown makes every Unexpose fail.
	gatewayDown bool
}

// reasons are the Ready condition reasons of the status writes.
func (f *fakeExposure) reasons() []string {
	var out []string
	for _, s := range f.statuses {
		if conds, _ := s.Status["conditions"].([]any); len(conds) > 0 {
			c, _ := conds[0].(map[string]any)
			r, _ := c["reason"].(string)
			out = append(out, r)
		}
	}
	return out
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
			res := activities.ExposeResult{Applied: in.Applied, APIStatus: map[string]any{"name": in.API.Name}}
			if in.Remove {
				return activities.ExposeResult{}, nil
			}
			if !in.SkipApply {
				res.Applied = []activities.ObjectRef{{APIVersion: "networking.istio.io/v1", Kind: "VirtualService", Namespace: testNS, Name: "api", Owned: true}}
			}
			if in.Ingress != nil {
				res.Addressed = true
				res.APIStatus["url"] = "http://" + in.Ingress.IP + "/api"
			}
			return res, nil
		})
	env.OnActivity(exposure.Unexpose, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.UnexposeInput) error {
			if f.gatewayDown {
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
	env.OnActivity(kube.RemoveFinalizers, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.RemoveFinalizersInput) error {
			f.released = append(f.released, in)
			return nil
		})
	return env, f
}

func apiSpec(path string) map[string]any {
	return map[string]any{"name": "productcatalogmanagement", "apiType": "openapi", "implementation": "ctk-prodcatapi", "path": path, "port": int64(8080)}
}

func apiEvent(hash string, spec map[string]any, exp *Exposure) ResourceEvent {
	return ResourceEvent{UID: "api-uid", Hash: hash, Spec: spec, Exposure: exp, Labels: map[string]string{oda.LabelComponentName: testName}}
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
	// The route once, the url again when the address comes; a readiness
	// change is a status write alone.
	if len(f.exposes) != 2 || f.exposes[0].SkipApply || f.exposes[0].Ingress != nil || !f.exposes[1].SkipApply || f.exposes[1].Ingress == nil {
		t.Fatalf("expose calls = %+v, want the route applied, then the url asked for with the address", f.exposes)
	}
	want := []string{PhaseWaiting, PhaseNotReady, PhaseExposed, PhaseNotReady}
	if got := f.reasons(); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("Ready reasons = %v, want %v", got, want)
	}
	for i, ready := range []bool{false, false, true, false} {
		impl, _ := f.statuses[i].Status["implementation"].(map[string]any)
		if impl["ready"] != ready {
			t.Errorf("write %d: implementation %v, want ready %v", i, impl, ready)
		}
	}
	if api, _ := f.statuses[2].Status["apiStatus"].(map[string]any); api["url"] != "http://34.159.217.74/api" {
		t.Errorf("apiStatus = %v, want the url", api)
	}
	// The first phase is the Component's to tell; every later one records
	// an Event.
	if f.statuses[0].Event != nil || f.statuses[3].Event == nil || f.statuses[3].Event.Reason != PhaseNotReady {
		t.Errorf("events: first %+v, last %+v", f.statuses[0].Event, f.statuses[3].Event)
	}
}

// TestExposedAPIMetricsReadinessCallsExposeAgain: for a metrics API a
// readiness change calls Expose again (SkipApply), so that in the
// annotation metrics modes the pods that came with the implementation are
// annotated; the route is not applied again.
func TestExposedAPIMetricsReadinessCallsExposeAgain(t *testing.T) {
	env, f := newExposedEnv(t)
	spec := map[string]any{"name": "metrics", "apiType": "prometheus", "implementation": "ctk-sm", "path": "/ctk/metrics", "port": int64(4000)}
	at(env, time.Second, SignalResourceEvent, apiEvent("h1", spec, &Exposure{Ingress: ingress}))
	at(env, time.Minute, SignalResourceEvent, apiEvent("h2", spec, &Exposure{Ingress: ingress, ImplementationReady: true}))
	at(env, 2*time.Minute, SignalResourceEvent, apiEvent("h3", spec, &Exposure{Ingress: ingress, ImplementationReady: true}))
	at(env, time.Hour, SignalResourceEvent, ResourceEvent{UID: "api-uid", Deleted: true})
	env.ExecuteWorkflow(ExposedAPIWorkflow, ExposedAPIInput{Namespace: testNS, Name: "api"})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	var skips []bool
	for _, in := range f.exposes {
		skips = append(skips, in.SkipApply)
	}
	// Applied once; asked again when ready; an event that changes nothing
	// calls nothing.
	if len(skips) != 2 || skips[0] || !skips[1] {
		t.Fatalf("expose calls SkipApply = %v, want [false true]", skips)
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
	if len(f.exposes) != 3 || !f.exposes[0].Remove || !f.exposes[1].Remove || f.exposes[2].Remove || f.exposes[2].SkipApply {
		t.Fatalf("expose calls = %+v, want two removals then a fresh apply", f.exposes)
	}
	want := []string{"InvalidSpec", "PathConflict", PhaseNotReady}
	if got := f.reasons(); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("Ready reasons = %v, want %v", got, want)
	}
	if _, ok := f.statuses[1].Status["apiStatus"]; ok {
		t.Errorf("a failed API reports an apiStatus: %v", f.statuses[1].Status)
	}
}

// A host name the Canvas does not allow is refused like an invalid spec:
// Failed with its reason in the Ready condition and a Warning Event, no
// apiStatus (no URL with that host), the gateway objects removed.
func TestExposedAPIRefusedHostnameIsReportedNotApplied(t *testing.T) {
	env, f := newExposedEnv(t)
	evil := apiSpec("/a")
	evil["hostname"] = "evil.attacker.example"
	at(env, time.Second, SignalResourceEvent, apiEvent("h1", evil, &Exposure{Ingress: ingress, ImplementationReady: true, HostnameRefused: true}))
	at(env, time.Hour, SignalResourceEvent, ResourceEvent{UID: "api-uid", Deleted: true})
	env.ExecuteWorkflow(ExposedAPIWorkflow, ExposedAPIInput{Namespace: testNS, Name: "api"})
	if len(f.exposes) != 1 || !f.exposes[0].Remove {
		t.Fatalf("expose calls = %+v, want one removal", f.exposes)
	}
	if got := f.reasons(); len(got) != 1 || got[0] != "HostnameNotAllowed" {
		t.Fatalf("Ready reasons = %v, want HostnameNotAllowed", got)
	}
	st := f.statuses[0]
	if _, ok := st.Status["apiStatus"]; ok {
		t.Errorf("a refused API reports an apiStatus: %v", st.Status)
	}
	if impl, _ := st.Status["implementation"].(map[string]any); impl["ready"] != false {
		t.Errorf("a refused API reports ready: %v", st.Status)
	}
	if st.Event == nil || st.Event.Type != "Warning" || st.Event.Reason != "HostnameNotAllowed" || !strings.Contains(st.Event.Message, "evil.attacker.example") {
		t.Errorf("event = %+v, want a Warning HostnameNotAllowed naming the host", st.Event)
	}
}

func TestExposedAPIFailureIsReportedAndRetried(t *testing.T) {
	env, f := newExposedEnv(t)
	f.failNext = 1
	at(env, time.Second, SignalResourceEvent, apiEvent("h1", apiSpec("/a"), &Exposure{Ingress: ingress, ImplementationReady: true}))
	at(env, time.Hour, SignalResourceEvent, ResourceEvent{UID: "api-uid", Deleted: true})
	env.ExecuteWorkflow(ExposedAPIWorkflow, ExposedAPIInput{Namespace: testNS, Name: "api"})
	if len(f.statuses) != 2 || f.statuses[0].Event == nil || f.statuses[0].Event.Reason != "ExposeFailed" {
		t.Fatalf("failure report = %+v", f.statuses)
	}
	// The retry after the backoff exposes it, and says it recovered.
	if len(f.exposes) != 1 || f.exposes[0].SkipApply || f.statuses[1].Event == nil || f.statuses[1].Event.Reason != PhaseExposed {
		t.Errorf("retry: exposes %+v, then %+v", f.exposes, f.statuses[1])
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
	if len(f.unexposes) != 1 || len(f.unexposes[0].Applied) != 1 {
		t.Fatalf("unexpose = %+v", f.unexposes)
	}
	if len(f.released) != 1 || strings.Join(f.released[0].Finalizers, ",") != oda.Finalizer+","+oda.KopfFinalizer {
		t.Errorf("released = %+v, want odaflow's and kopf's finalizers", f.released)
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
	var blocked, skipped int
	for _, s := range f.statuses {
		if s.Event != nil && s.Event.Reason == "CleanupBlocked" {
			blocked++
			if !strings.Contains(s.Event.Message, oda.AnnotationSkipCleanup) {
				t.Errorf("the blocked deletion does not name the way out: %s", s.Event.Message)
			}
		}
		if s.Event != nil && s.Event.Reason == "CleanupSkipped" {
			skipped++
		}
	}
	if blocked != 1 || skipped != 1 {
		t.Errorf("CleanupBlocked events = %d, CleanupSkipped = %d, want 1 each", blocked, skipped)
	}
	if len(f.unexposes) != 0 || len(f.released) != 1 {
		t.Fatalf("unexposes %+v, released %+v: want the finalizers released without a cleanup", f.unexposes, f.released)
	}
}

func TestExposurePhase(t *testing.T) {
	failure := &oda.Failure{Reason: "PathConflict", Message: "taken"}
	for _, tc := range []struct {
		failure         *oda.Failure
		addressed, impl bool
		phase           string
		ready           bool
	}{
		{failure, true, true, PhaseExposureFailed, false},
		{nil, false, true, PhaseWaiting, false},
		{nil, false, false, PhaseWaiting, false},
		{nil, true, false, PhaseNotReady, false},
		{nil, true, true, PhaseExposed, true},
	} {
		phase, ready := exposurePhase(tc.failure, tc.addressed, tc.impl)
		if phase != tc.phase || ready != tc.ready {
			t.Errorf("exposurePhase(%v, %v, %v) = %s, %v; want %s, %v", tc.failure, tc.addressed, tc.impl, phase, ready, tc.phase, tc.ready)
		}
	}
}

func TestExposureProblem(t *testing.T) {
	badPort := apiSpec("/a")
	badPort["port"] = "not-a-port"
	for _, tc := range []struct {
		name   string
		spec   map[string]any
		exp    Exposure
		reason string
	}{
		{"valid", apiSpec("/a"), Exposure{}, ""},
		{"invalid spec", badPort, Exposure{}, "InvalidSpec"},
		{"the gateway's root", apiSpec("/"), Exposure{}, "InvalidSpec"},
		{"path taken", apiSpec("/a"), Exposure{ConflictsWith: "other/first"}, "PathConflict"},
		{"invalid and taken: the spec first", badPort, Exposure{ConflictsWith: "other/first"}, "InvalidSpec"},
		{"host name refused", apiSpec("/a"), Exposure{HostnameRefused: true}, "HostnameNotAllowed"},
		{"host name refused and taken: the host name first", apiSpec("/a"), Exposure{HostnameRefused: true, ConflictsWith: "other/first"}, "HostnameNotAllowed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := exposureProblem(tc.spec, tc.exp)
			reason := ""
			if got != nil {
				reason = got.Reason
			}
			if reason != tc.reason {
				t.Errorf("problem = %+v, want reason %q", got, tc.reason)
			}
		})
	}
}
