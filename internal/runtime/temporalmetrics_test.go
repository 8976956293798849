package runtime

import (
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// The SDK's metric names come out under the names Temporal documents for
// Prometheus: counters with _total (once), timers as histograms in seconds,
// gauges unchanged, and the SDK's tags as the only labels.
func TestTemporalMetricsExportStandardNames(t *testing.T) {
	reg := prometheus.NewRegistry()
	h, err := NewTemporalMetrics(reg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	tagged := h.WithTags(map[string]string{"namespace": "default", "task_queue": "odaflow"})
	tagged.Counter("temporal_request").Inc(2)
	tagged.WithTags(map[string]string{"operation": "PollWorkflowTaskQueue"}).Counter("temporal_request").Inc(1)
	tagged.Counter("temporal_local_activity_total").Inc(1)
	tagged.Timer("temporal_activity_execution_latency").Record(30 * time.Millisecond)
	tagged.Gauge("temporal_worker_task_slots_available").Update(8)

	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	type series struct {
		value  float64
		labels map[string]string
	}
	got := map[string][]series{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			v := m.GetCounter().GetValue() + m.GetGauge().GetValue() + float64(m.GetHistogram().GetSampleCount())
			got[f.GetName()] = append(got[f.GetName()], series{v, labels})
		}
	}
	sum := func(name string) float64 {
		total := 0.0
		for _, s := range got[name] {
			total += s.value
		}
		return total
	}
	for name, want := range map[string]float64{
		"temporal_request_total":                      3,
		"temporal_local_activity_total":               1,
		"temporal_activity_execution_latency_seconds": 1,
		"temporal_worker_task_slots_available":        8,
	} {
		if v := sum(name); v != want {
			t.Errorf("%s = %v, want %v (exported: %v)", name, v, want, keys(got))
		}
	}
	if len(got) != 4 {
		t.Errorf("exported %v, want exactly the 4 metrics recorded", keys(got))
	}
	for _, s := range got["temporal_request_total"] {
		if s.labels["namespace"] != "default" || s.labels["task_queue"] != "odaflow" || len(s.labels) > 3 {
			t.Errorf("temporal_request_total labels %v, want the SDK's tags only", s.labels)
		}
	}
	// The buckets are in seconds: 30 ms falls below the 0.05 bound.
	for _, f := range families {
		if f.GetName() != "temporal_activity_execution_latency_seconds" {
			continue
		}
		for _, b := range f.GetMetric()[0].GetHistogram().GetBucket() {
			if b.GetUpperBound() == 0.05 && b.GetCumulativeCount() != 1 {
				t.Errorf("bucket le=0.05 holds %d, want the 30 ms sample", b.GetCumulativeCount())
			}
		}
	}
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
