package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/odaflow/odaflow/oda"
	"github.com/odaflow/odaflow/tests/fixtures"
)

// Objects a Python Canvas handled carry kopf's finalizer. With the Python
// operators gone, odaflow takes them over so that uninstalling never hangs.
func TestUninstallDoesNotHangOnKopfFinalizers(t *testing.T) {
	ns := "it-migration"
	createNamespace(t, ns)
	name := "kopf-productcatalogmanagement"
	comp := fixtures.WithOwnPaths(fixtures.WithoutDependentAPIs(fixtures.ProductCatalog(ns, name)))
	comp.SetFinalizers([]string{oda.KopfFinalizer})
	create(t, oda.KindComponent, comp)
	waitPhase(t, ns, name, oda.StatusCompCon, 30*time.Second)
	eventually(t, 30*time.Second, "children exist", func() (bool, string) {
		_, e1 := get(oda.KindIdentityConfig, ns, name)
		_, e2 := get(oda.KindExposedAPI, ns, name+"-metrics")
		return e1 == nil && e2 == nil, fmt.Sprint(e1, e2)
	})
	kopf := fmt.Sprintf(`{"metadata":{"finalizers":[%q]}}`, oda.KopfFinalizer)
	mergePatch(t, oda.KindIdentityConfig, ns, name, kopf)
	mergePatch(t, oda.KindExposedAPI, ns, name+"-metrics", kopf)

	if err := stack.dyn.Resource(oda.KindComponent.GVR()).Namespace(ns).Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "Component and children gone despite kopf finalizers", func() (bool, string) {
		_, e0 := get(oda.KindComponent, ns, name)
		_, e1 := get(oda.KindIdentityConfig, ns, name)
		_, e2 := get(oda.KindExposedAPI, ns, name+"-metrics")
		return apierrors.IsNotFound(e0) && apierrors.IsNotFound(e1) && apierrors.IsNotFound(e2), fmt.Sprint(e0, "; ", e1, "; ", e2)
	})
}
