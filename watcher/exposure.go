package watcher

import (
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/odaflow/odaflow/gateway"
	"github.com/odaflow/odaflow/oda"
	"github.com/odaflow/odaflow/workflows"
)

// Index names on the ExposedAPI informer.
const (
	// byImplementation maps "<namespace>/<service>" to the ExposedAPIs it implements.
	byImplementation = "implementation"
	// byPath maps a path prefix (gateway.PathKey) to the ExposedAPIs that
	// claim it.
	byPath = "path"
	// byPathPrefix maps every string prefix of a claimed path to the
	// ExposedAPIs claiming it: "/a" to those claiming "/a/b" and also
	// "/ab", since a VirtualService on "/a" catches both.
	byPathPrefix = "path-prefix"
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
			return []string{gateway.PathKey(path)}, nil
		},
		byPathPrefix: func(obj any) ([]string, error) {
			u, ok := obj.(*unstructured.Unstructured)
			if !ok {
				return nil, nil
			}
			path, _, _ := unstructured.NestedString(u.Object, "spec", "path")
			return pathPrefixes(path), nil
		},
	}
}

// pathPrefixes are the proper string prefixes of a path's key, longest
// first, down to "/": "/ab" gives "/a", "/". Paths are short (the
// Component rules bound them), so listing every one is cheap.
func pathPrefixes(path string) []string {
	k := gateway.PathKey(path)
	if len(k) <= 1 {
		return nil
	}
	out := make([]string, 0, len(k)-1)
	for i := len(k) - 1; i >= 1; i-- {
		out = append(out, k[:i])
	}
	return out
}

// claimOwner names the Component an ExposedAPI belongs to, for the path
// rule: the Component named by its oda.tmforum.org/componentName label,
// else its controller, else the ExposedAPI alone. The namespace comes
// first, so a label cannot make one tenant's API another's.
func claimOwner(u *unstructured.Unstructured) string {
	if c := u.GetLabels()[oda.LabelComponentName]; c != "" {
		return u.GetNamespace() + "/Component/" + c
	}
	if ref := metav1.GetControllerOfNoCopy(u); ref != nil {
		return u.GetNamespace() + "/" + ref.Kind + "/" + ref.Name
	}
	return u.GetNamespace() + "/ExposedAPI/" + u.GetName()
}

// ClaimOf is an ExposedAPI's claim on its spec.path. It holds its route
// when odaflow's last status gave it an apiStatus for that very path: the
// status of a failed API has none, and a changed path is a new claim.
func ClaimOf(u *unstructured.Unstructured) gateway.Claim {
	path, _, _ := unstructured.NestedString(u.Object, "spec", "path")
	heldPath, _, _ := unstructured.NestedString(u.Object, "status", "apiStatus", "path")
	return gateway.Claim{
		Namespace: u.GetNamespace(),
		Name:      u.GetName(),
		UID:       string(u.GetUID()),
		Path:      path,
		Owner:     claimOwner(u),
		Created:   u.GetCreationTimestamp().Time,
		Held:      path != "" && heldPath == path,
		Deleting:  u.GetDeletionTimestamp() != nil,
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
		rivals := w.pathRivals(obj, path)
		claims := make([]gateway.Claim, len(rivals))
		for i, r := range rivals {
			claims[i] = ClaimOf(r)
		}
		self := ClaimOf(obj)
		if evictor, lost := gateway.Evictor(claimGateway, self, claims); lost {
			e.ConflictsWith = conflictHolder(self, evictor)
		}
	}
	return e, nil
}

// conflictHolder is how a refused claim's status and Event name the claim
// that keeps the path: by namespace/name within its own namespace, and
// otherwise not at all, so that one tenant's refusal does not tell it
// another tenant's namespace and API. The workflow writes "already exposed
// by ExposedAPI <this>".
func conflictHolder(self, holder gateway.Claim) string {
	if holder.Namespace == self.Namespace {
		return holder.ID()
	}
	return "in another namespace"
}

// claimGateway is the gateway whose routing decides path conflicts in the
// watcher: none in particular, which gives the strictest rule
// (gateway.Layers). Under every gateway odaflow drives, requests meet a
// string-prefix router, so the rule is the one each gateway needs.
const claimGateway = ""

// pathRivals are the ExposedAPIs, other than u, in the served namespaces,
// whose claims conflict with u's claim on path (gateway.ClaimsConflict): on
// path itself, on a string prefix of it, or under it.
func (w *Watcher) pathRivals(u *unstructured.Unstructured, path string) []*unstructured.Unstructured {
	if path == "" || w.exposedIndex == nil {
		return nil
	}
	var candidates []any
	for _, k := range append([]string{gateway.PathKey(path)}, pathPrefixes(path)...) {
		objs, _ := w.exposedIndex.ByIndex(byPath, k)
		candidates = append(candidates, objs...)
	}
	under, _ := w.exposedIndex.ByIndex(byPathPrefix, gateway.PathKey(path))
	candidates = append(candidates, under...)
	self := ClaimOf(u)
	self.Path = path
	seen := map[types.UID]bool{u.GetUID(): true}
	var out []*unstructured.Unstructured
	for _, c := range candidates {
		other, ok := c.(*unstructured.Unstructured)
		if !ok || seen[other.GetUID()] || !w.cfg.Namespaces.Matches(other.GetNamespace()) {
			continue
		}
		seen[other.GetUID()] = true
		if gateway.ClaimsConflict(claimGateway, self, ClaimOf(other)) {
			out = append(out, other)
		}
	}
	return out
}
