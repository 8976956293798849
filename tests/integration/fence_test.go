package integration

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/odaflow/odaflow/activities"
	"github.com/odaflow/odaflow/oda"
	"github.com/odaflow/odaflow/tests/fixtures"
)

// TestStatusFenceOnRealAPIServer drives the status write of a Component
// (in a namespace no watcher serves, so no workflow interferes) through
// the orderings a workflow can produce: a status written by a stale
// workflow task after a newer one is refused and leaves the newer status;
// a write the workflow never recorded (it crashed) is overwritten by the
// re-run; a continued-as-new run writes after its predecessor. It needs the
// real apiserver: the decision rests on how it answers a JSON patch whose
// test operation fails.
func TestStatusFenceOnRealAPIServer(t *testing.T) {
	ns, name := "it-tfence", "fence-productcatalogmanagement"
	createNamespace(t, ns)
	created := create(t, oda.KindComponent, fixtures.ProductCatalog(ns, name))
	kube := activities.NewKube(stack.dyn, stack.core, slog.New(slog.NewTextHandler(io.Discard, nil)))
	ref := oda.Ref{Kind: oda.KindComponent.Name, Namespace: ns, Name: name}
	write := func(phase string, replace bool, run, seq int64, previous string) {
		t.Helper()
		err := kube.WriteStatus(context.Background(), activities.WriteStatusInput{
			Ref: ref, UID: string(created.GetUID()), Replace: replace,
			Status: map[string]any{"summary/status": map[string]any{"deployment_status": phase}},
			Fence:  &activities.StatusFence{RunStart: run, Seq: seq, Previous: previous},
		})
		if err != nil {
			t.Fatalf("write %s: %v", phase, err)
		}
	}
	expect := func(step, phase, fence string) {
		t.Helper()
		u := mustGet(t, oda.KindComponent, ns, name)
		if got := deploymentStatus(u); got != phase {
			t.Errorf("%s: deployment_status %q, want %q", step, got, phase)
		}
		if got := u.GetAnnotations()[oda.AnnotationStatusFence]; got != fence {
			t.Errorf("%s: fence %q, want %q", step, got, fence)
		}
	}

	write(oda.StatusCompCon, false, 1, 5, "")
	expect("first write", oda.StatusCompCon, "1.5")
	write(oda.StatusComplete, true, 1, 10, "1.5")
	expect("the next step", oda.StatusComplete, "1.10")
	// A stale task, started at history length 8, still computes from the
	// first write: refused, the newer status stays.
	write(oda.StatusIDConfOp, true, 1, 8, "1.5")
	expect("a stale task after a newer one", oda.StatusComplete, "1.10")
	// The workflow crashed after the write at 10 and never recorded it;
	// its re-run at 12 still thinks 1.5 is the last write.
	write(oda.StatusIDConfOp, true, 1, 12, "1.5")
	expect("the re-run after a crash", oda.StatusIDConfOp, "1.12")
	write(oda.StatusComplete, true, 2, 3, "1.12")
	expect("a continued-as-new run", oda.StatusComplete, "2.3")

	// A write with an Event, cut short by a crash after the apiserver took
	// it and before Temporal recorded it, is repeated by the step's re-run
	// (later in the history, same last recorded write): one Event. The next
	// step's Event, the same words, is a new one.
	writeWithEvent := func(seq int64, previous string) {
		t.Helper()
		err := kube.WriteStatus(context.Background(), activities.WriteStatusInput{
			Ref: ref, UID: string(created.GetUID()), Replace: true,
			Status: map[string]any{"summary/status": map[string]any{"deployment_status": oda.StatusFailed}},
			Fence:  &activities.StatusFence{RunStart: 2, Seq: seq, Previous: previous},
			Event:  &activities.Event{Type: "Warning", Reason: "FenceTest", Message: "the same words"},
		})
		if err != nil {
			t.Fatalf("write at %d: %v", seq, err)
		}
	}
	countEvents := func() int {
		t.Helper()
		n := 0
		for _, e := range eventsFor(t, ns, name) {
			if strings.HasPrefix(e, "Warning/FenceTest") {
				n++
			}
		}
		return n
	}
	writeWithEvent(5, "2.3")
	writeWithEvent(7, "2.3")
	if n := countEvents(); n != 1 {
		t.Errorf("a repeated step recorded %d Events, want 1", n)
	}
	writeWithEvent(9, "2.7")
	if n := countEvents(); n != 2 {
		t.Errorf("after the next step: %d Events, want 2", n)
	}

	// A lifecycle's first write has no earlier fence to test for; it
	// carries the resourceVersion the workflow saw. A stale task's first
	// write after a newer task's (first and second) writes is refused; a
	// first write onto an object someone else changed meanwhile goes in.
	for _, tc := range []struct {
		name, object string
		before       func(ref oda.Ref, uid string)
		wantPhase    string
		wantFence    string
	}{
		{"a stale first write after newer ones", "fence-first-stale", func(ref oda.Ref, uid string) {
			for _, w := range []activities.WriteStatusInput{
				{Replace: false, Fence: &activities.StatusFence{RunStart: 1, Seq: 10}, Status: map[string]any{"summary/status": map[string]any{"deployment_status": oda.StatusIDConfOp}}},
				{Replace: true, Fence: &activities.StatusFence{RunStart: 1, Seq: 12, Previous: "1.10"}, Status: map[string]any{"summary/status": map[string]any{"deployment_status": oda.StatusComplete}}},
			} {
				w.Ref, w.UID = ref, uid
				if err := kube.WriteStatus(context.Background(), w); err != nil {
					t.Fatal(err)
				}
			}
		}, oda.StatusComplete, "1.12"},
		{"a first write after someone else's change", "fence-first-changed", func(ref oda.Ref, _ string) {
			mergePatch(t, oda.KindComponent, ref.Namespace, ref.Name, `{"metadata":{"labels":{"someone":"else"}}}`)
		}, oda.StatusCompCon, "1.8"},
	} {
		first := create(t, oda.KindComponent, fixtures.ProductCatalog(ns, tc.object))
		firstRef := oda.Ref{Kind: oda.KindComponent.Name, Namespace: ns, Name: first.GetName()}
		tc.before(firstRef, string(first.GetUID()))
		err := kube.WriteStatus(context.Background(), activities.WriteStatusInput{
			Ref: firstRef, UID: string(first.GetUID()), ResourceVersion: first.GetResourceVersion(),
			Status: map[string]any{"summary/status": map[string]any{"deployment_status": oda.StatusCompCon}},
			Fence:  &activities.StatusFence{RunStart: 1, Seq: 8},
		})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		u := mustGet(t, oda.KindComponent, ns, first.GetName())
		if got, fence := deploymentStatus(u), u.GetAnnotations()[oda.AnnotationStatusFence]; got != tc.wantPhase || fence != tc.wantFence {
			t.Errorf("%s: deployment_status %q with fence %q, want %q with %q", tc.name, got, fence, tc.wantPhase, tc.wantFence)
		}
	}
}
