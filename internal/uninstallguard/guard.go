// Package uninstallguard decides whether `helm uninstall` of odaflow may go
// ahead: not while ODA resources remain that need odaflow to be deleted. The
// chart's pre-delete hook runs it as `odaflow uninstall-check`.
package uninstallguard

import (
	"context"
	"fmt"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	"github.com/odaflow/odaflow/oda"
	"github.com/odaflow/odaflow/watcher"
)

// Object is what the decision needs of one ODA resource.
type Object struct {
	Kind, Namespace, Name string
	// Deleting: the object has a deletionTimestamp.
	Deleting bool
	// OdaflowFinalizer: the object carries oda.Finalizer.
	OdaflowFinalizer bool
}

// SkipValue is the chart value that turns the check off, named in the
// refusal so that the way out is in the message itself.
const SkipValue = "uninstallGuard.enabled=false"

// Decide returns nil when uninstalling odaflow leaves no ODA resource
// behind that needs it, and otherwise an error naming how many of which
// kind remain in which namespaces, and the way out.
//
// An object blocks unless it is already being deleted without odaflow's
// finalizer: that one goes away without odaflow. Any other needs odaflow:
// one being deleted with the finalizer waits for odaflow's cleanup forever
// once odaflow is gone, and a live one would hang the day it is deleted
// (odaflow's finalizer is on it or its children) or be left unmanaged.
func Decide(objs []Object) error {
	counts := map[string]int{}
	namespaces := map[string]map[string]bool{}
	total := 0
	for _, o := range objs {
		if o.Deleting && !o.OdaflowFinalizer {
			continue
		}
		total++
		counts[o.Kind]++
		if namespaces[o.Kind] == nil {
			namespaces[o.Kind] = map[string]bool{}
		}
		namespaces[o.Kind][o.Namespace] = true
	}
	if total == 0 {
		return nil
	}
	var parts []string
	for _, k := range oda.Kinds {
		n := counts[k.Name]
		if n == 0 {
			continue
		}
		var nss []string
		for ns := range namespaces[k.Name] {
			nss = append(nss, ns)
		}
		sort.Strings(nss)
		parts = append(parts, fmt.Sprintf("%d %s in %s", n, plural(k, n), strings.Join(nss, ", ")))
	}
	remain := "resources remain"
	if total == 1 {
		remain = "resource remains"
	}
	return fmt.Errorf("refusing to uninstall odaflow: %d ODA %s (%s); "+
		"without odaflow their deletion hangs on the finalizer %s. "+
		"Delete them first (kubectl delete components --all -A --wait, then the same for any other kind listed) "+
		"or skip this check with --set %s",
		total, remain, strings.Join(parts, "; "), oda.Finalizer, SkipValue)
}

func plural(k oda.Kind, n int) string {
	if n == 1 {
		return k.Name
	}
	return k.Name + "s"
}

// List lists the ODA resources of every kind in the namespaces the patterns
// match (watcher.NamespaceFilter globs; none: all). Literal names are listed
// one namespace at a time, so that a Role in each (rbac.scope=namespaced)
// is enough; any glob or no pattern needs a cluster-wide list.
func List(ctx context.Context, dyn dynamic.Interface, patterns []string) ([]Object, error) {
	filter, err := watcher.NewNamespaceFilter(patterns)
	if err != nil {
		return nil, err
	}
	var literal []string
	for _, p := range patterns {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		if strings.ContainsAny(p, `*?[\`) {
			literal = nil
			break
		}
		literal = append(literal, p)
	}
	scopes := literal
	if len(scopes) == 0 {
		scopes = []string{metav1.NamespaceAll}
	}
	var out []Object
	for _, k := range oda.Kinds {
		for _, ns := range scopes {
			list, err := dyn.Resource(k.GVR()).Namespace(ns).List(ctx, metav1.ListOptions{})
			if apierrors.IsNotFound(err) {
				// The CRD is not installed (crds.install=false and
				// another chart's CRDs gone): no object of the kind.
				break
			}
			if err != nil {
				return nil, fmt.Errorf("list %s in %q: %w", k.Resource, ns, err)
			}
			for _, u := range list.Items {
				if !filter.Matches(u.GetNamespace()) {
					continue
				}
				o := Object{Kind: k.Name, Namespace: u.GetNamespace(), Name: u.GetName(), Deleting: u.GetDeletionTimestamp() != nil}
				for _, f := range u.GetFinalizers() {
					if f == oda.Finalizer {
						o.OdaflowFinalizer = true
					}
				}
				out = append(out, o)
			}
		}
	}
	return out, nil
}
