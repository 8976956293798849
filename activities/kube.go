// Package activities holds every side effect of odaflow. Each activity is
// idempotent: Temporal may run it again after a worker crash, so every write
// is a server-side apply, a merge patch or a delete that tolerates 404.
package activities

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	odaruntime "github.com/odaflow/odaflow/internal/runtime"
	"github.com/odaflow/odaflow/oda"
)

// ErrTypeInvalid is the application error type of a write the apiserver
// refuses for its content; workflows.ErrTypeInvalid is the same constant.
const ErrTypeInvalid = "InvalidObject"

// ErrTypeNamespaceTerminating is the application error type of a write
// into a namespace that is being deleted: the apiserver refuses new objects
// there until the namespace is gone, and the resource that asked goes with
// it, so retrying would only hold the workflow task (for a minute or more)
// while its deletion event waits behind it.
const ErrTypeNamespaceTerminating = "NamespaceTerminating"

// Kube performs apiserver side effects.
type Kube struct {
	Dynamic dynamic.Interface
	Core    kubernetes.Interface
	Log     *slog.Logger
	// StatusKey seals each status write (oda.AnnotationStatusSeal), so
	// that a fence odaflow did not write never stops its writes and the
	// watcher can tell a status someone else wrote. Empty leaves status
	// writes unsealed and trusts any fence, as odaflow did before.
	StatusKey []byte
}

// NewKube builds the apiserver activities.
func NewKube(dyn dynamic.Interface, core kubernetes.Interface, log *slog.Logger) *Kube {
	return &Kube{Dynamic: dyn, Core: core, Log: log}
}

// ApplyChildrenInput is the desired set of a Component's children.
type ApplyChildrenInput struct {
	Owner    oda.Owner   `json:"owner"`
	Children []oda.Child `json:"children"`
	// Delete lists children that are no longer desired.
	Delete []oda.Ref `json:"delete,omitempty"`
}

// AppliedChild is a child after the apply, with what its Component needs.
type AppliedChild struct {
	Kind   string         `json:"kind"`
	Name   string         `json:"name"`
	UID    string         `json:"uid"`
	Status map[string]any `json:"status,omitempty"`
}

// ApplyChildrenResult lists the applied children in input order.
type ApplyChildrenResult struct {
	Children []AppliedChild `json:"children"`
}

// ApplyChildren server-side-applies every desired child (so a field removed
// from the spec is removed from the child, and no write can hit a 409), sets
// the initial status of new notification children and deletes children that
// are no longer desired.
func (k *Kube) ApplyChildren(ctx context.Context, in ApplyChildrenInput) (ApplyChildrenResult, error) {
	kinds := make([]oda.Kind, len(in.Children))
	for i, c := range in.Children {
		kind, ok := oda.KindByName(c.Kind)
		if !ok {
			return ApplyChildrenResult{}, temporal.NewNonRetryableApplicationError("unknown child kind "+c.Kind, ErrTypeInvalid, nil)
		}
		kinds[i] = kind
	}
	// One child at a time, in order, on purpose: applied together they
	// reached the apiserver, and their workflows Temporal, in one burst,
	// which measured slower and costlier (bench, N=1 and N=100) than this
	// pipeline, where the first ExposedAPI's workflow is already running
	// while its siblings are applied.
	var out ApplyChildrenResult
	for i, c := range in.Children {
		applied, err := k.applyChild(ctx, in.Owner, kinds[i], c)
		if err != nil {
			return out, err
		}
		out.Children = append(out.Children, applied)
	}
	for _, ref := range in.Delete {
		kind, ok := oda.KindByName(ref.Kind)
		if !ok {
			continue
		}
		bg := metav1.DeletePropagationBackground
		err := k.Dynamic.Resource(kind.GVR()).Namespace(ref.Namespace).Delete(ctx, ref.Name, metav1.DeleteOptions{PropagationPolicy: &bg})
		if err != nil && !apierrors.IsNotFound(err) {
			return out, kubeError("delete "+ref.String(), err)
		}
	}
	return out, nil
}

// applyChild server-side-applies one child and, for a new notification
// child, sets its initial status.
func (k *Kube) applyChild(ctx context.Context, owner oda.Owner, kind oda.Kind, c oda.Child) (AppliedChild, error) {
	obj := &unstructured.Unstructured{Object: oda.ChildObject(owner, c)}
	body, err := json.Marshal(obj.Object)
	if err != nil {
		return AppliedChild{}, fmt.Errorf("encode %s %s: %w", c.Kind, c.Name, err)
	}
	force := true
	res := k.Dynamic.Resource(kind.GVR()).Namespace(owner.Namespace)
	applied, err := res.Patch(ctx, c.Name, types.ApplyPatchType, body, metav1.PatchOptions{FieldManager: oda.FieldManager, Force: &force})
	if err != nil {
		return AppliedChild{}, kubeError(fmt.Sprintf("apply %s %s/%s", c.Kind, owner.Namespace, c.Name), err)
	}
	status, _, _ := unstructured.NestedMap(applied.Object, "status")
	if c.InitialStatus != nil && kind.HasStatusSubresource && len(status) == 0 {
		patch, _ := json.Marshal(map[string]any{"status": c.InitialStatus})
		if _, err := res.Patch(ctx, c.Name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: oda.FieldManager}, "status"); err != nil {
			return AppliedChild{}, kubeError(fmt.Sprintf("initialise status of %s %s/%s", c.Kind, owner.Namespace, c.Name), err)
		}
		status = c.InitialStatus
	}
	return AppliedChild{Kind: c.Kind, Name: c.Name, UID: string(applied.GetUID()), Status: status}, nil
}

// WriteStatusInput is a status write on one ODA resource.
type WriteStatusInput struct {
	Ref oda.Ref `json:"ref"`
	UID string  `json:"uid"`
	// Status is merged into the object's status (JSON merge patch: objects
	// merge key by key, lists are replaced whole).
	Status map[string]any `json:"status"`
	// ObservedHash is recorded as an annotation: the desired state this
	// status answers. A restarted watcher skips objects whose hash matches.
	ObservedHash string `json:"observedHash,omitempty"`
	// Event, when set, is recorded as a Kubernetes Event on the object.
	Event *Event `json:"event,omitempty"`
	// Replace sets each status key whole (a JSON patch) instead of merging
	// it, so a key removed inside an object is removed. It needs the status
	// to exist: the first write of a lifecycle merges.
	Replace bool `json:"replace,omitempty"`
	// Fence, when set, keeps a write from an older workflow step from
	// overwriting a newer one (StatusFence).
	Fence *StatusFence `json:"fence,omitempty"`
	// ResourceVersion guards a first write (not Replace), which has no
	// earlier fence to test for: the object as the workflow last saw it. A
	// stale workflow task's first write would otherwise merge over a newer
	// task's status. On a conflict the object is read and the fences
	// decide (fencedMerge).
	ResourceVersion string `json:"resourceVersion,omitempty"`
}

// StatusFence orders the status writes of one resource's workflow. Local
// activities run while their workflow task is processed, before Temporal
// accepts the task; a worker too slow to finish a task within its timeout
// may still be running it after the task was given to another worker (or
// to itself again) and completed there. Without the fence, that stale run
// could write an older status over a newer one, and the workflow, which
// recorded the newer write, would never correct it.
type StatusFence struct {
	// RunStart is the workflow run's start time (Unix ns): a run continued
	// as new starts later than the one it continues.
	RunStart int64 `json:"runStart"`
	// Seq is the run's history length at the workflow task that writes.
	Seq int64 `json:"seq"`
	// Previous is the fence of the last write the workflow recorded as
	// done; the object still carries it unless a write it never recorded
	// (a stale run, or a run cut short by a crash) came in between.
	Previous string `json:"previous,omitempty"`
}

func (f StatusFence) String() string { return fmt.Sprintf("%d.%d", f.RunStart, f.Seq) }

// after reports whether f comes after the fence an object carries
// (current), so that f may overwrite it. A missing or unreadable fence
// comes before any.
func (f StatusFence) after(current string) bool {
	run, seq, ok := strings.Cut(current, ".")
	r, err1 := strconv.ParseInt(run, 10, 64)
	q, err2 := strconv.ParseInt(seq, 10, 64)
	if !ok || err1 != nil || err2 != nil {
		return true
	}
	return f.RunStart > r || (f.RunStart == r && f.Seq > q)
}

// Event is a Kubernetes Event to record.
type Event struct {
	Type    string `json:"type"` // Normal or Warning
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// WriteStatus patches status (and the observed-hash and status-fence
// annotations) onto the object. A later write tests for the fence of the
// workflow's previous one, a first write carries the resourceVersion the
// workflow last saw; only when that check fails does it read the object and
// let the fences decide (fencedMerge). Writing through
// the main resource is required: these CRDs have no status subresource.
func (k *Kube) WriteStatus(ctx context.Context, in WriteStatusInput) error {
	kind, ok := oda.KindByName(in.Ref.Kind)
	if !ok {
		return temporal.NewNonRetryableApplicationError("unknown kind "+in.Ref.Kind, ErrTypeInvalid, nil)
	}
	if len(in.Status) == 0 && in.ObservedHash == "" && in.Fence == nil {
		// Only an Event to record: an empty patch would be a request for
		// nothing.
		k.eventOf(ctx, in)
		return nil
	}
	res := k.Dynamic.Resource(kind.GVR()).Namespace(in.Ref.Namespace)
	var err error
	if in.Replace {
		err = k.replaceStatus(ctx, res, in)
	}
	var superseded bool
	switch {
	case in.Replace && in.Fence != nil && in.Fence.Previous != "" && (apierrors.IsInvalid(err) || apierrors.IsBadRequest(err)):
		// The object does not carry the fence of the workflow's last
		// recorded write: a newer step wrote since (this run is stale), or
		// an earlier run of this step wrote and crashed before Temporal
		// recorded it, or someone removed the annotations. Read and decide.
		superseded, err = k.fencedMerge(ctx, res, in)
	case !in.Replace && in.ResourceVersion != "" && in.Fence != nil:
		// A first write, onto the object as the workflow saw it. Changed
		// since (by a newer step of this workflow, or anyone): the fences
		// decide.
		err = k.mergeStatus(odaruntime.GuardedWrite(ctx), res, in, in.ResourceVersion)
		if apierrors.IsConflict(err) {
			superseded, err = k.fencedMerge(ctx, res, in)
		}
	case !in.Replace || apierrors.IsInvalid(err):
		// First write, or someone removed the status or the annotations
		// since: merge instead (a JSON patch cannot add below a missing key).
		err = k.mergeStatus(ctx, res, in, "")
	}
	if superseded {
		k.Log.Info("status write superseded by a newer one; skipped", "resource", in.Ref.String(), "fence", in.Fence.String())
		return nil
	}
	if apierrors.IsNotFound(err) {
		// Deleted meanwhile: nothing to report on, and the watcher tells the workflow.
		return nil
	}
	if err != nil {
		return kubeError("write status of "+in.Ref.String(), err)
	}
	k.eventOf(ctx, in)
	return nil
}

// eventOf records the write's Event, if it has one. An Event is
// information, not state: a failure is logged, never worth repeating the
// status write for.
func (k *Kube) eventOf(ctx context.Context, in WriteStatusInput) {
	if in.Event == nil {
		return
	}
	if err := k.recordEvent(ctx, in.Ref, in.UID, *in.Event, in.eventKey()); err != nil {
		k.Log.Warn("recording event failed", "resource", in.Ref.String(), "reason", in.Event.Reason, "err", err)
	}
}

// mergeStatus merge-patches the status and the bookkeeping annotations;
// with a resourceVersion, only onto that version of the object.
func (k *Kube) mergeStatus(ctx context.Context, res dynamic.ResourceInterface, in WriteStatusInput, resourceVersion string) error {
	patch := map[string]any{"status": in.Status}
	meta := map[string]any{}
	annotations := map[string]any{}
	if in.ObservedHash != "" {
		annotations[oda.AnnotationObservedHash] = in.ObservedHash
	}
	if in.Fence != nil {
		annotations[oda.AnnotationStatusFence] = in.Fence.String()
		if seal := k.seal(in); seal != "" {
			annotations[oda.AnnotationStatusSeal] = seal
		}
	}
	if len(annotations) > 0 {
		meta["annotations"] = annotations
	}
	if resourceVersion != "" {
		meta["resourceVersion"] = resourceVersion
	}
	if len(meta) > 0 {
		patch["metadata"] = meta
	}
	body, err := json.Marshal(patch)
	if err != nil {
		return fmt.Errorf("encode status of %s: %w", in.Ref, err)
	}
	_, err = res.Patch(ctx, in.Ref.Name, types.MergePatchType, body, metav1.PatchOptions{FieldManager: oda.FieldManager})
	return err
}

// replaceStatus sets every status key odaflow owns with JSON patch "add"
// operations (which replace an existing member whole); keys owned by other
// writers are untouched.
func (k *Kube) replaceStatus(ctx context.Context, res dynamic.ResourceInterface, in WriteStatusInput) error {
	ops := make([]map[string]any, 0, len(in.Status)+3)
	fencePath := "/metadata/annotations/" + jsonPointerEscape(oda.AnnotationStatusFence)
	if in.Fence != nil && in.Fence.Previous != "" {
		ops = append(ops, map[string]any{"op": "test", "path": fencePath, "value": in.Fence.Previous})
	}
	for _, key := range oda.SortedKeys(in.Status) {
		ops = append(ops, map[string]any{"op": "add", "path": "/status/" + jsonPointerEscape(key), "value": in.Status[key]})
	}
	if in.ObservedHash != "" {
		ops = append(ops, map[string]any{"op": "add", "path": "/metadata/annotations/" + jsonPointerEscape(oda.AnnotationObservedHash), "value": in.ObservedHash})
	}
	if in.Fence != nil {
		ops = append(ops, map[string]any{"op": "add", "path": fencePath, "value": in.Fence.String()})
		if seal := k.seal(in); seal != "" {
			ops = append(ops, map[string]any{"op": "add", "path": "/metadata/annotations/" + jsonPointerEscape(oda.AnnotationStatusSeal), "value": seal})
		}
	}
	body, err := json.Marshal(ops)
	if err != nil {
		return fmt.Errorf("encode status of %s: %w", in.Ref, err)
	}
	_, err = res.Patch(ctx, in.Ref.Name, types.JSONPatchType, body, metav1.PatchOptions{FieldManager: oda.FieldManager})
	return err
}

// fencedMerge writes the status unless the object carries the fence of a
// newer step (superseded), with the object's resourceVersion so that no
// write slips in between the read and the write.
func (k *Kube) fencedMerge(ctx context.Context, res dynamic.ResourceInterface, in WriteStatusInput) (superseded bool, err error) {
	// A conflict means the object changed between the read and the write:
	// read it again.
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		obj, err := res.Get(ctx, in.Ref.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if string(obj.GetUID()) != in.UID && in.UID != "" {
			// Another object under the same name: the one this status is
			// for is gone, which WriteStatus treats as deleted meanwhile.
			return apierrors.NewNotFound(schema.GroupResource{Resource: in.Ref.Kind}, in.Ref.Name)
		}
		current := obj.GetAnnotations()[oda.AnnotationStatusFence]
		if !in.Fence.after(current) && k.fenceIsOdaflows(obj, current) {
			superseded = true
			return nil
		}
		return k.overwriteStatus(odaruntime.GuardedWrite(ctx), res, in, obj)
	})
	return superseded, err
}

// fenceIsOdaflows reports whether the object's fence is one odaflow wrote:
// its seal vouches for it, on this object. A fence anyone else wrote (a
// tenant's maximal one) is no reason to skip a write. Without a key every
// fence counts, as before seals.
func (k *Kube) fenceIsOdaflows(obj *unstructured.Unstructured, fence string) bool {
	if len(k.StatusKey) == 0 {
		return true
	}
	return oda.SealVouchesFence(k.StatusKey, string(obj.GetUID()), fence, obj.GetAnnotations()[oda.AnnotationStatusSeal])
}

// seal is the status-seal annotation of the write, "" without a key.
func (k *Kube) seal(in WriteStatusInput) string {
	if len(k.StatusKey) == 0 || in.Fence == nil {
		return ""
	}
	return oda.Seal(k.StatusKey, in.UID, in.Fence.String(), in.Status)
}

// overwriteStatus writes the status onto the object as read (obj, whose
// resourceVersion guards the write): each key odaflow writes is set whole,
// so whatever someone else put inside it (a member odaflow's value does not
// have) is gone and the object holds exactly what the seal vouches for. A
// merge patch would keep such members.
func (k *Kube) overwriteStatus(ctx context.Context, res dynamic.ResourceInterface, in WriteStatusInput, obj *unstructured.Unstructured) error {
	if _, ok := obj.Object["status"].(map[string]any); !ok || obj.GetAnnotations() == nil {
		// Nothing to set keys inside: a merge adds the status (or the
		// annotations) whole.
		return k.mergeStatus(ctx, res, in, obj.GetResourceVersion())
	}
	// A resourceVersion in the patched object makes the apiserver refuse
	// the write with a Conflict where the object changed since the read,
	// whatever the patch type.
	ops := []map[string]any{{"op": "replace", "path": "/metadata/resourceVersion", "value": obj.GetResourceVersion()}}
	for _, key := range oda.SortedKeys(in.Status) {
		ops = append(ops, map[string]any{"op": "add", "path": "/status/" + jsonPointerEscape(key), "value": in.Status[key]})
	}
	annotations := map[string]string{oda.AnnotationStatusFence: in.Fence.String()}
	if in.ObservedHash != "" {
		annotations[oda.AnnotationObservedHash] = in.ObservedHash
	}
	if seal := k.seal(in); seal != "" {
		annotations[oda.AnnotationStatusSeal] = seal
	}
	for _, a := range oda.SortedKeys(annotations) {
		ops = append(ops, map[string]any{"op": "add", "path": "/metadata/annotations/" + jsonPointerEscape(a), "value": annotations[a]})
	}
	body, err := json.Marshal(ops)
	if err != nil {
		return fmt.Errorf("encode status of %s: %w", in.Ref, err)
	}
	_, err = res.Patch(ctx, in.Ref.Name, types.JSONPatchType, body, metav1.PatchOptions{FieldManager: oda.FieldManager})
	return err
}

func jsonPointerEscape(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// eventKey names the Event of a fenced status write after the step that
// writes it: the run and the last write the workflow recorded before it,
// plus the Event itself. A run of the step repeated after a crash (the
// workflow never recorded the first) has the same key, whatever its
// history length by then, so its Event is not recorded twice; any later
// step has recorded a write in between and gets a new key. Unfenced writes
// get none.
func (in WriteStatusInput) eventKey() string {
	if in.Fence == nil || in.Event == nil {
		return ""
	}
	sum := sha256.Sum256([]byte(strings.Join([]string{
		in.UID, strconv.FormatInt(in.Fence.RunStart, 10), in.Fence.Previous, in.Event.Type, in.Event.Reason, in.Event.Message,
	}, "\x00")))
	return hex.EncodeToString(sum[:8])
}

// recordEvent creates the Event; with a key, under a name made of it, and
// an Event of that name already there is the same Event recorded before.
func (k *Kube) recordEvent(ctx context.Context, ref oda.Ref, uid string, e Event, key string) error {
	name := ref.Name + "." + rand.String(10)
	if key != "" {
		name = ref.Name + "." + key
	}
	now := metav1.Now()
	ev := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{
			Name:      name,
			Namespace: ref.Namespace,
		},
		InvolvedObject: corev1.ObjectReference{
			APIVersion: oda.APIVersion, Kind: ref.Kind, Namespace: ref.Namespace,
			Name: ref.Name, UID: types.UID(uid),
		},
		Reason:              e.Reason,
		Message:             e.Message,
		Type:                e.Type,
		FirstTimestamp:      now,
		LastTimestamp:       now,
		Count:               1,
		Source:              corev1.EventSource{Component: "odaflow"},
		ReportingController: "oda.tmforum.org/odaflow",
		ReportingInstance:   "odaflow-worker",
	}
	_, err := k.Core.CoreV1().Events(ref.Namespace).Create(ctx, ev, metav1.CreateOptions{})
	if key != "" && apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// RemoveFinalizersInput names the finalizers to take off an object.
type RemoveFinalizersInput struct {
	Ref        oda.Ref  `json:"ref"`
	UID        string   `json:"uid"`
	Finalizers []string `json:"finalizers"`
}

// RemoveFinalizers takes the named finalizers off an object with a JSON
// patch guarded by a test on the uid, so a new object under the same name is
// never touched. Other controllers' finalizers stay.
func (k *Kube) RemoveFinalizers(ctx context.Context, in RemoveFinalizersInput) error {
	kind, ok := oda.KindByName(in.Ref.Kind)
	if !ok {
		return temporal.NewNonRetryableApplicationError("unknown kind "+in.Ref.Kind, ErrTypeInvalid, nil)
	}
	res := k.Dynamic.Resource(kind.GVR()).Namespace(in.Ref.Namespace)
	obj, err := res.Get(ctx, in.Ref.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return kubeError("read "+in.Ref.String(), err)
	}
	if string(obj.GetUID()) != in.UID {
		return nil
	}
	remove := map[string]bool{}
	for _, f := range in.Finalizers {
		remove[f] = true
	}
	var keep []string
	for _, f := range obj.GetFinalizers() {
		if !remove[f] {
			keep = append(keep, f)
		}
	}
	if len(keep) == len(obj.GetFinalizers()) {
		return nil
	}
	patch, _ := json.Marshal([]map[string]any{
		{"op": "test", "path": "/metadata/uid", "value": in.UID},
		{"op": "replace", "path": "/metadata/finalizers", "value": keep},
	})
	_, err = res.Patch(ctx, in.Ref.Name, types.JSONPatchType, patch, metav1.PatchOptions{FieldManager: oda.FieldManager})
	if err != nil && !apierrors.IsNotFound(err) {
		return kubeError("remove finalizers of "+in.Ref.String(), err)
	}
	return nil
}

// apiserverOutage spaces an activity's repeats of an apiserver call while
// the apiserver restarts: 0.5, 1, 2, 4, 8, 8 and 8 s, about half a minute
// (the liveness heartbeats keep the activity alive meanwhile).
var apiserverOutage = wait.Backoff{Duration: 500 * time.Millisecond, Factor: 2, Steps: 8, Cap: 8 * time.Second}

// throughOutage repeats an idempotent apiserver call (a read, an apply, a
// delete) while the apiserver cannot answer (unreachable, 5xx, 429), and
// returns the last error if it stays so. Any other answer, a 404 included,
// is final. The identity activities need it: their retry budget is sized
// for Keycloak.
func throughOutage(ctx context.Context, call func() error) error {
	var last error
	err := wait.ExponentialBackoffWithContext(ctx, apiserverOutage, func(context.Context) (bool, error) {
		last = call()
		return last == nil || !apiserverUnavailable(last), nil
	})
	if err != nil && last == nil {
		return err
	}
	return last
}

// apiserverUnavailable: no answer at all (a refused connection, a reset, a
// TLS handshake cut short), or an answer that says "not now".
func apiserverUnavailable(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		code := status.Status().Code
		return code >= 500 || code == http.StatusTooManyRequests
	}
	return true
}

// kubeError wraps an apiserver error for Temporal: content errors (422, 400)
// and writes into a namespace being deleted do not retry, everything else
// does.
func kubeError(what string, err error) error {
	switch {
	case apierrors.IsInvalid(err) || apierrors.IsBadRequest(err):
		return temporal.NewNonRetryableApplicationError(fmt.Sprintf("%s: %v", what, err), ErrTypeInvalid, err)
	case apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
		return temporal.NewNonRetryableApplicationError(fmt.Sprintf("%s: %v", what, err), ErrTypeNamespaceTerminating, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// AdoptInput names the workloads a Component adopts.
type AdoptInput struct {
	Owner     oda.Owner         `json:"owner"`
	Workloads []oda.WorkloadRef `json:"workloads"`
}

// AdoptWorkloads adds the Component as owner of each workload with a
// server-side apply of metadata.ownerReferences under its own field manager:
// owner references merge by uid, so the workload's other owners and every
// other field stay as they are (the Python operator PATCHes the whole
// object back). The reference is the controller one, as in the Canvas,
// unless the workload already has a controller.
func (k *Kube) AdoptWorkloads(ctx context.Context, in AdoptInput) error {
	for _, w := range in.Workloads {
		gvr := schema.GroupVersionResource{Group: w.Group, Version: w.Version, Resource: w.Resource}
		res := k.Dynamic.Resource(gvr).Namespace(in.Owner.Namespace)
		err := k.applyOwner(ctx, res, w, in.Owner, true)
		if apierrors.IsInvalid(err) {
			err = k.applyOwner(ctx, res, w, in.Owner, false)
		}
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			continue // gone, or replaced by a new object (uid precondition)
		}
		if err != nil {
			return kubeError(fmt.Sprintf("adopt %s %s/%s", w.Resource, in.Owner.Namespace, w.Name), err)
		}
	}
	return nil
}

func (k *Kube) applyOwner(ctx context.Context, res dynamic.ResourceInterface, w oda.WorkloadRef, owner oda.Owner, controller bool) error {
	apiVersion := w.Version
	if w.Group != "" {
		apiVersion = w.Group + "/" + w.Version
	}
	body, _ := json.Marshal(map[string]any{
		"apiVersion": apiVersion, "kind": workloadKinds[w.Resource],
		"metadata": map[string]any{
			"name": w.Name, "uid": w.UID,
			"ownerReferences": []any{map[string]any{
				"apiVersion": oda.APIVersion, "kind": oda.KindComponent.Name, "name": owner.Name, "uid": owner.UID,
				"controller": controller, "blockOwnerDeletion": true,
			}},
		},
	})
	force := true
	_, err := res.Patch(ctx, w.Name, types.ApplyPatchType, body, metav1.PatchOptions{FieldManager: oda.FieldManager + "-adopt", Force: &force})
	return err
}

// workloadKinds maps the adopted resources to their kinds.
var workloadKinds = map[string]string{
	"services": "Service", "configmaps": "ConfigMap", "secrets": "Secret", "serviceaccounts": "ServiceAccount",
	"persistentvolumeclaims": "PersistentVolumeClaim", "deployments": "Deployment", "statefulsets": "StatefulSet",
	"jobs": "Job", "cronjobs": "CronJob", "roles": "Role", "rolebindings": "RoleBinding",
}

// EnsureFinalizerInput names the resource that needs odaflow's finalizer.
type EnsureFinalizerInput struct {
	Ref oda.Ref `json:"ref"`
	UID string  `json:"uid"`
}

// EnsureFinalizer adds odaflow's finalizer with a server-side apply under a
// field manager of its own: the apply owns only that list entry, so it never
// conflicts with the Component that owns the spec, and the uid in the body
// makes it fail (409) rather than touch a new object under the same name.
func (k *Kube) EnsureFinalizer(ctx context.Context, in EnsureFinalizerInput) error {
	_, err := k.applyFinalizer(ctx, in)
	return err
}

// applyFinalizer is EnsureFinalizer, answering the object's new
// resourceVersion.
func (k *Kube) applyFinalizer(ctx context.Context, in EnsureFinalizerInput) (string, error) {
	kind, ok := oda.KindByName(in.Ref.Kind)
	if !ok {
		return "", temporal.NewNonRetryableApplicationError("unknown kind "+in.Ref.Kind, ErrTypeInvalid, nil)
	}
	body, err := json.Marshal(map[string]any{
		"apiVersion": oda.APIVersion, "kind": kind.Name,
		"metadata": map[string]any{"name": in.Ref.Name, "namespace": in.Ref.Namespace, "uid": in.UID, "finalizers": []string{oda.Finalizer}},
	})
	if err != nil {
		return "", fmt.Errorf("encode finalizer apply: %w", err)
	}
	force := true
	out, err := k.Dynamic.Resource(kind.GVR()).Namespace(in.Ref.Namespace).Patch(ctx, in.Ref.Name, types.ApplyPatchType, body,
		metav1.PatchOptions{FieldManager: oda.FieldManager + "-finalizer", Force: &force})
	if err != nil {
		return "", kubeError("add finalizer to "+in.Ref.String(), err)
	}
	return out.GetResourceVersion(), nil
}
