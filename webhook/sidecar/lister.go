package sidecar

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"

	"github.com/odaflow/odaflow/oda"
	"github.com/odaflow/odaflow/secrets"
)

// InformerLister is a Lister backed by a dynamic informer on
// SecretsManagements (all namespaces, or one): lookups are in memory.
type InformerLister struct {
	factory  dynamicinformer.DynamicSharedInformerFactory
	informer cache.SharedIndexInformer
}

// NewInformerLister watches SecretsManagements in namespace (all when
// empty). Call Start.
func NewInformerLister(dyn dynamic.Interface, namespace string, resync time.Duration) *InformerLister {
	f := dynamicinformer.NewFilteredDynamicSharedInformerFactory(dyn, resync, namespace, nil)
	inf := f.ForResource(oda.KindSecretsManagement.GVR()).Informer()
	return &InformerLister{factory: f, informer: inf}
}

// Start runs the informer until ctx ends.
func (l *InformerLister) Start(ctx context.Context) { l.factory.Start(ctx.Done()) }

// WaitForSync blocks until the cache is synced or ctx ends.
func (l *InformerLister) WaitForSync(ctx context.Context) bool {
	return cache.WaitForCacheSync(ctx.Done(), l.informer.HasSynced)
}

// HasSynced reports whether the first list is in the cache.
func (l *InformerLister) HasSynced() bool { return l.informer.HasSynced() }

// Get returns one SecretsManagement.
func (l *InformerLister) Get(namespace, name string) (Entry, bool) {
	obj, ok, err := l.informer.GetIndexer().GetByKey(namespace + "/" + name)
	if err != nil || !ok {
		return Entry{}, false
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return Entry{}, false
	}
	return entryOf(u), true
}

// List returns a namespace's SecretsManagements.
func (l *InformerLister) List(namespace string) []Entry {
	objs, err := l.informer.GetIndexer().ByIndex(cache.NamespaceIndex, namespace)
	if err != nil {
		return nil
	}
	out := make([]Entry, 0, len(objs))
	for _, o := range objs {
		if u, ok := o.(*unstructured.Unstructured); ok {
			out = append(out, entryOf(u))
		}
	}
	return out
}

func entryOf(u *unstructured.Unstructured) Entry {
	spec, _ := u.Object["spec"].(map[string]any)
	s, err := secrets.ParseSpec(spec)
	return Entry{Namespace: u.GetNamespace(), Name: u.GetName(), Spec: s, Err: err}
}
