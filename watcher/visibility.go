package watcher

import (
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/odaflow/odaflow/oda"
	"github.com/odaflow/odaflow/workflows"
)

// startOptions are the options of a resource's workflow start: what the Web
// UI shows about it (summary, details) and, with search attributes on, the
// attributes that never change for the workflow's life.
func (w *Watcher) startOptions(kind string, obj *unstructured.Unstructured) client.StartWorkflowOptions {
	ns, name := obj.GetNamespace(), obj.GetName()
	id := oda.WorkflowID(kind, ns, name)
	comp := componentOf(kind, obj)
	opts := client.StartWorkflowOptions{
		ID:        id,
		TaskQueue: w.cfg.TaskQueue,
		// A finished lifecycle under this ID (a deleted object) does not
		// block a new object of the same name.
		WorkflowIDReusePolicy: 1, // ALLOW_DUPLICATE
		WorkflowTaskTimeout:   w.cfg.WorkflowTaskTimeout,
		StaticSummary:         fmt.Sprintf("%s %s in namespace %s", kind, name, ns),
		StaticDetails:         staticDetails(kind, obj, comp),
	}
	if w.cfg.SearchAttributes {
		updates := []temporal.SearchAttributeUpdate{
			workflows.SearchAttrK8sNamespace.ValueSet(ns),
			workflows.SearchAttrOdaKind.ValueSet(kind),
		}
		if comp != "" {
			updates = append(updates, workflows.SearchAttrOdaComponent.ValueSet(comp))
		}
		opts.TypedSearchAttributes = temporal.NewSearchAttributes(updates...)
	}
	return opts
}

// componentOf is the Component a resource belongs to: itself, its
// controller, or the component label a Canvas puts on every child.
func componentOf(kind string, obj *unstructured.Unstructured) string {
	if kind == oda.KindComponent.Name {
		return obj.GetName()
	}
	if parent, ok := ParentComponent(obj); ok {
		return parent
	}
	return obj.GetLabels()[oda.LabelComponentName]
}

// staticDetails is the workflow's fixed description in the Web UI (Temporal
// markdown): what the resource is and how to look at it. Names only: the
// spec may be large and is in the signals anyway.
func staticDetails(kind string, obj *unstructured.Unstructured, comp string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "**%s** `%s/%s` (uid `%s`)\n\n", kind, obj.GetNamespace(), obj.GetName(), obj.GetUID())
	if comp != "" && kind != oda.KindComponent.Name {
		fmt.Fprintf(&b, "Part of Component `%s`.\n\n", comp)
	}
	if kind == oda.KindComponent.Name {
		b.WriteString("Lifecycle: children applied → `In-Progress-CompCon` → `In-Progress-IDConfOp` → `In-Progress-SecretMan` → " +
			"`In-Progress-DepApi` → `Complete`, or `Failed` with the reason in the `Ready` condition. " +
			"The search attribute `DeploymentStatus` follows `deployment_status`.\n\n")
	} else {
		b.WriteString("The search attribute `DeploymentStatus` follows the resource's phase.\n\n")
	}
	fmt.Fprintf(&b, "Inspect: `kubectl -n %s get %s %s -o yaml`, or `odaflow explain %s`.",
		obj.GetNamespace(), strings.ToLower(kind), obj.GetName(), oda.WorkflowID(kind, obj.GetNamespace(), obj.GetName()))
	return b.String()
}

// waitingReasons are the Ready=False reasons of a child that is on its way,
// not broken: its phases while it waits for something outside it.
var waitingReasons = map[string]bool{
	workflows.PhaseWaiting:            true,
	workflows.PhaseNotReady:           true,
	workflows.PhaseWaitingForProvider: true,
	"WaitingForSidecars":              true,
}

// phaseOf classifies a resource's status as done (its lifecycle reached the
// goal: Complete, Exposed, Resolved, Ready) or failed, from what odaflow
// wrote there: deployment_status for a Component, the Ready condition for
// the others.
func phaseOf(kind string, obj *unstructured.Unstructured) (done, failed bool) {
	if obj == nil {
		return false, false
	}
	if kind == oda.KindComponent.Name {
		s, _, _ := unstructured.NestedString(obj.Object, "status", "summary/status", "deployment_status")
		return s == oda.StatusComplete, s == oda.StatusFailed
	}
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] != "Ready" {
			continue
		}
		reason, _ := m["reason"].(string)
		switch m["status"] {
		case "True":
			return true, false
		case "False":
			return false, reason != "" && !waitingReasons[reason]
		}
	}
	return false, false
}

// observeLifecycle updates the lifecycle metrics for one watch event. The
// duration is observed once per object, when the watcher sees it reach its
// goal (an update from not done to done), from its creation: a restart
// sees objects already done in its first list and observes nothing for
// them, so nothing is counted twice. Kept out of workflow code, where a
// metric would be emitted again on every replay.
func (w *Watcher) observeLifecycle(kind string, old, obj *unstructured.Unstructured, deleted bool, now time.Time) {
	k := key{Kind: kind, Namespace: obj.GetNamespace(), Name: obj.GetName()}
	uid := string(obj.GetUID())
	done, failed := phaseOf(kind, obj)
	if deleted {
		failed = false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if was := w.failed[k]; was != failed {
		if failed {
			w.failed[k] = true
			w.metrics.Failed.WithLabelValues(kind).Inc()
		} else {
			delete(w.failed, k)
			w.metrics.Failed.WithLabelValues(kind).Dec()
		}
	}
	if deleted {
		delete(w.reached, uid)
		return
	}
	sameObject := old != nil && old.GetUID() == obj.GetUID()
	if failed && sameObject {
		if _, oldFailed := phaseOf(kind, old); !oldFailed {
			w.metrics.FailedTotal.WithLabelValues(kind).Inc()
		}
	}
	if !done || w.reached[uid] {
		return
	}
	w.reached[uid] = true
	if oldDone, _ := phaseOf(kind, old); sameObject && !oldDone {
		w.metrics.Lifecycle.WithLabelValues(kind).Observe(now.Sub(obj.GetCreationTimestamp().Time).Seconds())
	}
}
