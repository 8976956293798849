package main

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/odaflow/odaflow/internal/kubeapply"
	"github.com/odaflow/odaflow/oda"
)

// implementations are the Services the exposed APIs of the Component
// manifests name.
func implementations(manifests [][]byte) ([]string, error) {
	var names []string
	for _, m := range manifests {
		objs, err := kubeapply.Parse(m)
		if err != nil {
			return nil, err
		}
		for _, o := range objs {
			for _, seg := range oda.Segments {
				apis, _, _ := unstructured.NestedSlice(o.Object, "spec", string(seg), "exposedAPIs")
				for _, a := range apis {
					if m, _ := a.(map[string]any); m != nil {
						if name, _ := m["implementation"].(string); name != "" {
							names = append(names, name)
						}
					}
				}
			}
		}
	}
	return names, nil
}

// simulateCluster plays, on the local apiserver, the parts of a cluster that
// do not run here: the Istio ingress Service gets a load-balancer address
// (127.0.0.1) and the implementation Services of the sample Components get
// a ready endpoint.
func simulateCluster(ctx context.Context, cfg *rest.Config, namespace string, samples [][]byte) error {
	sampleImplementations, err := implementations(samples)
	if err != nil {
		return fmt.Errorf("read the samples: %w", err)
	}
	core, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	for _, ns := range []string{"istio-ingress", namespace} {
		_, err := core.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "istio-ingress", Namespace: "istio-ingress", Labels: map[string]string{"istio": "ingressgateway"}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{
			{Name: "http2", Port: 80}, {Name: "https", Port: 443},
		}},
	}
	got, err := core.CoreV1().Services("istio-ingress").Create(ctx, svc, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		got, err = core.CoreV1().Services("istio-ingress").Get(ctx, svc.Name, metav1.GetOptions{})
	}
	if err != nil {
		return fmt.Errorf("ingress service: %w", err)
	}
	got.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "127.0.0.1"}}
	if _, err := core.CoreV1().Services("istio-ingress").UpdateStatus(ctx, got, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("ingress address: %w", err)
	}
	ready := true
	for _, name := range sampleImplementations {
		slice := &discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Name: name + "-dev", Namespace: namespace, Labels: map[string]string{discoveryv1.LabelServiceName: name}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"10.244.0.10"}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}},
		}
		if _, err := core.DiscoveryV1().EndpointSlices(namespace).Create(ctx, slice, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("endpoints of %s: %w", name, err)
		}
	}
	return nil
}
