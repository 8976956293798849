package workflows

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/odaflow/odaflow/activities"
	"github.com/odaflow/odaflow/oda"
	"github.com/odaflow/odaflow/secrets"
)

// fakeSecrets records the SecretsManagement workflow's side effects.
type fakeSecrets struct {
	statuses   []activities.WriteStatusInput
	configures []activities.StoreInput
	deletes    []activities.DeleteStoreInput
	checks     []activities.SecretsSidecarsInput
	finalizers int
	released   []activities.RemoveFinalizersInput

	vaultErr  error // returned by ConfigureStore and DeleteStore while set
	deleteErr error
	// missing is what each sidecar check reports, in turn (the last repeats).
	missing []int
}

func newSecretsEnv(t *testing.T) (*testsuite.TestWorkflowEnvironment, *fakeSecrets) {
	t.Helper()
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	env.RegisterWorkflow(SecretsManagementWorkflow)
	var kube *activities.Kube
	var v *activities.Vault
	env.RegisterActivity(kube)
	env.RegisterActivity(v)
	f := &fakeSecrets{}
	env.OnActivity(kube.WriteStatus, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.WriteStatusInput) error {
			f.statuses = append(f.statuses, in)
			return nil
		})
	env.OnActivity(kube.EnsureFinalizer, mock.Anything, mock.Anything).Return(
		func(context.Context, activities.EnsureFinalizerInput) error {
			f.finalizers++
			return nil
		})
	env.OnActivity(kube.RemoveFinalizers, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.RemoveFinalizersInput) error {
			f.released = append(f.released, in)
			return nil
		})
	env.OnActivity(kube.SecretsSidecars, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.SecretsSidecarsInput) (activities.SecretsSidecarsResult, error) {
			f.checks = append(f.checks, in)
			n := 0
			if len(f.missing) > 0 {
				n = f.missing[0]
				if len(f.missing) > 1 {
					f.missing = f.missing[1:]
				}
			}
			res := activities.SecretsSidecarsResult{Selected: 2, Missing: n}
			if n > 0 {
				res.MissingPods = []string{"demo-a-api-1"}
				res.Restarted = []string{"Deployment/demo-a-api"}
			}
			return res, nil
		})
	env.OnActivity(v.ConfigureStore, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.StoreInput) (activities.StoreResult, error) {
			f.configures = append(f.configures, in)
			if f.vaultErr != nil {
				return activities.StoreResult{}, f.vaultErr
			}
			return activities.StoreResult{Names: secrets.NamesFor(in.Namespace, in.Name), Requests: 6}, nil
		})
	env.OnActivity(v.DeleteStore, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.DeleteStoreInput) (activities.StoreResult, error) {
			f.deletes = append(f.deletes, in)
			if f.deleteErr != nil {
				return activities.StoreResult{}, f.deleteErr
			}
			return activities.StoreResult{}, nil
		})
	return env, f
}

func smSpec(nameGlob string) map[string]any {
	return map[string]any{"type": "sideCar", "sideCar": map[string]any{"port": float64(5000)},
		"podSelector": map[string]any{"namespace": testNS, "name": nameGlob, "serviceaccount": "default"}}
}

func smEvent(hash string, spec map[string]any) ResourceEvent {
	return ResourceEvent{UID: "sm-uid", Hash: hash, Generation: 1, Spec: spec, Finalizers: []string{oda.Finalizer},
		Labels: map[string]string{oda.LabelComponentName: "demo-a"}}
}

// readiness lists, per status write, "phase:ready".
func (f *fakeSecrets) readiness() []string {
	var out []string
	for _, s := range f.statuses {
		impl, ok := s.Status["implementation"].(map[string]any)
		if !ok {
			continue
		}
		cond := s.Status["conditions"].([]any)[0].(map[string]any)
		r := "false"
		if impl["ready"] == true {
			r = "true"
		}
		out = append(out, cond["reason"].(string)+":"+r)
	}
	return out
}

func (f *fakeSecrets) events() []string {
	var out []string
	for _, s := range f.statuses {
		if s.Event != nil {
			out = append(out, s.Event.Type+"/"+s.Event.Reason)
		}
	}
	return out
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestSecretsManagementReadyOnlyWithSidecars: Vault configured is not
// enough; ready comes once the pods run the sidecar (found by re-checks on
// a timer), and a selector change reaches Vault's role.
func TestSecretsManagementInstallAndSelectorChange(t *testing.T) {
	env, f := newSecretsEnv(t)
	f.missing = []int{1, 1, 0}
	at(env, time.Second, SignalResourceEvent, smEvent("h1", smSpec("demo-a-*")))
	env.RegisterDelayedCallback(func() {
		if got := f.readiness(); !equal(got, []string{"WaitingForSidecars:false", "Ready:true"}) {
			t.Errorf("after install: %v", got)
		}
		if len(f.configures) != 1 || len(f.checks) != 3 {
			t.Errorf("configures %d checks %d, want 1 and 3", len(f.configures), len(f.checks))
		}
	}, 10*time.Minute)
	at(env, time.Hour, SignalResourceEvent, smEvent("h2", smSpec("demo-a-api-*")))
	at(env, 2*time.Hour, SignalResourceEvent, ResourceEvent{UID: "sm-uid", Deleted: true})
	// No drift check in these two hours: this test counts configures.
	env.ExecuteWorkflow(SecretsManagementWorkflow, SecretsManagementInput{Namespace: testNS, Name: "demo-a", CheckInterval: 24 * time.Hour})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if len(f.configures) != 2 || f.configures[1].Spec.PodSelector.Name != "demo-a-api-*" {
		t.Fatalf("configures = %+v, want a second one with the new selector", f.configures)
	}
	if f.checks[0].MaxRestarts != sidecarMaxRestarts || !f.checks[0].Restart {
		t.Errorf("check input %+v", f.checks[0])
	}
	// The first check asked for restarts, then the workflow re-checked on
	// its timer (15 s, then 30 s) without any event.
	// One write per change; the selector change writes Ready again only
	// to record the new observed hash, without another Event.
	if got := f.readiness(); !equal(got, []string{"WaitingForSidecars:false", "Ready:true", "Ready:true"}) {
		t.Errorf("statuses = %v", got)
	}
	if f.statuses[1].ObservedHash != "h1" || f.statuses[2].ObservedHash != "h2" {
		t.Errorf("observed hashes %q %q", f.statuses[1].ObservedHash, f.statuses[2].ObservedHash)
	}
	if got := f.events(); !equal(got, []string{"Warning/WaitingForSidecars", "Normal/Ready"}) {
		t.Errorf("events = %v", got)
	}
	if f.finalizers != 0 {
		t.Errorf("finalizer added %d times although present", f.finalizers)
	}
}

func TestSecretsManagementVaultDownThenBack(t *testing.T) {
	env, f := newSecretsEnv(t)
	f.vaultErr = temporal.NewApplicationError("configure: Vault at https://vault:8200 is sealed", activities.ErrTypeVaultUnavailable)
	ev := smEvent("h1", smSpec("*"))
	ev.Finalizers = nil
	at(env, time.Second, SignalResourceEvent, ev)
	env.RegisterDelayedCallback(func() {
		if got := f.readiness(); !equal(got, []string{"VaultUnavailable:false"}) {
			t.Errorf("while Vault is down: %v", got)
		}
		if len(f.configures) != 4 {
			t.Errorf("attempts = %d, want 4 (the activity's retry policy)", len(f.configures))
		}
		f.vaultErr = nil
	}, 30*time.Second)
	at(env, time.Hour, SignalResourceEvent, ResourceEvent{UID: "sm-uid", Deleted: true})
	env.ExecuteWorkflow(SecretsManagementWorkflow, SecretsManagementInput{Namespace: testNS, Name: "demo-a"})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	// The backoff timer (1 minute) brought the next attempt by itself.
	if got := f.readiness(); !equal(got, []string{"VaultUnavailable:false", "Ready:true"}) {
		t.Errorf("statuses = %v", got)
	}
	if got := f.events(); !equal(got, []string{"Warning/VaultUnavailable", "Normal/Ready"}) {
		t.Errorf("events = %v", got)
	}
	if f.finalizers != 1 {
		t.Errorf("finalizer added %d times, want once", f.finalizers)
	}
	msg := f.statuses[0].Event.Message
	if want := "could not configure Vault: configure: Vault at https://vault:8200 is sealed"; msg != want {
		t.Errorf("message %q, want %q", msg, want)
	}
}

func TestSecretsManagementForbiddenIsNotRetriedByTheActivity(t *testing.T) {
	env, f := newSecretsEnv(t)
	f.vaultErr = temporal.NewNonRetryableApplicationError("Vault refused odaflow's token (403 permission denied)", activities.ErrTypeVaultForbidden, nil)
	at(env, time.Second, SignalResourceEvent, smEvent("h1", smSpec("*")))
	at(env, 30*time.Second, SignalResourceEvent, ResourceEvent{UID: "sm-uid", Deleted: true})
	env.ExecuteWorkflow(SecretsManagementWorkflow, SecretsManagementInput{Namespace: testNS, Name: "demo-a"})
	if len(f.configures) != 1 {
		t.Errorf("attempts = %d, want 1", len(f.configures))
	}
	if got := f.readiness(); !equal(got, []string{"VaultForbidden:false"}) {
		t.Errorf("statuses = %v", got)
	}
}

func TestSecretsManagementInvalidSpec(t *testing.T) {
	env, f := newSecretsEnv(t)
	at(env, time.Second, SignalResourceEvent, smEvent("h1", map[string]any{"type": "csi", "podSelector": map[string]any{}}))
	at(env, time.Minute, SignalResourceEvent, smEvent("h2", map[string]any{"type": "sideCar", "podSelector": map[string]any{"namespace": "other"}}))
	at(env, time.Hour, SignalResourceEvent, ResourceEvent{UID: "sm-uid", Deleted: true})
	env.ExecuteWorkflow(SecretsManagementWorkflow, SecretsManagementInput{Namespace: testNS, Name: "demo-a"})
	if len(f.configures) != 0 {
		t.Errorf("Vault configured for an invalid spec")
	}
	if got := f.readiness(); !equal(got, []string{"InvalidSpec:false", "InvalidSpec:false"}) {
		t.Errorf("statuses = %v", got)
	}
}

// TestSecretsManagementDeletionWithVaultGone: the cleanup keeps failing,
// the resource says CleanupBlocked, and skip-cleanup releases it.
func TestSecretsManagementDeletionWithVaultGone(t *testing.T) {
	env, f := newSecretsEnv(t)
	at(env, time.Second, SignalResourceEvent, smEvent("h1", smSpec("*")))
	env.RegisterDelayedCallback(func() {
		f.deleteErr = errors.New("Vault at https://vault:8200 is unreachable: connection refused")
	}, time.Minute)
	deleting := func(hash string, ann map[string]string) ResourceEvent {
		ev := smEvent(hash, smSpec("*"))
		ev.Deleting, ev.Annotations = true, ann
		return ev
	}
	at(env, 2*time.Minute, SignalResourceEvent, deleting("h2", map[string]string{secrets.AnnotationKeepData: "true"}))
	env.RegisterDelayedCallback(func() {
		blocked := false
		for _, s := range f.statuses {
			if s.Event != nil && s.Event.Reason == "CleanupBlocked" {
				blocked = true
			}
		}
		if !blocked || len(f.released) != 0 {
			t.Errorf("after 3 hours of failed cleanup: blocked=%v released=%d", blocked, len(f.released))
		}
	}, 3*time.Hour)
	at(env, 3*time.Hour+time.Minute, SignalResourceEvent, deleting("h3", map[string]string{oda.AnnotationSkipCleanup: "true"}))
	at(env, 4*time.Hour, SignalResourceEvent, ResourceEvent{UID: "sm-uid", Deleted: true})
	env.ExecuteWorkflow(SecretsManagementWorkflow, SecretsManagementInput{Namespace: testNS, Name: "demo-a"})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if len(f.deletes) < maxCleanupFailures*4 || !f.deletes[0].KeepData {
		t.Errorf("delete attempts = %d (keepData %v), want at least %d", len(f.deletes), len(f.deletes) > 0 && f.deletes[0].KeepData, maxCleanupFailures*4)
	}
	if len(f.released) != 1 {
		t.Fatalf("released = %+v, want once after skip-cleanup", f.released)
	}
	skipped := false
	for _, s := range f.statuses {
		if s.Event != nil && s.Event.Reason == "CleanupSkipped" {
			skipped = true
		}
	}
	if !skipped {
		t.Error("no CleanupSkipped event")
	}
}

func TestSecretsManagementDeletionCleansUp(t *testing.T) {
	env, f := newSecretsEnv(t)
	at(env, time.Second, SignalResourceEvent, smEvent("h1", smSpec("*")))
	ev := smEvent("h2", smSpec("*"))
	ev.Deleting = true
	at(env, time.Minute, SignalResourceEvent, ev)
	at(env, time.Hour, SignalResourceEvent, ResourceEvent{UID: "sm-uid", Deleted: true})
	env.ExecuteWorkflow(SecretsManagementWorkflow, SecretsManagementInput{Namespace: testNS, Name: "demo-a"})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if len(f.deletes) != 1 || f.deletes[0].KeepData || len(f.released) != 1 {
		t.Fatalf("deletes %+v released %d", f.deletes, len(f.released))
	}
	if fs := f.released[0].Finalizers; len(fs) == 0 || fs[0] != oda.Finalizer {
		t.Errorf("released finalizers %v", fs)
	}
}

func TestSidecarRecheck(t *testing.T) {
	for n, want := range map[int]time.Duration{1: 15 * time.Second, 2: 30 * time.Second, 3: time.Minute, 5: 4 * time.Minute, 6: 5 * time.Minute, 50: 5 * time.Minute} {
		if got := sidecarRecheck(n); got != want {
			t.Errorf("sidecarRecheck(%d) = %s, want %s", n, got, want)
		}
	}
}

// TestSecretsManagementWithoutVault: a worker without Vault says so, and
// deleting the resource is not blocked by a Vault odaflow never had.
func TestSecretsManagementWithoutVault(t *testing.T) {
	env, f := newSecretsEnv(t)
	notConfigured := temporal.NewNonRetryableApplicationError("odaflow's worker has no Vault configured (--vault-address)", activities.ErrTypeVaultNotConfigured, nil)
	f.vaultErr, f.deleteErr = notConfigured, notConfigured
	at(env, time.Second, SignalResourceEvent, smEvent("h1", smSpec("*")))
	ev := smEvent("h2", smSpec("*"))
	ev.Deleting = true
	at(env, time.Minute+30*time.Second, SignalResourceEvent, ev)
	at(env, time.Hour, SignalResourceEvent, ResourceEvent{UID: "sm-uid", Deleted: true})
	env.ExecuteWorkflow(SecretsManagementWorkflow, SecretsManagementInput{Namespace: testNS, Name: "demo-a"})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if got := f.readiness(); len(got) == 0 || got[0] != "VaultNotConfigured:false" {
		t.Errorf("statuses = %v", got)
	}
	if len(f.released) != 1 || len(f.deletes) != 1 {
		t.Errorf("released %d after %d delete attempts, want 1 and 1", len(f.released), len(f.deletes))
	}
}

func TestSecretsManagementDriftCheckReconfiguresAReadyStore(t *testing.T) {
	env, f := newSecretsEnv(t)
	f.missing = []int{0}
	at(env, time.Second, SignalResourceEvent, smEvent("h1", smSpec("demo-a-*")))
	at(env, 35*time.Minute, SignalResourceEvent, ResourceEvent{UID: "sm-uid", Deleted: true})
	env.ExecuteWorkflow(SecretsManagementWorkflow, SecretsManagementInput{Namespace: testNS, Name: "demo-a", CheckInterval: 10 * time.Minute})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	// Installed once, then re-checked at 10, 20 and 30 minutes.
	if len(f.configures) != 4 {
		t.Fatalf("configures = %d, want 4 (install and three drift checks)", len(f.configures))
	}
	// An intact store writes no new status and records no new Event.
	if got := f.readiness(); !equal(got, []string{"Ready:true"}) {
		t.Errorf("statuses = %v, want one", got)
	}
}
