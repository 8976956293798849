package activities

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"go.temporal.io/sdk/temporal"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/odaflow/odaflow/gateway"
	"github.com/odaflow/odaflow/oda"
)

// Exposure publishes ExposedAPIs through the configured gateway.
type Exposure struct {
	Kube   *Kube
	Config gateway.Config
	// Kong configures Kong through its Admin API. It is required when
	// Config.Gateway is kong-admin and nil otherwise.
	Kong *KongAdmin

	// vs caches the VirtualService apiVersion the cluster serves.
	vs servedVersion
}

// servedVersion is an apiVersion found through discovery, kept for
// servedVersionTTL so that an Istio upgrade (or its first install) is
// seen without a discovery request per write.
type servedVersion struct {
	mu      sync.Mutex
	version string
	at      time.Time
}

const servedVersionTTL = time.Minute

// config is the gateway config with the VirtualService apiVersion the
// cluster serves (v1, else v1beta1, else v1alpha3): Istio before 1.22 has
// no v1. Set by hand in Config, it is used as it is.
func (e *Exposure) config() (gateway.Config, error) {
	cfg := e.Config
	if cfg.VirtualServiceAPIVersion != "" || e.Kube == nil || e.Kube.Core == nil {
		return cfg, nil
	}
	e.vs.mu.Lock()
	defer e.vs.mu.Unlock()
	if e.vs.version != "" && time.Since(e.vs.at) < servedVersionTTL {
		cfg.VirtualServiceAPIVersion = e.vs.version
		return cfg, nil
	}
	disc := e.Kube.Core.Discovery()
	var lookupErr error
	version := gateway.PickVirtualServiceAPIVersion(func(v string) bool {
		if lookupErr != nil {
			return false
		}
		list, err := disc.ServerResourcesForGroupVersion(gateway.VirtualServiceGroup + "/" + v)
		if err != nil {
			if !apierrors.IsNotFound(err) {
				lookupErr = err
			}
			return false
		}
		for _, r := range list.APIResources {
			if r.Name == gateway.VirtualServiceResource {
				return true
			}
		}
		return false
	})
	if lookupErr != nil {
		return cfg, fmt.Errorf("discovering the VirtualService versions the cluster serves: %w", lookupErr)
	}
	if version == "" {
		// No Istio (yet): write v1, whose apply then fails and is
		// retried, and look again next time.
		return cfg, nil
	}
	e.vs.version, e.vs.at = version, time.Now()
	cfg.VirtualServiceAPIVersion = version
	return cfg, nil
}

// ObjectRef is a gateway object odaflow applied.
type ObjectRef struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace"`
	Name       string `json:"name"`
	UID        string `json:"uid,omitempty"`
	// Owned objects go with the ExposedAPI through garbage collection;
	// the others are deleted explicitly behind a finalizer.
	Owned bool `json:"owned"`
}

// key names the object whatever version it was applied with: the same
// VirtualService applied as v1beta1 and then, after an Istio upgrade, as v1
// is one object, which must be kept, not deleted as no longer desired.
func (r ObjectRef) key() string {
	group := r.APIVersion
	if i := strings.LastIndex(group, "/"); i >= 0 {
		group = group[:i]
	} else {
		group = "" // the core group: "v1"
	}
	return group + "/" + r.Kind + "/" + r.Namespace + "/" + r.Name
}

// ExposeInput is one ExposedAPI whose gateway objects to apply, or remove.
type ExposeInput struct {
	API     gateway.API      `json:"api"`
	Ingress *gateway.Ingress `json:"ingress,omitempty"`
	// Remove deletes the objects instead: nothing may stay published under
	// an API that failed (invalid spec, a path prefix another ExposedAPI
	// holds).
	Remove bool `json:"remove,omitempty"`
	// SkipApply reuses Applied: only the url is asked for.
	SkipApply bool        `json:"skipApply,omitempty"`
	Applied   []ObjectRef `json:"applied,omitempty"`
}

// ExposeResult is what the gateway now serves for the API.
type ExposeResult struct {
	Applied []ObjectRef `json:"applied,omitempty"`
	// APIStatus is status.apiStatus; Addressed is false while the gateway
	// has no address, so the url is not known yet.
	APIStatus map[string]any `json:"apiStatus,omitempty"`
	Addressed bool           `json:"addressed,omitempty"`
	// ResourceVersion is the ExposedAPI's version after odaflow's finalizer
	// went on ("" when this call did not add it).
	ResourceVersion string `json:"resourceVersion,omitempty"`
}

// Expose applies the gateway objects the API needs (server-side apply) and
// deletes the ones it no longer needs, or with Remove all of them, and
// answers the url the gateway serves it under. The workflow decides the
// phase and writes the status.
func (e *Exposure) Expose(ctx context.Context, in ExposeInput) (ExposeResult, error) {
	res := ExposeResult{Applied: in.Applied}
	if in.Remove {
		if err := e.deleteObjects(ctx, in.API.Namespace, in.API.Name, in.Applied, nil); err != nil {
			return res, err
		}
		if e.Kong != nil {
			if err := e.Kong.Remove(ctx, KongRemoveInput{Namespace: in.API.Namespace, Name: in.API.Name}); err != nil {
				return res, err
			}
		}
		res.Applied = nil
		return res, nil
	}
	spec, err := gateway.ParseSpec(in.API.Spec)
	if err != nil {
		return res, temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeInvalid, err)
	}
	// Objects applied in a shared namespace under a name odaflow no longer
	// gives them (before v0.2.0 they were named after the ExposedAPI alone)
	// are re-applied under the current names, and the old ones deleted,
	// even when the spec is unchanged.
	if !in.SkipApply || e.staleShared(in.API, in.Applied) {
		if e.Config.Gateway == gateway.GatewayKongAdmin {
			v, err := e.exposeKongAdmin(ctx, in.API)
			if err != nil {
				return res, err
			}
			res.ResourceVersion = v
		}
		applied, v, err := e.apply(ctx, in.API, spec, in.Applied)
		if err != nil {
			return res, err
		}
		res.Applied = applied
		if v != "" {
			res.ResourceVersion = v
		}
	}
	if err := e.annotateMetricsPods(ctx, in.API, spec); err != nil {
		return res, err
	}
	res.APIStatus, res.Addressed = gateway.APIStatus(e.Config, in.API, spec, derefIngress(in.Ingress))
	for _, r := range res.Applied {
		if r.Owned && r.UID != "" {
			res.APIStatus["uid"] = r.UID // the Canvas reports the route object's uid
			break
		}
	}
	return res, nil
}

// annotateMetricsPods makes a metrics API scrapable in the annotation
// metrics modes (PrometheusAnnotation, DataDogAnnotation): the pods its
// implementation Service selects get gateway.MetricsPodAnnotations. Every
// such pod, not only the first as in the Canvas: each replica serves its
// own metrics. Before the Service or its pods exist there is nothing to
// annotate; the workflow calls again when the implementation becomes ready.
// A pod created later (a rollout) is annotated at the next call, which the
// implementation's next readiness change or spec change brings.
func (e *Exposure) annotateMetricsPods(ctx context.Context, api gateway.API, spec gateway.Spec) error {
	cfg := e.Config.WithDefaults()
	if !gateway.IsMetrics(spec.APIType) || (cfg.MetricsMode != gateway.MetricsPrometheusAnnotation && cfg.MetricsMode != gateway.MetricsDataDogAnnotation) {
		return nil
	}
	core := e.Kube.Core.CoreV1()
	svc, err := core.Services(api.Namespace).Get(ctx, spec.Implementation, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return kubeError(fmt.Sprintf("read Service %s/%s of metrics API %s", api.Namespace, spec.Implementation, api.Name), err)
	}
	if len(svc.Spec.Selector) == 0 {
		// A Service without a selector has hand-made endpoints: no pods
		// of its own to annotate.
		return nil
	}
	pods, err := core.Pods(api.Namespace).List(ctx, metav1.ListOptions{LabelSelector: labels.SelectorFromSet(svc.Spec.Selector).String()})
	if err != nil {
		return kubeError(fmt.Sprintf("list the pods of Service %s/%s", api.Namespace, spec.Implementation), err)
	}
	for _, pod := range pods.Items {
		if pod.DeletionTimestamp != nil {
			continue
		}
		container := ""
		if len(pod.Spec.Containers) > 0 {
			container = pod.Spec.Containers[0].Name
		}
		missing := missingAnnotations(pod.Annotations, gateway.MetricsPodAnnotations(cfg, api, spec, container))
		if len(missing) == 0 {
			continue
		}
		body, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": missing}})
		if err != nil {
			return fmt.Errorf("encode the annotations of pod %s/%s: %w", pod.Namespace, pod.Name, err)
		}
		_, err = core.Pods(pod.Namespace).Patch(ctx, pod.Name, types.MergePatchType, body, metav1.PatchOptions{FieldManager: oda.FieldManager})
		if err != nil && !apierrors.IsNotFound(err) { // a pod gone meanwhile needs nothing
			return kubeError(fmt.Sprintf("annotate pod %s/%s for metrics API %s", pod.Namespace, pod.Name, api.Name), err)
		}
	}
	return nil
}

// missingAnnotations are the entries of want that have is missing or holds
// with another value: the patch that makes have carry want, nil when it
// does already (no write for a pod annotated before).
func missingAnnotations(have, want map[string]string) map[string]string {
	var out map[string]string
	for k, v := range want {
		if cur, ok := have[k]; !ok || cur != v {
			if out == nil {
				out = map[string]string{}
			}
			out[k] = v
		}
	}
	return out
}

func derefIngress(in *gateway.Ingress) gateway.Ingress {
	if in == nil {
		return gateway.Ingress{}
	}
	return *in
}

// apply server-side-applies the desired gateway objects and deletes the
// previously applied ones that are no longer desired (a policy switched
// off removes its plugin).
// It answers the ExposedAPI's new resourceVersion when it added the
// finalizer (objects it cannot own need it).
func (e *Exposure) apply(ctx context.Context, api gateway.API, spec gateway.Spec, previous []ObjectRef) ([]ObjectRef, string, error) {
	cfg, err := e.config()
	if err != nil {
		return nil, "", err
	}
	objs, err := gateway.Desired(cfg, api, spec)
	if err != nil {
		return nil, "", temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeInvalid, err)
	}
	var applied []ObjectRef
	unowned := false
	for _, o := range objs {
		u := &unstructured.Unstructured{Object: o.Object}
		ri, err := e.resource(u.GetAPIVersion(), u.GetKind(), u.GetNamespace())
		if err != nil {
			return nil, "", err
		}
		if !o.Owned {
			version, err := sharedVersion(ctx, ri, u, api)
			if err != nil {
				return nil, "", err
			}
			// The apply is refused (Conflict, retried) if the object
			// changed since its owner was checked.
			u.SetResourceVersion(version)
		}
		body, err := json.Marshal(u.Object)
		if err != nil {
			return nil, "", fmt.Errorf("encode %s %s: %w", u.GetKind(), u.GetName(), err)
		}
		force := true
		out, err := ri.Patch(ctx, u.GetName(), types.ApplyPatchType, body, metav1.PatchOptions{FieldManager: oda.FieldManager, Force: &force})
		if err != nil {
			return nil, "", kubeError(fmt.Sprintf("apply %s %s/%s", u.GetKind(), u.GetNamespace(), u.GetName()), err)
		}
		applied = append(applied, ObjectRef{APIVersion: u.GetAPIVersion(), Kind: u.GetKind(), Namespace: u.GetNamespace(), Name: u.GetName(), UID: string(out.GetUID()), Owned: o.Owned})
		unowned = unowned || !o.Owned
	}
	var version string
	if unowned {
		if version, err = e.ensureFinalizer(ctx, api); err != nil {
			return nil, "", err
		}
	}
	keep := map[string]bool{}
	for _, r := range applied {
		keep[r.key()] = true
	}
	if err := e.deleteObjects(ctx, api.Namespace, api.Name, previous, keep); err != nil {
		return nil, "", err
	}
	return applied, version, nil
}

// sharedVersion checks an object about to be applied in a shared namespace
// (one the ExposedAPI cannot own): absent, or written for this API
// (gateway.Owns). It answers the object's resourceVersion ("" when absent)
// to make the apply conditional on it. Anything else there belongs to
// another tenant's API or to no one odaflow knows: it is not overwritten.
func sharedVersion(ctx context.Context, ri dynamic.ResourceInterface, u *unstructured.Unstructured, api gateway.API) (string, error) {
	what := fmt.Sprintf("%s %s/%s", u.GetKind(), u.GetNamespace(), u.GetName())
	cur, err := ri.Get(ctx, u.GetName(), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return "", nil
	}
	if err != nil {
		return "", kubeError("get "+what, err)
	}
	if !gateway.Owns(cur.GetAnnotations(), api.Namespace, api.Name) {
		// Retried with backoff by the workflow: the object may go.
		return "", temporal.NewNonRetryableApplicationError(
			what+" exists and was not written for this ExposedAPI; odaflow does not overwrite it", ErrTypeInvalid, nil)
	}
	return cur.GetResourceVersion(), nil
}

// staleShared reports whether applied holds an object in a shared namespace
// (not owned) that the gateway would not name so today.
func (e *Exposure) staleShared(api gateway.API, applied []ObjectRef) bool {
	current := map[string]bool{}
	for _, r := range gateway.Managed(e.Config, api) {
		current[ObjectRef{APIVersion: r.APIVersion, Kind: r.Kind, Namespace: r.Namespace, Name: r.Name}.key()] = true
	}
	for _, r := range applied {
		if !r.Owned && !current[r.key()] {
			return true
		}
	}
	return false
}

// exposeKongAdmin publishes the API through Kong's Admin API. The
// finalizer comes first: Kong's entities live outside the cluster, so only
// the finalizer makes a deletion wait for Unexpose to remove them, even one
// that arrives while this call is under way.
func (e *Exposure) exposeKongAdmin(ctx context.Context, api gateway.API) (string, error) {
	if e.Kong == nil {
		return "", temporal.NewNonRetryableApplicationError(
			"the kong-admin gateway needs the Kong Admin API URL (Exposure.Kong is not configured)", ErrTypeInvalid, nil)
	}
	version, err := e.ensureFinalizer(ctx, api)
	if err != nil {
		return "", err
	}
	if _, err := e.Kong.Sync(ctx, KongSyncInput{Config: e.Config, API: api}); err != nil {
		return "", err
	}
	return version, nil
}

// ensureFinalizer adds odaflow's finalizer to the ExposedAPI.
func (e *Exposure) ensureFinalizer(ctx context.Context, api gateway.API) (string, error) {
	return e.Kube.applyFinalizer(ctx, EnsureFinalizerInput{Ref: oda.Ref{Kind: oda.KindExposedAPI.Name, Namespace: api.Namespace, Name: api.Name}, UID: api.UID})
}

// deleteObjects deletes the objects of refs not in keep that odaflow
// applied for ExposedAPI namespace/name. One in the API's own namespace
// goes only if it is still the object applied (its uid). One in a shared
// namespace goes only if it also still says it was written for this API
// (gateway.Owns), and has not changed since that was read: odaflow never
// deletes another tenant's object, even one under a name it once used.
func (e *Exposure) deleteObjects(ctx context.Context, namespace, name string, refs []ObjectRef, keep map[string]bool) error {
	for _, r := range refs {
		if keep[r.key()] {
			continue
		}
		ri, err := e.resource(r.APIVersion, r.Kind, r.Namespace)
		if err != nil {
			return err
		}
		what := fmt.Sprintf("%s %s/%s", r.Kind, r.Namespace, r.Name)
		pre := metav1.Preconditions{}
		if r.UID != "" {
			uid := types.UID(r.UID)
			pre.UID = &uid
		}
		if !r.Owned {
			cur, err := ri.Get(ctx, r.Name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				continue
			}
			if err != nil {
				return kubeError("get "+what, err)
			}
			if (r.UID != "" && string(cur.GetUID()) != r.UID) || !gateway.Owns(cur.GetAnnotations(), namespace, name) {
				continue // not the object applied, or not this API's
			}
			version := cur.GetResourceVersion()
			pre.ResourceVersion = &version
		}
		err = ri.Delete(ctx, r.Name, metav1.DeleteOptions{Preconditions: &pre})
		switch {
		case err == nil || apierrors.IsNotFound(err):
		case apierrors.IsConflict(err) && pre.ResourceVersion != nil:
			// Changed since its owner was read: read it again.
			return fmt.Errorf("delete %s: changed while being deleted: %w", what, err)
		case apierrors.IsConflict(err):
			// Another uid: not the object odaflow applied.
		default:
			return kubeError("delete "+what, err)
		}
	}
	return nil
}

// UnexposeInput is an ExposedAPI on its way out.
type UnexposeInput struct {
	Ref     oda.Ref     `json:"ref"`
	UID     string      `json:"uid"`
	Applied []ObjectRef `json:"applied,omitempty"`
}

// Unexpose deletes the gateway objects garbage collection cannot reach
// (those in another namespace, and under kong-admin the API's Kong
// entities). The workflow releases the finalizers afterwards.
func (e *Exposure) Unexpose(ctx context.Context, in UnexposeInput) error {
	if e.Kong != nil {
		if err := e.Kong.Remove(ctx, KongRemoveInput{Namespace: in.Ref.Namespace, Name: in.Ref.Name}); err != nil {
			return err
		}
	}
	var unowned []ObjectRef
	for _, r := range in.Applied {
		if !r.Owned {
			unowned = append(unowned, r)
		}
	}
	return e.deleteObjects(ctx, in.Ref.Namespace, in.Ref.Name, unowned, nil)
}

// gatewayResources maps the gateway kinds odaflow writes to their resources;
// a static table spares a discovery round trip per write.
var gatewayResources = map[string]string{
	"networking.istio.io/VirtualService":       "virtualservices",
	"monitoring.coreos.com/ServiceMonitor":     "servicemonitors",
	"gateway.networking.k8s.io/HTTPRoute":      "httproutes",
	"gateway.networking.k8s.io/ReferenceGrant": "referencegrants",
	"configuration.konghq.com/KongPlugin":      "kongplugins",
	"apisix.apache.org/ApisixRoute":            "apisixroutes",
	"apisix.apache.org/ApisixPluginConfig":     "apisixpluginconfigs",
}

func (e *Exposure) resource(apiVersion, kind, namespace string) (dynamic.ResourceInterface, error) {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return nil, temporal.NewNonRetryableApplicationError("bad apiVersion "+apiVersion, ErrTypeInvalid, err)
	}
	res, ok := gatewayResources[gv.Group+"/"+kind]
	if !ok {
		return nil, temporal.NewNonRetryableApplicationError("odaflow does not write "+kind+" objects", ErrTypeInvalid, nil)
	}
	return e.Kube.Dynamic.Resource(gv.WithResource(res)).Namespace(namespace), nil
}
