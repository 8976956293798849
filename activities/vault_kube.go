package activities

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/odaflow/odaflow/oda"
	"github.com/odaflow/odaflow/secrets"
)

// AnnotationRestartedAt is the pod-template annotation `kubectl rollout
// restart` sets; changing it rolls a workload's pods.
const AnnotationRestartedAt = "kubectl.kubernetes.io/restartedAt"

// maxListedPods bounds the pod names a result carries into workflow
// history.
const maxListedPods = 20

// SecretsSidecarsInput asks which selected pods lack the sidecar, and
// optionally to restart them.
type SecretsSidecarsInput struct {
	Namespace string       `json:"namespace"`
	Name      string       `json:"name"`
	Spec      secrets.Spec `json:"spec"`
	// Restart rolls the Deployments and StatefulSets (and DaemonSets) of
	// pods without the sidecar, at most MaxRestarts per call, and none
	// restarted less than MinInterval ago (a rollout in progress).
	Restart     bool          `json:"restart,omitempty"`
	MaxRestarts int           `json:"maxRestarts,omitempty"`
	MinInterval time.Duration `json:"minInterval,omitempty"`
}

// SecretsSidecarsResult counts the selected pods (names are capped).
type SecretsSidecarsResult struct {
	Selected int `json:"selected"`
	Missing  int `json:"missing"`
	// MissingPods names up to 20 pods without the sidecar.
	MissingPods []string `json:"missingPods,omitempty"`
	// Restarted are the workloads rolled by this call, kind/name.
	Restarted []string `json:"restarted,omitempty"`
	// Unmanaged are pods without the sidecar and without a workload
	// odaflow can roll (bare pods, Jobs): they need a manual restart.
	Unmanaged []string `json:"unmanaged,omitempty"`
}

// SecretsSidecars lists the pods a SecretsManagement selects and finds
// those running without the sidecar (created before the webhook, or while
// the SecretsManagement did not exist). With Restart it rolls their owner
// workloads instead of deleting pods (the Canvas deleted them, §5.5.4), so
// a rollout keeps the workload's availability guarantees; at most
// MaxRestarts per call bounds the churn one SecretsManagement can cause.
func (k *Kube) SecretsSidecars(ctx context.Context, in SecretsSidecarsInput) (SecretsSidecarsResult, error) {
	var out SecretsSidecarsResult
	pods, err := k.Core.CoreV1().Pods(in.Namespace).List(ctx, metav1.ListOptions{
		LabelSelector: secrets.LabelSecretsManagement + "=" + secrets.LabelSidecarValue,
	})
	if err != nil {
		return out, kubeError("list pods of SecretsManagement "+in.Namespace+"/"+in.Name, err)
	}
	type owner struct{ kind, name string }
	var owners []owner
	seen := map[owner]bool{}
	rsCache := map[string]*metav1.OwnerReference{}
	for i := range pods.Items {
		pod := &pods.Items[i]
		if pod.DeletionTimestamp != nil || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
			continue
		}
		info := secrets.PodInfoOf(pod)
		if !secrets.Selects(in.Name, in.Spec, info) {
			continue
		}
		out.Selected++
		if info.HasSidecar() {
			continue
		}
		out.Missing++
		if len(out.MissingPods) < maxListedPods {
			out.MissingPods = append(out.MissingPods, pod.Name)
		}
		o, err := k.workloadOf(ctx, pod, rsCache)
		if err != nil {
			return out, err
		}
		if o == nil {
			if len(out.Unmanaged) < maxListedPods {
				out.Unmanaged = append(out.Unmanaged, pod.Name)
			}
			continue
		}
		key := owner{o.Kind, o.Name}
		if !seen[key] {
			seen[key] = true
			owners = append(owners, key)
		}
	}
	sort.Strings(out.MissingPods)
	if !in.Restart {
		return out, nil
	}
	sort.Slice(owners, func(i, j int) bool { return owners[i].kind+owners[i].name < owners[j].kind+owners[j].name })
	now := time.Now().UTC()
	for _, o := range owners {
		if in.MaxRestarts > 0 && len(out.Restarted) >= in.MaxRestarts {
			break
		}
		restarted, err := k.rollWorkload(ctx, in.Namespace, o.kind, o.name, now, in.MinInterval)
		if err != nil {
			return out, err
		}
		if restarted {
			out.Restarted = append(out.Restarted, o.kind+"/"+o.name)
		}
	}
	if len(out.Restarted) > 0 {
		k.Log.Info("rolled workloads to add the secrets sidecar", "secretsManagement", in.Namespace+"/"+in.Name, "workloads", out.Restarted)
	}
	return out, nil
}

// workloadOf finds the rollable workload of a pod: its Deployment (through
// the ReplicaSet), StatefulSet or DaemonSet; nil for anything else.
func (k *Kube) workloadOf(ctx context.Context, pod *corev1.Pod, rsCache map[string]*metav1.OwnerReference) (*metav1.OwnerReference, error) {
	ref := metav1.GetControllerOf(pod)
	if ref == nil {
		return nil, nil
	}
	switch ref.Kind {
	case "StatefulSet", "DaemonSet":
		return ref, nil
	case "ReplicaSet":
		if o, ok := rsCache[ref.Name]; ok {
			return o, nil
		}
		rs, err := k.Core.AppsV1().ReplicaSets(pod.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			rsCache[ref.Name] = nil
			return nil, nil
		}
		if err != nil {
			return nil, kubeError("read ReplicaSet "+pod.Namespace+"/"+ref.Name, err)
		}
		o := metav1.GetControllerOf(rs)
		if o != nil && o.Kind != "Deployment" {
			o = nil
		}
		rsCache[ref.Name] = o
		return o, nil
	}
	return nil, nil
}

// rollWorkload sets the restartedAt annotation of the pod template, unless
// it was set less than minInterval ago (odaflow's own rollout still rolling).
func (k *Kube) rollWorkload(ctx context.Context, ns, kind, name string, now time.Time, minInterval time.Duration) (bool, error) {
	apps := k.Core.AppsV1()
	var annotations map[string]string
	var err error
	switch kind {
	case "Deployment":
		obj, e := apps.Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if e == nil {
			annotations = obj.Spec.Template.Annotations
		}
		err = e
	case "StatefulSet":
		obj, e := apps.StatefulSets(ns).Get(ctx, name, metav1.GetOptions{})
		if e == nil {
			annotations = obj.Spec.Template.Annotations
		}
		err = e
	case "DaemonSet":
		obj, e := apps.DaemonSets(ns).Get(ctx, name, metav1.GetOptions{})
		if e == nil {
			annotations = obj.Spec.Template.Annotations
		}
		err = e
	default:
		return false, nil
	}
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, kubeError(fmt.Sprintf("read %s %s/%s", kind, ns, name), err)
	}
	if last, perr := time.Parse(time.RFC3339, annotations[AnnotationRestartedAt]); perr == nil && now.Sub(last) < minInterval {
		return false, nil
	}
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"template": map[string]any{"metadata": map[string]any{
		"annotations": map[string]string{AnnotationRestartedAt: now.Format(time.RFC3339)},
	}}}})
	if err != nil {
		return false, fmt.Errorf("encode restart patch: %w", err)
	}
	opts := metav1.PatchOptions{FieldManager: oda.FieldManager}
	switch kind {
	case "Deployment":
		_, err = apps.Deployments(ns).Patch(ctx, name, types.StrategicMergePatchType, patch, opts)
	case "StatefulSet":
		_, err = apps.StatefulSets(ns).Patch(ctx, name, types.StrategicMergePatchType, patch, opts)
	case "DaemonSet":
		_, err = apps.DaemonSets(ns).Patch(ctx, name, types.StrategicMergePatchType, patch, opts)
	}
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, kubeError(fmt.Sprintf("restart %s %s/%s", kind, ns, name), err)
	}
	return true, nil
}
