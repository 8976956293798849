package integration

import (
	"context"
	"io"
	"log/slog"
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
}
