package watcher

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	"github.com/odaflow/odaflow/gateway"
	"github.com/odaflow/odaflow/oda"
	"github.com/odaflow/odaflow/workflows"
)

// Index names on the ExposedAPI informer.
const (
	// byImplementation maps "<namespace>/<service>" to the ExposedAPIs it implements.
	byImplementation = "implementation"
	// byPath maps a path prefix (pathKey) to the ExposedAPIs that claim it.
	byPath = "path"
	// byPathAncestor maps a path prefix to the ExposedAPIs whose paths lie
	// under it ("/a" to those claiming "/a/b" and "/a/b/c").
	byPathAncestor = "path-ancestor"
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
			return []string{pathKey(path)}, nil
		},
		byPathAncestor: func(obj any) ([]string, error) {
			u, ok := obj.(*unstructured.Unstructured)
			if !ok {
				return nil, nil
			}
			path, _, _ := unstructured.NestedString(u.Object, "spec", "path")
			return pathAncestors(path), nil
		},
	}
}

// pathKey is the path prefix a gateway route matches: a trailing slash
// does not count (the root stays "/").
func pathKey(path string) string {
	if k := strings.TrimRight(path, "/"); k != "" || path == "" {
		return k
	}
	return "/"
}

// pathAncestors are the proper prefixes of a path, segment by segment,
// nearest first: "/a/b/c" gives "/a/b", "/a", "/". A gateway route on any
// of them also matches the path's requests.
func pathAncestors(path string) []string {
	k := pathKey(path)
	if k == "" || k == "/" {
		return nil
	}
	var out []string
	for i := strings.LastIndex(k, "/"); i > 0; i = strings.LastIndex(k[:i], "/") {
		out = append(out, k[:i])
	}
	return append(out, "/")
}

// claimOwner names the Component an ExposedAPI belongs to, for the path
// rule: the Component named by its oda.tmforum.org/componentName label,
// else its controller, else the ExposedAPI alone.
func claimOwner(u *unstructured.Unstructured) string {
	if c := u.GetLabels()[oda.LabelComponentName]; c != "" {
		return u.GetNamespace() + "/Component/" + c
	}
	if ref := metav1.GetControllerOfNoCopy(u); ref != nil {
		return u.GetNamespace() + "/" + ref.Kind + "/" + ref.Name
	}
	return u.GetNamespace() + "/ExposedAPI/" + u.GetName()
}

// pathsOverlap is the gateway rule on two claims: the same prefix always
// conflicts (one route would shadow the other); one prefix under the
// other conflicts between different Components, since the shorter route
// would take requests meant for the other Component's API, while one
// Component may nest its own APIs.
func pathsOverlap(path, owner, otherPath, otherOwner string) bool {
	a, b := pathKey(path), pathKey(otherPath)
	if a == "" || b == "" {
		return false
	}
	if a == b {
		return true
	}
	if owner == otherOwner {
		return false
	}
	return slices.Contains(pathAncestors(a), b) || slices.Contains(pathAncestors(b), a)
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
	hostname, _, _ := unstructured.NestedString(obj.Object, "spec", "hostname")
	e.HostnameRefused = !gateway.HostnameAllowed(w.cfg.Gateway, e.Ingress, hostname)
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
		claims := append(w.pathRivals(obj, path), obj)
		if winner := ConflictWinner(claims); winner != "" && winner != obj.GetNamespace()+"/"+obj.GetName() {
			e.ConflictsWith = winner
		}
	}
	return e, nil
}

// pathRivals are the served ExposedAPIs, other than u, whose claims overlap
// u's claim on path (pathsOverlap): on path itself, on a prefix of it or
// under it.
func (w *Watcher) pathRivals(u *unstructured.Unstructured, path string) []*unstructured.Unstructured {
	if path == "" || w.exposedIndex == nil {
		return nil
	}
	var candidates []any
	for _, k := range append([]string{pathKey(path)}, pathAncestors(path)...) {
		objs, _ := w.exposedIndex.ByIndex(byPath, k)
		candidates = append(candidates, objs...)
	}
	under, _ := w.exposedIndex.ByIndex(byPathAncestor, pathKey(path))
	candidates = append(candidates, under...)
	owner := claimOwner(u)
	var out []*unstructured.Unstructured
	for _, c := range candidates {
		other, ok := c.(*unstructured.Unstructured)
		if !ok || other.GetUID() == u.GetUID() || !w.cfg.Namespaces.Matches(other.GetNamespace()) {
			continue
		}
		otherPath, _, _ := unstructured.NestedString(other.Object, "spec", "path")
		if pathsOverlap(path, owner, otherPath, claimOwner(other)) {
			out = append(out, other)
		}
	}
	return out
}
