// Package kubeapply applies YAML manifests with server-side apply, for
// `odaflow dev` and the tests (the equivalent of `kubectl apply
// --server-side`).
package kubeapply

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/yaml"
)

// FieldManager owns the fields these applies set.
const FieldManager = "odaflow-apply"

// Parse splits a multi-document YAML manifest into objects.
func Parse(data []byte) ([]*unstructured.Unstructured, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var objs []*unstructured.Unstructured
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, err
		}
		var m map[string]any
		if err := yaml.Unmarshal(doc, &m); err != nil {
			return nil, err
		}
		if len(m) == 0 {
			continue
		}
		objs = append(objs, &unstructured.Unstructured{Object: m})
	}
}

// Apply applies every object of the manifest; namespaced objects without a
// namespace go to defaultNamespace.
func Apply(ctx context.Context, cfg *rest.Config, manifest []byte, defaultNamespace string) error {
	objs, err := Parse(manifest)
	if err != nil {
		return fmt.Errorf("parse manifest: %w", err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return err
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	for _, obj := range objs {
		gvk := obj.GroupVersionKind()
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return fmt.Errorf("%s %s: %w", gvk.Kind, obj.GetName(), err)
		}
		var ri dynamic.ResourceInterface = dyn.Resource(m.Resource)
		if m.Scope.Name() == "namespace" {
			ns := obj.GetNamespace()
			if ns == "" {
				ns = defaultNamespace
			}
			ri = dyn.Resource(m.Resource).Namespace(ns)
		}
		if _, err := ri.Apply(ctx, obj.GetName(), obj, metav1.ApplyOptions{FieldManager: FieldManager, Force: true}); err != nil {
			return fmt.Errorf("apply %s %s: %w", gvk.Kind, obj.GetName(), err)
		}
	}
	return nil
}
