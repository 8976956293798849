package watcher

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"go.temporal.io/api/serviceerror"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"

	"github.com/odaflow/odaflow/oda"
	"github.com/odaflow/odaflow/workflows"
)

// WorkloadKinds are the kinds a Component adopts when they carry its label
// (oda-behaviour §2.1.8), by their plural resource names (the Python
// operator's singular names do not resolve on every cluster).
var WorkloadKinds = []schema.GroupVersionResource{
	{Version: "v1", Resource: "services"},
	{Version: "v1", Resource: "configmaps"},
	{Version: "v1", Resource: "secrets"},
	{Version: "v1", Resource: "serviceaccounts"},
	{Version: "v1", Resource: "persistentvolumeclaims"},
	{Group: "apps", Version: "v1", Resource: "deployments"},
	{Group: "apps", Version: "v1", Resource: "statefulsets"},
	{Group: "batch", Version: "v1", Resource: "jobs"},
	{Group: "batch", Version: "v1", Resource: "cronjobs"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "roles"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "rolebindings"},
}

// byComponentLabel indexes workloads by "<namespace>/<component label>".
const byComponentLabel = "component"

// adoptionKind marks a queue key that asks a Component to adopt workloads.
const adoptionKind = "adopt"

// adoption watches the labelled workloads through metadata-only informers:
// odaflow never reads a Secret's data to adopt it.
type adoption struct {
	factory  metadatainformer.SharedInformerFactory
	indexers map[schema.GroupVersionResource]cache.Indexer
}

func newAdoption(md metadata.Interface, w *Watcher) *adoption {
	a := &adoption{
		factory: metadatainformer.NewFilteredSharedInformerFactory(md, 0, metav1.NamespaceAll, func(o *metav1.ListOptions) {
			o.LabelSelector = oda.LabelComponentName
		}),
		indexers: map[schema.GroupVersionResource]cache.Indexer{},
	}
	for _, gvr := range WorkloadKinds {
		inf := a.factory.ForResource(gvr).Informer()
		_ = inf.AddIndexers(cache.Indexers{byComponentLabel: func(obj any) ([]string, error) {
			m, ok := obj.(*metav1.PartialObjectMetadata)
			if !ok {
				return nil, nil
			}
			return []string{m.Namespace + "/" + m.Labels[oda.LabelComponentName]}, nil
		}})
		a.indexers[gvr] = inf.GetIndexer()
		_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { w.onWorkload(obj) },
			UpdateFunc: func(_, obj any) { w.onWorkload(obj) },
		})
	}
	return a
}

func (w *Watcher) onWorkload(obj any) {
	m, ok := obj.(*metav1.PartialObjectMetadata)
	if !ok || !w.cfg.Namespaces.Matches(m.Namespace) || InComponentTree(m.OwnerReferences) {
		return
	}
	w.enqueue(key{Kind: adoptionKind, Namespace: m.Namespace, Name: m.Labels[oda.LabelComponentName]}, false)
}

// InComponentTree reports whether an ODA resource already owns the object:
// a Component, or one of the Component's children (the credentials Secret
// belongs to its IdentityConfig). Either way the Component's deletion
// reaches it through the owner chain, so adopting it again would only
// cost two apiserver writes (a second controller is refused, then a plain
// owner added) and a workflow task per Component.
func InComponentTree(refs []metav1.OwnerReference) bool {
	for _, r := range refs {
		if group, _, found := strings.Cut(r.APIVersion, "/"); found && group == oda.Group {
			return true
		}
	}
	return false
}

// orphans lists the labelled workloads of a Component that it does not own yet.
func (a *adoption) orphans(namespace, component string) []oda.WorkloadRef {
	var out []oda.WorkloadRef
	for _, gvr := range WorkloadKinds {
		objs, _ := a.indexers[gvr].ByIndex(byComponentLabel, namespace+"/"+component)
		for _, o := range objs {
			m, ok := o.(*metav1.PartialObjectMetadata)
			if !ok || InComponentTree(m.OwnerReferences) || m.DeletionTimestamp != nil {
				continue
			}
			out = append(out, oda.WorkloadRef{Group: gvr.Group, Version: gvr.Version, Resource: gvr.Resource, Name: m.Name, UID: string(m.UID)})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Resource+"/"+out[i].Name < out[j].Resource+"/"+out[j].Name })
	return out
}

// syncAdoption asks a Component's workflow to adopt its orphan workloads.
// A Component that does not exist yet is simply waited for: its arrival
// enqueues the same key (no error storm, no retry loop).
func (w *Watcher) syncAdoption(ctx context.Context, k key) error {
	if _, err := w.get(oda.KindComponent.Name, k.Namespace, k.Name); err != nil {
		w.done(k)
		return nil //nolint:nilerr // not there yet: its add event brings us back
	}
	orphans := w.adopt.orphans(k.Namespace, k.Name)
	if len(orphans) == 0 {
		w.done(k)
		return nil
	}
	id := oda.WorkflowID(oda.KindComponent.Name, k.Namespace, k.Name)
	err := w.temp.SignalWorkflow(ctx, id, "", workflows.SignalAdopt, workflows.Adopt{Workloads: orphans})
	var notFound *serviceerror.NotFound
	if errors.As(err, &notFound) {
		// The Component's lifecycle is starting; try again shortly.
		return fmt.Errorf("no lifecycle for %s yet", id)
	}
	if err != nil {
		return fmt.Errorf("signal adoption to %s: %w", id, err)
	}
	w.metrics.Signals.WithLabelValues(oda.KindComponent.Name, workflows.SignalAdopt, "ok").Inc()
	w.done(k)
	return nil
}
