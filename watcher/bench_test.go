package watcher

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/odaflow/odaflow/oda"
)

// BenchmarkEventToSignal measures the watcher's own share of the event →
// signal path on fake clients: per op, one update of a Component's spec
// goes through the informer, the queue and the hash decision to the
// (recording) Temporal client. p50-ns and p99-ns are from the Update call
// to the signal; ns/op also counts the fake client's Get and the copies it
// makes, which a real apiserver would not add to the watcher's share.
func BenchmarkEventToSignal(b *testing.B) {
	const ns, name = "components", "r1-productcatalog"
	h := startHarness(b, harnessOptions{workers: 8, objects: []*unstructured.Unstructured{
		object(oda.KindComponent, ns, name, tinySpec("0")),
	}})
	h.sig.awaitCalls(b, 1)
	got := make(chan call, 1)
	h.sig.mu.Lock()
	h.sig.onCall = func(c call) { got <- c }
	h.sig.mu.Unlock()
	res := h.dyn.Resource(oda.KindComponent.GVR()).Namespace(ns)
	ctx := context.Background()
	lat := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		u, err := res.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			b.Fatal(err)
		}
		_ = unstructured.SetNestedField(u.Object, fmt.Sprint(i+1), "spec", "version")
		start := time.Now()
		if _, err := res.Update(ctx, u, metav1.UpdateOptions{}); err != nil {
			b.Fatal(err)
		}
		select {
		case c := <-got:
			if c.WorkflowID != oda.WorkflowID("Component", ns, name) {
				b.Fatalf("signal to %s", c.WorkflowID)
			}
			lat = append(lat, c.At.Sub(start))
		case <-time.After(waitTimeout):
			b.Fatalf("update %d: no signal after %s", i+1, waitTimeout)
		}
	}
	b.StopTimer()
	slices.Sort(lat)
	pct := func(p int) float64 { return float64(lat[min(len(lat)-1, len(lat)*p/100)].Nanoseconds()) }
	b.ReportMetric(pct(50), "p50-ns")
	b.ReportMetric(pct(99), "p99-ns")
}
