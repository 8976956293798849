package watcher

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"go.temporal.io/sdk/temporal"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	"github.com/odaflow/odaflow/oda"
	"github.com/odaflow/odaflow/workflows"
)

func keyword(c call, k temporal.SearchAttributeKeyKeyword) string {
	v, _ := c.Options.TypedSearchAttributes.GetKeyword(k)
	return v
}

func TestWatcherStartsWorkflowsWithSearchAttributes(t *testing.T) {
	const ns = "components"
	parent := object(oda.KindComponent, ns, "r1", tinySpec("1"))
	ic := object(oda.KindIdentityConfig, ns, "r1-id", map[string]any{"canvasSystemRole": "Admin"})
	ic.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: oda.APIVersion, Kind: "Component", Name: "r1", UID: parent.GetUID(), Controller: ptr.To(true)}})
	h := startHarness(t, harnessOptions{objects: []*unstructured.Unstructured{parent, ic}, searchAttributes: true})
	calls := h.sig.await(t, "two starts", func(c []call) bool { return len(c) >= 2 })
	byID := map[string]call{}
	for _, c := range calls {
		byID[c.WorkflowID] = c
	}
	for id, want := range map[string][3]string{
		"Component/components/r1":         {"r1", ns, "Component"},
		"IdentityConfig/components/r1-id": {"r1", ns, "IdentityConfig"},
	} {
		c, ok := byID[id]
		if !ok {
			t.Fatalf("no start of %s: %s", id, describe(calls))
		}
		got := [3]string{keyword(c, workflows.SearchAttrOdaComponent), keyword(c, workflows.SearchAttrK8sNamespace), keyword(c, workflows.SearchAttrOdaKind)}
		if got != want {
			t.Errorf("%s: OdaComponent, K8sNamespace, OdaKind = %v, want %v", id, got, want)
		}
		if !strings.Contains(c.Options.StaticDetails, "kubectl -n "+ns) || c.Options.StaticSummary == "" {
			t.Errorf("%s: summary %q, details %q", id, c.Options.StaticSummary, c.Options.StaticDetails)
		}
		in, ok := c.Args[0].(workflows.SearchAttributesInput)
		if !ok {
			t.Fatalf("%s: input %T cannot carry the switch", id, c.Args[0])
		}
		if fmt.Sprint(in) != fmt.Sprint(in.WithSearchAttributes(true)) {
			t.Errorf("%s: input %+v does not ask the workflow to keep DeploymentStatus", id, in)
		}
	}
}

// Every workflow starts with the configured workflow-task timeout (and
// keeps it when it continues as new); unset, Temporal's default applies.
func TestWatcherStartsWorkflowsWithTheWorkflowTaskTimeout(t *testing.T) {
	for _, timeout := range []time.Duration{0, 30 * time.Second} {
		h := startHarness(t, harnessOptions{objects: []*unstructured.Unstructured{object(oda.KindComponent, "components", "r1", tinySpec("1"))}, workflowTaskTimeout: timeout})
		if got := h.sig.awaitCalls(t, 1)[0].Options.WorkflowTaskTimeout; got != timeout {
			t.Errorf("configured %s: the start asks for %s", timeout, got)
		}
	}
}

func TestWatcherWithoutSearchAttributesSetsNone(t *testing.T) {
	h := startHarness(t, harnessOptions{objects: []*unstructured.Unstructured{object(oda.KindComponent, "components", "r1", tinySpec("1"))}})
	c := h.sig.awaitCalls(t, 1)[0]
	if n := c.Options.TypedSearchAttributes.Size(); n != 0 {
		t.Errorf("start carries %d search attributes with the switch off", n)
	}
	if in := c.Args[0].(workflows.ComponentInput); in.SearchAttributes {
		t.Error("the workflow is asked to upsert with the switch off")
	}
	if c.Options.StaticSummary == "" || c.Options.StaticDetails == "" {
		t.Error("summary and details are shown whatever the switch")
	}
}

func histogramCount(vec *prometheus.HistogramVec, labels ...string) uint64 {
	var m dto.Metric
	if err := vec.WithLabelValues(labels...).(prometheus.Histogram).Write(&m); err != nil {
		return 0
	}
	return m.GetHistogram().GetSampleCount()
}

func gaugeValue(vec *prometheus.GaugeVec, labels ...string) float64 {
	var m dto.Metric
	if err := vec.WithLabelValues(labels...).Write(&m); err != nil {
		return -1
	}
	return m.GetGauge().GetValue()
}

func setDeploymentStatus(phase string) func(u *unstructured.Unstructured) {
	return func(u *unstructured.Unstructured) {
		u.Object["status"] = map[string]any{"summary/status": map[string]any{"deployment_status": phase}}
	}
}

func TestWatcherLifecycleMetrics(t *testing.T) {
	const ns = "components"
	// Done before the watcher started: a restart must not observe it again.
	old := object(oda.KindComponent, ns, "old", tinySpec("1"))
	setDeploymentStatus(oda.StatusComplete)(old)
	broken := object(oda.KindComponent, ns, "broken", tinySpec("1"))
	setDeploymentStatus(oda.StatusFailed)(broken)
	h := startHarness(t, harnessOptions{objects: []*unstructured.Unstructured{old, broken}})
	h.eventually("the Failed Component counted", func() (bool, string) {
		v := gaugeValue(h.metrics.Failed, "Component")
		return v == 1, fmt.Sprint(v)
	})

	comp := object(oda.KindComponent, ns, "r1", tinySpec("1"))
	comp.SetCreationTimestamp(metav1.NewTime(time.Now().Add(-90 * time.Second)))
	h.create(comp)
	h.update(oda.KindComponent, ns, "r1", setDeploymentStatus(oda.StatusCompCon))
	h.update(oda.KindComponent, ns, "r1", setDeploymentStatus(oda.StatusComplete))
	h.eventually("lifecycle duration observed", func() (bool, string) {
		n := histogramCount(h.metrics.Lifecycle, "Component")
		return n == 1, fmt.Sprint(n)
	})
	var m dto.Metric
	_ = h.metrics.Lifecycle.WithLabelValues("Component").(prometheus.Histogram).Write(&m)
	if s := m.GetHistogram().GetSampleSum(); s < 90 || s > 120 {
		t.Errorf("lifecycle duration = %vs, want the time since creation (about 90 s)", s)
	}

	// Broken after an upgrade, then repaired: counted, and the gauge follows.
	h.update(oda.KindComponent, ns, "r1", setDeploymentStatus(oda.StatusFailed))
	h.eventually("second Failed Component", func() (bool, string) {
		v := gaugeValue(h.metrics.Failed, "Component")
		return v == 2, fmt.Sprint(v)
	})
	h.awaitCounter(h.metrics.FailedTotal, 1, "Component")
	h.update(oda.KindComponent, ns, "r1", setDeploymentStatus(oda.StatusComplete))
	h.delete(oda.KindComponent, ns, "broken")
	h.eventually("no Failed Component left", func() (bool, string) {
		v := gaugeValue(h.metrics.Failed, "Component")
		return v == 0, fmt.Sprint(v)
	})
	if n := histogramCount(h.metrics.Lifecycle, "Component"); n != 1 {
		t.Errorf("lifecycle durations observed = %d, want 1: only the first arrival at Complete counts", n)
	}
}

func TestPhaseOfChildrenFromTheReadyCondition(t *testing.T) {
	withReady := func(status, reason string) *unstructured.Unstructured {
		u := object(oda.KindExposedAPI, "ns", "api", nil)
		u.Object["status"] = map[string]any{"conditions": []any{map[string]any{"type": "Ready", "status": status, "reason": reason}}}
		return u
	}
	for _, c := range []struct {
		status, reason string
		done, failed   bool
	}{
		{"True", "Exposed", true, false},
		{"False", "WaitingForAddress", false, false},
		{"False", "ImplementationNotReady", false, false},
		{"False", "GatewayRejected", false, true},
		{"False", "CleanupBlocked", false, true},
	} {
		done, failed := phaseOf(oda.KindExposedAPI.Name, withReady(c.status, c.reason))
		if done != c.done || failed != c.failed {
			t.Errorf("Ready=%s %s: done %v failed %v, want %v %v", c.status, c.reason, done, failed, c.done, c.failed)
		}
	}
}
