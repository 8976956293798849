package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/odaflow/odaflow/oda"
	"github.com/odaflow/odaflow/tests/fixtures"
)

func TestWorkloadsAreAdoptedAlsoWhenCreatedFirst(t *testing.T) {
	ns := "it-adopt"
	createNamespace(t, ns)
	name := "adopt-productcatalogmanagement"
	labels := map[string]string{oda.LabelComponentName: name}
	ctx := context.Background()

	// The chart creates workloads before the Component: they wait.
	cm, err := stack.core.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "early-config", Namespace: ns, Labels: labels}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	one := int32(1)
	dep, err := stack.core.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "early-api", Namespace: ns, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: &one,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "early-api"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "early-api"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "api", Image: "example/api:1"}}},
			},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	unrelated, err := stack.core.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "unrelated", Namespace: ns}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	comp := create(t, oda.KindComponent, fixtures.WithoutDependentAPIs(fixtures.WithOwnPaths(fixtures.ProductCatalog(ns, name))))
	owned := func(refs []metav1.OwnerReference) bool {
		return len(refs) == 1 && refs[0].UID == comp.GetUID() && refs[0].Controller != nil && *refs[0].Controller
	}
	eventually(t, 30*time.Second, "early workloads adopted", func() (bool, string) {
		c, err1 := stack.core.CoreV1().ConfigMaps(ns).Get(ctx, cm.Name, metav1.GetOptions{})
		d, err2 := stack.core.AppsV1().Deployments(ns).Get(ctx, dep.Name, metav1.GetOptions{})
		if err1 != nil || err2 != nil {
			return false, fmt.Sprint(err1, err2)
		}
		return owned(c.OwnerReferences) && owned(d.OwnerReferences), fmt.Sprint(c.OwnerReferences, d.OwnerReferences)
	})
	// A workload created afterwards is adopted too.
	late, err := stack.core.CoreV1().Services(ns).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "late-svc", Namespace: ns, Labels: labels},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "late workload adopted", func() (bool, string) {
		s, err := stack.core.CoreV1().Services(ns).Get(ctx, late.Name, metav1.GetOptions{})
		return err == nil && owned(s.OwnerReferences), fmt.Sprint(err, s.OwnerReferences)
	})
	// The Deployment's spec is untouched by the adoption.
	d, _ := stack.core.AppsV1().Deployments(ns).Get(ctx, dep.Name, metav1.GetOptions{})
	if d.Spec.Template.Spec.Containers[0].Image != "example/api:1" || *d.Spec.Replicas != 1 {
		t.Errorf("adoption changed the Deployment: %+v", d.Spec)
	}

	// Uninstall: the adopted workloads go with the Component, others stay.
	if err := stack.dyn.Resource(oda.KindComponent.GVR()).Namespace(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "adopted workloads garbage-collected", func() (bool, string) {
		_, e1 := stack.core.CoreV1().ConfigMaps(ns).Get(ctx, cm.Name, metav1.GetOptions{})
		_, e2 := stack.core.AppsV1().Deployments(ns).Get(ctx, dep.Name, metav1.GetOptions{})
		_, e3 := stack.core.CoreV1().Services(ns).Get(ctx, late.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(e1) && apierrors.IsNotFound(e2) && apierrors.IsNotFound(e3), fmt.Sprint(e1, e2, e3)
	})
	if _, err := stack.core.CoreV1().ConfigMaps(ns).Get(ctx, unrelated.Name, metav1.GetOptions{}); err != nil {
		t.Errorf("an unlabelled ConfigMap was removed: %v", err)
	}
}
