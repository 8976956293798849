package workflows

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/odaflow/odaflow/activities"
	"github.com/odaflow/odaflow/oda"
	"github.com/odaflow/odaflow/secrets"
)

// SecretsManagementInput starts (or continues) one SecretsManagement's
// lifecycle.
type SecretsManagementInput struct {
	Namespace    string                  `json:"namespace"`
	Name         string                  `json:"name"`
	State        *SecretsManagementState `json:"state,omitempty"`
	Pending      *ResourceEvent          `json:"pending,omitempty"`
	HistoryLimit int                     `json:"historyLimit,omitempty"`
	// SearchAttributes keeps the DeploymentStatus search attribute equal to
	// the phase (the watcher sets it when the attributes are registered).
	SearchAttributes bool `json:"searchAttributes,omitempty"`
	// CheckInterval is how often a Ready store is compared with Vault and
	// repaired (a Vault restarted empty, a policy deleted by hand); default
	// DefaultSecretsCheckInterval.
	CheckInterval time.Duration `json:"checkInterval,omitempty"`
}

// DefaultSecretsCheckInterval is the Vault drift check's default period.
const DefaultSecretsCheckInterval = 10 * time.Minute

// WithSearchAttributes implements SearchAttributesInput.
func (in SecretsManagementInput) WithSearchAttributes(on bool) any {
	in.SearchAttributes = on
	return in
}

// SecretsManagementState is the SecretsManagement workflow's whole memory.
// It holds Vault object names and counts, never a secret or a token.
type SecretsManagementState struct {
	Resource ResourceState `json:"resource"`
	// Configured is the hash of the spec Vault is configured for ("" when
	// not, or no longer).
	Configured string `json:"configured,omitempty"`
	// Touched is true once a configure attempt was made: Vault may hold
	// this store's objects, so deletion must clean up.
	Touched bool `json:"touched,omitempty"`
	// Selected and Missing count the selected pods and those without the
	// sidecar at the last check; Rechecks the checks in a row that found
	// some missing (the re-check interval grows with it).
	Selected int `json:"selected,omitempty"`
	Missing  int `json:"missing,omitempty"`
	Rechecks int `json:"rechecks,omitempty"`
	// Reported identifies the last status written (phase, readiness,
	// failure and observed hash): a re-check that finds the same writes
	// nothing.
	Reported string `json:"reported,omitempty"`
}

// The phases of a SecretsManagement.
const (
	PhaseSecretsReady       = "Ready"
	PhaseWaitingForSidecars = "WaitingForSidecars"
	PhaseSecretsFailed      = "Failed"
)

// Sidecar restarts: at most this many workloads rolled per check, and a
// workload rolled by odaflow is not rolled again within the interval (its
// rollout is still replacing pods).
const (
	sidecarMaxRestarts     = 5
	sidecarRestartInterval = 5 * time.Minute
)

// SecretsManagementWorkflow gives one SecretsManagement its Vault store (a
// kv-v2 mount, a policy and a kubernetes-auth login role) and reports it
// ready only when Vault is configured AND every pod it selects runs the
// secrets sidecar (the Canvas said ready as soon as Vault was set up,
// §5.5.4). Pods started without the sidecar are rolled through their
// Deployment or StatefulSet, and re-checked on a timer (pods send no
// events to this workflow) until they all have it. Deleting the
// SecretsManagement removes the store; if Vault stays unreachable the
// deletion is reported as CleanupBlocked, and the skip-cleanup annotation
// releases it.
func SecretsManagementWorkflow(ctx workflow.Context, in SecretsManagementInput) error {
	s := &secretsManagement{ns: in.Namespace, name: in.Name, historyLimit: in.HistoryLimit, searchAttributes: in.SearchAttributes, interval: in.CheckInterval}
	if s.interval <= 0 {
		s.interval = DefaultSecretsCheckInterval
	}
	if in.State != nil {
		s.st = *in.State
	}
	s.loop = newResourceLoop(oda.Ref{Kind: oda.KindSecretsManagement.Name, Namespace: in.Namespace, Name: in.Name}, &s.st.Resource, in.HistoryLimit)
	s.loop.vis = newVisibility(ctx, in.SearchAttributes)
	if err := workflow.SetQueryHandler(ctx, QueryExplain, s.explain); err != nil {
		return fmt.Errorf("register query: %w", err)
	}
	return s.loop.run(ctx, s, in.Pending)
}

type secretsManagement struct {
	ns, name     string
	st           SecretsManagementState
	loop         *resourceLoop
	historyLimit int
	// searchAttributes is carried through Continue-As-New.
	searchAttributes bool
	// interval and drift run the Vault drift check.
	interval time.Duration
	drift    driftCheck
}

// waits adds the drift-check timer while the store is Ready: nothing else
// would notice a Vault that restarted empty or lost a policy while the
// SecretsManagement stays unchanged.
func (s *secretsManagement) waits(ctx workflow.Context, r *resourceLoop, sel workflow.Selector) {
	if r.st.Deleting || r.st.Phase != PhaseSecretsReady {
		return
	}
	s.drift.arm(ctx, r, sel, s.interval, "drift check: compare the Vault store of "+s.name+" with the spec")
}

func (s *secretsManagement) continueAsNew(ctx workflow.Context, _ *resourceLoop, pending *ResourceEvent) error {
	in := SecretsManagementInput{Namespace: s.ns, Name: s.name, Pending: pending, HistoryLimit: s.historyLimit, SearchAttributes: s.searchAttributes, CheckInterval: s.interval}
	if pending == nil {
		st := s.st
		in.State = &st
	}
	return workflow.NewContinueAsNewError(ctx, SecretsManagementWorkflow, in)
}

func readyStatus(ready bool) map[string]any {
	return map[string]any{"implementation": map[string]any{"ready": ready}}
}

func (s *secretsManagement) reconcile(ctx workflow.Context, r *resourceLoop) {
	if r.st.Deleting {
		r.finishDeletion(ctx, "the Vault store (kv mount, policy and login role)", s.deleteStore)
		return
	}
	spec, err := secrets.ParseSpec(r.st.Spec)
	if err != nil {
		// Nothing to retry until the spec changes (a new event).
		r.succeeded()
		s.report(ctx, r, PhaseSecretsFailed, false, &oda.Failure{Reason: "InvalidSpec", Message: err.Error()})
		return
	}
	if !spec.PodSelector.SelectsNamespace(s.ns) {
		r.succeeded()
		s.report(ctx, r, PhaseSecretsFailed, false, &oda.Failure{Reason: "InvalidSpec", Message: fmt.Sprintf(
			"spec.podSelector.namespace %q does not match the SecretsManagement's namespace %s: only pods in its own namespace can be given its secrets", spec.PodSelector.Namespace, s.ns)})
		return
	}
	// The finalizer first, so that a deletion waits for the Vault cleanup.
	if err := r.ensureFinalizer(ctx); err != nil {
		s.fail(ctx, r, "FinalizerFailed", "could not add odaflow's finalizer: "+rootMessage(err))
		return
	}
	if !hasFinalizer(r.st.Finalizers) {
		// Added: the watcher's next event says so too; until then a retry
		// need not add it again.
		r.st.Finalizers = append(append([]string(nil), r.st.Finalizers...), oda.Finalizer)
	}
	if s.drift.take() {
		// Configure again: the activity creates only what is missing and
		// rewrites policy and role, so an intact store costs a few reads.
		s.st.Configured = ""
	}
	if specHash := hashOf(spec); s.st.Configured != specHash {
		s.st.Touched = true
		var res activities.StoreResult
		var v *activities.Vault
		err := workflow.ExecuteActivity(vaultOptions(ctx, "configure the Vault store"), v.ConfigureStore,
			activities.StoreInput{Namespace: s.ns, Name: s.name, Spec: spec, UID: r.st.UID}).Get(ctx, &res)
		if err != nil {
			s.fail(ctx, r, vaultReason(err), "could not configure Vault: "+vaultMessage(err))
			return
		}
		s.st.Configured = specHash
		s.st.Rechecks = 0
	}
	var sc activities.SecretsSidecarsResult
	var kube *activities.Kube
	err = kubeCall(ctx, "check pods for the secrets sidecar", kube.SecretsSidecars, activities.SecretsSidecarsInput{
		Namespace: s.ns, Name: s.name, Spec: spec, Restart: true, MaxRestarts: sidecarMaxRestarts, MinInterval: sidecarRestartInterval,
	}).Get(ctx, &sc)
	if err != nil {
		s.fail(ctx, r, "PodCheckFailed", "could not check the selected pods for the secrets sidecar: "+rootMessage(err))
		return
	}
	// Not r.succeeded(): it forgets the failure the status shows, and the
	// next report would repeat its Event.
	r.st.Failures = 0
	s.st.Selected, s.st.Missing = sc.Selected, sc.Missing
	if sc.Missing > 0 {
		s.st.Rechecks++
		r.retryAfter(ctx, sidecarRecheck(s.st.Rechecks), "re-check pods for the secrets sidecar")
		s.report(ctx, r, PhaseWaitingForSidecars, false, &oda.Failure{Reason: PhaseWaitingForSidecars, Message: waitingMessage(sc)})
		return
	}
	s.st.Rechecks = 0
	s.report(ctx, r, PhaseSecretsReady, true, nil)
}

// report writes the status unless it is the one last written for the same
// desired state (a re-check that found nothing new).
func (s *secretsManagement) report(ctx workflow.Context, r *resourceLoop, phase string, ready bool, failure *oda.Failure) {
	key := hashOf(phase, ready, failure, r.st.Hash)
	if key == s.st.Reported && r.st.Phase == phase {
		return
	}
	r.report(ctx, phase, ready, failure, readyStatus(ready))
	if r.st.Phase == phase {
		s.st.Reported = key
	}
}

// fail reports a failed attempt and schedules the next one after backoff.
func (s *secretsManagement) fail(ctx workflow.Context, r *resourceLoop, reason, msg string) {
	r.retryAfterBackoff(ctx)
	s.report(ctx, r, PhaseSecretsFailed, false, &oda.Failure{Reason: reason, Message: msg})
}

// vaultMessage is an activity failure's own message, without the SDK's
// "(type: …, retryable: …)" suffix: the reason already names the type.
func vaultMessage(err error) string {
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) && appErr.Message() != "" {
		return appErr.Message()
	}
	return rootMessage(err)
}

// deleteStore is the deletion's cleanup: nothing when Vault was never
// touched for this resource (and no finalizer of odaflow's says an earlier
// lifecycle might have).
func (s *secretsManagement) deleteStore(ctx workflow.Context) error {
	if !s.st.Touched && !hasFinalizer(s.st.Resource.Finalizers) {
		return nil
	}
	var v *activities.Vault
	err := workflow.ExecuteActivity(vaultOptions(ctx, "delete the Vault store"), v.DeleteStore, activities.DeleteStoreInput{
		Namespace: s.ns, Name: s.name, KeepData: s.st.Resource.Annotations[secrets.AnnotationKeepData] == "true",
	}).Get(ctx, nil)
	if err != nil && !isErrType(err, activities.ErrTypeVaultNotConfigured) {
		return err
	}
	// Without a Vault odaflow created nothing there; let the object go.
	s.st.Touched, s.st.Configured = false, ""
	return nil
}

func isErrType(err error, typ string) bool {
	var appErr *temporal.ApplicationError
	return errors.As(err, &appErr) && appErr.Type() == typ
}

func waitingMessage(sc activities.SecretsSidecarsResult) string {
	msg := fmt.Sprintf("%d of %d selected pods run without the secrets sidecar (%s)", sc.Missing, sc.Selected, strings.Join(sc.MissingPods, ", "))
	if len(sc.Restarted) > 0 {
		msg += "; restarted " + strings.Join(sc.Restarted, ", ")
	}
	if len(sc.Unmanaged) > 0 {
		msg += "; restart by hand (no Deployment or StatefulSet): " + strings.Join(sc.Unmanaged, ", ")
	}
	return msg
}

// sidecarRecheck is the wait before checking the pods again: 15 s,
// doubling, at most 5 minutes.
func sidecarRecheck(n int) time.Duration {
	d := 15 * time.Second
	for i := 1; i < n && d < 5*time.Minute; i++ {
		d *= 2
	}
	return min(d, 5*time.Minute)
}

// vaultReason names a Vault activity failure for status and Events.
func vaultReason(err error) string {
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		switch appErr.Type() {
		case activities.ErrTypeVaultForbidden:
			return "VaultForbidden"
		case activities.ErrTypeVaultRejected, activities.ErrTypeVaultConflict:
			return "VaultRejected"
		case activities.ErrTypeVaultCredentials:
			return "VaultCredentials"
		case activities.ErrTypeVaultNotConfigured:
			return "VaultNotConfigured"
		case activities.ErrTypeVaultOwnedElsewhere:
			return oda.ReasonOwnedElsewhere
		}
	}
	return "VaultUnavailable"
}

// vaultOptions: Vault is a service on the network; a few quick attempts
// inside the activity's retry policy, then the workflow's own backoff
// timer (with the reason in status) takes over. Refusals of the token or
// of the request are not retried here: the workflow's backoff retries them
// slowly, in case an operator fixes the token.
func vaultOptions(ctx workflow.Context, summary string) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: time.Minute,
		HeartbeatTimeout:    lostActivityTimeout,
		Summary:             summary,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:    time.Second,
			BackoffCoefficient: 2,
			MaximumInterval:    15 * time.Second,
			MaximumAttempts:    4,
			NonRetryableErrorTypes: []string{
				activities.ErrTypeVaultForbidden, activities.ErrTypeVaultRejected, activities.ErrTypeVaultConflict,
				activities.ErrTypeVaultNotConfigured, activities.ErrTypeVaultOwnedElsewhere,
			},
		},
	})
}

func (s *secretsManagement) explain() (Explanation, error) {
	st := s.st.Resource
	return Explanation{Resource: s.loop.ref.String(), UID: st.UID, DeploymentStatus: st.Phase, Failure: st.Failure}, nil
}
