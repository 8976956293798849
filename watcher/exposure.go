package watcher

import (
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	"github.com/odaflow/odaflow/gateway"
	"github.com/odaflow/odaflow/workflows"
)

// Index names on the ExposedAPI informer.
const (
	// byImplementation maps "<namespace>/<service>" to the ExposedAPIs it implements.
	byImplementation = "implementation"
	// byPath maps a path prefix to the ExposedAPIs that claim it.
	byPath = "path"
)

func exposedAPIIndexers() cache.Indexers {
	return cache.Indexers{
		byImplementation: func(obj any) ([]string, error) {
			u, ok := obj.(*unstructured.Unstructured)
			if !ok {
				return nil, nil
			}
			impl, _, _ := unstructured.NestedString(u.Object, "spec", "implementation")
			if impl == "" {
				return nil, nil
			}
			return []string{u.GetNamespace() + "/" + impl}, nil
		},
		byPath: func(obj any) ([]string, error) {
			u, ok := obj.(*unstructured.Unstructured)
			if !ok {
				return nil, nil
			}
			path, _, _ := unstructured.NestedString(u.Object, "spec", "path")
			if path == "" {
				return nil, nil
			}
			return []string{path}, nil
		},
	}
}

// ImplementationReady applies the Canvas's readiness rule both ways: ready
// when any EndpointSlice of the Service has an endpoint whose ready
// condition is true (or unset, which Kubernetes defines as ready).
func ImplementationReady(slices []*discoveryv1.EndpointSlice) bool {
	for _, s := range slices {
		for _, ep := range s.Endpoints {
			if ep.Conditions.Ready == nil || *ep.Conditions.Ready {
				return true
			}
		}
	}
	return false
}

// IngressOf picks the gateway's ingress address: the first Service (by
// namespace/name, so every replica picks the same) that has one.
func IngressOf(services []*corev1.Service) *gateway.Ingress {
	sort.Slice(services, func(i, j int) bool {
		return services[i].Namespace+"/"+services[i].Name < services[j].Namespace+"/"+services[j].Name
	})
	for _, svc := range services {
		lb := svc.Status.LoadBalancer.Ingress
		if len(lb) == 0 || (lb[0].IP == "" && lb[0].Hostname == "") {
			continue
		}
		in := &gateway.Ingress{IP: lb[0].IP, Hostname: lb[0].Hostname}
		for _, p := range svc.Spec.Ports {
			in.Ports = append(in.Ports, gateway.Port{Name: p.Name, Port: p.Port})
		}
		return in
	}
	return nil
}

// ConflictWinner decides which of the ExposedAPIs claiming one path prefix
// keeps it: the oldest, then by namespace/name. It returns the winner's
// namespace/name.
func ConflictWinner(claims []*unstructured.Unstructured) string {
	var live []*unstructured.Unstructured
	for _, c := range claims {
		if c.GetDeletionTimestamp() == nil {
			live = append(live, c)
		}
	}
	if len(live) == 0 {
		return ""
	}
	sort.Slice(live, func(i, j int) bool {
		ti, tj := live[i].GetCreationTimestamp(), live[j].GetCreationTimestamp()
		if !ti.Equal(&tj) {
			return ti.Before(&tj)
		}
		return live[i].GetNamespace()+"/"+live[i].GetName() < live[j].GetNamespace()+"/"+live[j].GetName()
	})
	return live[0].GetNamespace() + "/" + live[0].GetName()
}

// exposureOf reads an ExposedAPI's surroundings from the caches.
func (w *Watcher) exposureOf(obj *unstructured.Unstructured) (*workflows.Exposure, error) {
	e := &workflows.Exposure{}
	services, err := w.ingressLister()
	if err != nil {
		return nil, fmt.Errorf("list ingress services: %w", err)
	}
	e.Ingress = IngressOf(services)
	impl, _, _ := unstructured.NestedString(obj.Object, "spec", "implementation")
	if impl != "" {
		sel := labels.SelectorFromSet(labels.Set{discoveryv1.LabelServiceName: impl})
		slices, err := w.sliceLister.EndpointSlices(obj.GetNamespace()).List(sel)
		if err != nil {
			return nil, fmt.Errorf("list endpoint slices of %s: %w", impl, err)
		}
		e.ImplementationReady = ImplementationReady(slices)
	}
	if path, _, _ := unstructured.NestedString(obj.Object, "spec", "path"); path != "" {
		claims, err := w.exposedIndex.ByIndex(byPath, path)
		if err != nil {
			return nil, err
		}
		var us []*unstructured.Unstructured
		for _, c := range claims {
			if u, ok := c.(*unstructured.Unstructured); ok && w.cfg.Namespaces.Matches(u.GetNamespace()) {
				us = append(us, u)
			}
		}
		if winner := ConflictWinner(us); winner != "" && winner != obj.GetNamespace()+"/"+obj.GetName() {
			e.ConflictsWith = winner
		}
	}
	return e, nil
}
