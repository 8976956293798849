package localstack

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/yaml"
)

// FieldManager is the server-side apply field manager used by InstallCRDs.
const FieldManager = "odaflow-localstack"

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// defaultCRDTimeout bounds InstallCRDs when ctx has no deadline.
const defaultCRDTimeout = time.Minute

// InstallCRDs applies every *.yaml file in dir (multi-document files are
// fine; normally CustomResourceDefinitions) with server-side apply, then waits
// until every CRD is Established. Other kinds are applied through discovery.
func InstallCRDs(ctx context.Context, cfg *rest.Config, dir string) error {
	objs, err := ReadManifests(dir)
	if err != nil {
		return err
	}
	return InstallManifests(ctx, cfg, objs)
}

// ReadManifests parses every *.yaml file in dir (sorted by name) for
// InstallManifests; at least one object is required.
func ReadManifests(dir string) ([]*unstructured.Unstructured, error) {
	objs, err := readManifests(dir)
	if err != nil {
		return nil, err
	}
	if len(objs) == 0 {
		return nil, fmt.Errorf("localstack: no objects in %s/*.yaml", dir)
	}
	return objs, nil
}

// InstallManifests is InstallCRDs on objects already parsed (large CRD
// files take a while to parse: a caller can do it while the apiserver
// starts). It sets an annotation on each object.
func InstallManifests(ctx context.Context, cfg *rest.Config, objs []*unstructured.Unstructured) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, defaultCRDTimeout)
		defer cancel()
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	var mapper *restmapper.DeferredDiscoveryRESTMapper
	var crds []string
	current := establishedCRDs(ctx, dyn)
	for _, obj := range objs {
		gvk := obj.GroupVersionKind()
		var ri dynamic.ResourceInterface
		isCRD := gvk.Group == crdGVR.Group && gvk.Version == crdGVR.Version && gvk.Kind == "CustomResourceDefinition"
		if isCRD {
			ri = dyn.Resource(crdGVR)
		} else {
			if mapper == nil {
				dc, err := discovery.NewDiscoveryClientForConfig(cfg)
				if err != nil {
					return err
				}
				mapper = restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
			}
			m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
			if err != nil {
				return fmt.Errorf("localstack: %s %s: %w", gvk, obj.GetName(), err)
			}
			if m.Scope.Name() == "namespace" {
				ns := obj.GetNamespace()
				if ns == "" {
					ns = "default"
				}
				ri = dyn.Resource(m.Resource).Namespace(ns)
			} else {
				ri = dyn.Resource(m.Resource)
			}
		}
		// Re-applying a large CRD costs the apiserver seconds (schema and
		// OpenAPI rebuilds); a restart of a persistent stack skips the
		// unchanged ones.
		sum := contentHash(obj.Object)
		if isCRD && current[obj.GetName()] == sum {
			continue
		}
		annotations := obj.GetAnnotations()
		if annotations == nil {
			annotations = map[string]string{}
		}
		annotations[contentHashAnnotation] = sum
		obj.SetAnnotations(annotations)
		unstructured.RemoveNestedField(obj.Object, "status")
		unstructured.RemoveNestedField(obj.Object, "metadata", "creationTimestamp")
		unstructured.RemoveNestedField(obj.Object, "metadata", "resourceVersion")
		if _, err := ri.Apply(ctx, obj.GetName(), obj, metav1.ApplyOptions{FieldManager: FieldManager, Force: true}); err != nil {
			return fmt.Errorf("localstack: apply %s %s: %w", gvk.Kind, obj.GetName(), err)
		}
		if isCRD {
			crds = append(crds, obj.GetName())
		}
	}
	for _, name := range crds {
		if err := waitEstablished(ctx, dyn, name); err != nil {
			return err
		}
	}
	return nil
}

func waitEstablished(ctx context.Context, dyn dynamic.Interface, name string) error {
	return pollUntil(ctx, "CRD "+name+" Established", 50*time.Millisecond, nil, func(ctx context.Context) (bool, error) {
		u, err := dyn.Resource(crdGVR).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		var established bool
		for _, c := range conds {
			m, _ := c.(map[string]any)
			typ, _ := m["type"].(string)
			status, _ := m["status"].(string)
			switch {
			case typ == "Established" && status == "True":
				established = true
			case typ == "NamesAccepted" && status == "False":
				return false, fmt.Errorf("names not accepted: %v", m["message"])
			}
		}
		return established, nil
	})
}

// readManifests parses every *.yaml file in dir (sorted by name).
func readManifests(dir string) ([]*unstructured.Unstructured, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	var objs []*unstructured.Unstructured
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
		for {
			doc, err := r.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return nil, fmt.Errorf("localstack: %s: %w", f, err)
			}
			if len(strings.TrimSpace(stripComments(doc))) == 0 {
				continue
			}
			var m map[string]any
			if err := yaml.Unmarshal(doc, &m); err != nil {
				return nil, fmt.Errorf("localstack: %s: %w", f, err)
			}
			if len(m) == 0 {
				continue
			}
			u := &unstructured.Unstructured{Object: m}
			if u.GetKind() == "" || u.GetAPIVersion() == "" || u.GetName() == "" {
				return nil, fmt.Errorf("localstack: %s: a document lacks apiVersion, kind or metadata.name", f)
			}
			objs = append(objs, u)
		}
	}
	return objs, nil
}

func stripComments(doc []byte) string {
	var b strings.Builder
	for _, line := range strings.Split(string(doc), "\n") {
		if t := strings.TrimSpace(line); t == "" || strings.HasPrefix(t, "#") || t == "---" {
			continue
		}
		b.WriteString(line)
		b.WriteByte('\n')
	}
	return b.String()
}

// contentHashAnnotation records the hash of an applied manifest.
const contentHashAnnotation = "odaflow.oda.tmforum.org/manifest-hash"

func contentHash(obj map[string]any) string {
	b, _ := json.Marshal(obj)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// establishedCRDs maps the name of every Established CRD to the manifest
// hash it was applied with, in one list call.
func establishedCRDs(ctx context.Context, dyn dynamic.Interface) map[string]string {
	out := map[string]string{}
	list, err := dyn.Resource(crdGVR).List(ctx, metav1.ListOptions{})
	if err != nil {
		return out
	}
	for _, crd := range list.Items {
		conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
		for _, c := range conds {
			m, _ := c.(map[string]any)
			if m["type"] == "Established" && m["status"] == "True" {
				out[crd.GetName()] = crd.GetAnnotations()[contentHashAnnotation]
			}
		}
	}
	return out
}
