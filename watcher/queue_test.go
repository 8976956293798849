package watcher

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	"github.com/odaflow/odaflow/oda"
)

func comp(name string) key { return key{Kind: "Component", Namespace: "ns", Name: name} }

// laneStep is an enqueue (with its lane) or a Get of the next key.
type laneStep struct {
	add     string
	recheck bool
	get     bool
}

func TestTwoLaneQueueOrder(t *testing.T) {
	add := func(name string) laneStep { return laneStep{add: name} }
	recheck := func(name string) laneStep { return laneStep{add: name, recheck: true} }
	get := laneStep{get: true}
	tests := []struct {
		name  string
		steps []laneStep
		want  []string
	}{
		{"news in arrival order", []laneStep{add("a"), add("b"), get, get}, []string{"a", "b"}},
		{"rechecks after news", []laneStep{recheck("r1"), recheck("r2"), add("a"), get, get, get}, []string{"a", "r1", "r2"}},
		{"news for a queued recheck promotes it", []laneStep{recheck("r1"), recheck("r2"), add("b"), add("r2"), get, get, get}, []string{"b", "r2", "r1"}},
		{"a promoted key is handed out once", []laneStep{recheck("r1"), add("r1"), get, add("x"), get}, []string{"r1", "x"}},
		{"a recheck does not demote news", []laneStep{add("a"), recheck("r"), recheck("a"), get, get}, []string{"a", "r"}},
		{"queued once however often added", []laneStep{recheck("r"), recheck("r"), add("a"), add("a"), get, get}, []string{"a", "r"}},
		{"a key taken and queued again by news goes first", []laneStep{recheck("r1"), recheck("r2"), get, add("r1"), get, get}, []string{"r1", "r1", "r2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := &Watcher{lanes: newTwoLaneQueue()}
			w.queue = newWorkQueue(w.lanes, workqueue.DefaultTypedControllerRateLimiter[key](), clock.RealClock{})
			defer w.queue.ShutDown()
			var got []string
			for _, s := range tt.steps {
				if !s.get {
					w.enqueue(comp(s.add), s.recheck)
					continue
				}
				k, _ := w.queue.Get()
				got = append(got, k.Name)
				w.queue.Done(k)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("order (-want +got):\n%s", diff)
			}
			if n := w.queue.Len(); n != 0 {
				t.Errorf("%d keys left queued, want 0", n)
			}
		})
	}
}

// After a restart, a Component applied while the watcher was down is
// signalled before the objects odaflow handled earlier are re-checked,
// even when those need a signal too.
func TestWatcherRestartServesNewsBeforeRechecks(t *testing.T) {
	var objects []*unstructured.Unstructured
	for i := range 30 {
		stale := object(oda.KindComponent, "components", fmt.Sprintf("a-handled-%02d", i), tinySpec("1"))
		setAnnotation(stale, oda.AnnotationObservedHash, "0000000000000000")
		objects = append(objects, stale)
	}
	objects = append(objects, object(oda.KindComponent, "components", "z-applied-while-down", tinySpec("1")))
	h := startHarness(t, harnessOptions{objects: objects})
	calls := h.sig.awaitCalls(t, len(objects))
	if calls[0].WorkflowID != "Component/components/z-applied-while-down" {
		t.Fatalf("first signal after the restart went to %s, want the Component applied while the watcher was down", calls[0].WorkflowID)
	}
	h.eventually("the queue drained", func() (bool, string) {
		return h.w.queue.Len() == 0, fmt.Sprint(h.w.queue.Len())
	})
}
