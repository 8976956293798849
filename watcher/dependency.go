package watcher

import (
	"fmt"
	"sort"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"

	"github.com/odaflow/odaflow/dependency"
	"github.com/odaflow/odaflow/oda"
	"github.com/odaflow/odaflow/workflows"
)

// bySpecURL maps a specification URL to the ExposedAPIs that serve it (on
// the ExposedAPI informer) and to the DependentAPIs that need it (on the
// DependentAPI informer): a provider's change reaches exactly the
// DependentAPIs waiting for it.
const bySpecURL = "specURL"

func specURLIndexers() cache.Indexers {
	return cache.Indexers{bySpecURL: func(obj any) ([]string, error) {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return nil, nil
		}
		spec, _ := u.Object["spec"].(map[string]any)
		return dependency.SpecURLs(spec), nil
	}}
}

// enqueueDependants re-evaluates the DependentAPIs that need any of the
// specification URLs an ExposedAPI serves (or served before an update).
func (w *Watcher) enqueueDependants(recheck bool, objs ...*unstructured.Unstructured) {
	if w.dependentIndex == nil {
		return
	}
	seen := map[string]bool{}
	for _, u := range objs {
		if u == nil {
			continue
		}
		spec, _ := u.Object["spec"].(map[string]any)
		for _, url := range dependency.SpecURLs(spec) {
			if seen[url] {
				continue
			}
			seen[url] = true
			deps, _ := w.dependentIndex.ByIndex(bySpecURL, url)
			for _, o := range deps {
				if d, ok := o.(*unstructured.Unstructured); ok && w.cfg.Namespaces.Matches(d.GetNamespace()) {
					w.enqueue(key{Kind: oda.KindDependentAPI.Name, Namespace: d.GetNamespace(), Name: d.GetName()}, recheck)
				}
			}
		}
	}
}

// dependencyOf reads the providers of a DependentAPI from the caches: every
// ExposedAPI serving its specification URL in a watched namespace the
// DependentAPI may trust (cfg.Trust), as odaflow computes it
// (workflows.ProviderOf: its URL and readiness from its spec, the ingress,
// its implementation's endpoints and the path rule, never from its
// status), sorted so the signal (and its hash) does not depend on cache
// order. ExposedAPIs the DependentAPI may not trust never reach its
// workflow, so another tenant's changes cost it no signal.
func (w *Watcher) dependencyOf(obj *unstructured.Unstructured) (*workflows.Dependency, error) {
	spec, _ := obj.Object["spec"].(map[string]any)
	req, _ := dependency.RequestOf(obj.GetNamespace(), obj.GetLabels()[oda.LabelComponentName], spec)
	d := &workflows.Dependency{}
	for _, url := range dependency.SpecURLs(spec) {
		objs, err := w.exposedIndex.ByIndex(bySpecURL, url)
		if err != nil {
			return nil, fmt.Errorf("look up the ExposedAPIs of %s: %w", url, err)
		}
		for _, o := range objs {
			u, ok := o.(*unstructured.Unstructured)
			if !ok || !w.cfg.Namespaces.Matches(u.GetNamespace()) || u.GetDeletionTimestamp() != nil || !w.cfg.Trust.Reaches(req, u.GetNamespace()) {
				continue
			}
			exp, err := w.exposureOf(u)
			if err != nil {
				return nil, err
			}
			uspec, _ := u.Object["spec"].(map[string]any)
			statusReady, _, _ := unstructured.NestedBool(u.Object, "status", "implementation", "ready")
			d.Providers = append(d.Providers, workflows.ProviderOf(u.GetNamespace(), u.GetName(), u.GetLabels()[oda.LabelComponentName], uspec, *exp, w.cfg.Gateway, statusReady))
		}
	}
	sort.Slice(d.Providers, func(i, j int) bool { return d.Providers[i].Key() < d.Providers[j].Key() })
	return d, nil
}
