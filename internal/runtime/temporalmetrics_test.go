package runtime

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// The SDK's names and tag keys carry dots and dashes; Prometheus takes
// neither. A later use with other tag keys keeps the first use's labels.
func TestTemporalMetricsSanitizeAndKeepTheFirstLabels(t *testing.T) {
	reg := prometheus.NewRegistry()
	h := NewTemporalMetrics(reg).WithTags(map[string]string{"task-queue": "odaflow", "namespace": "default"})
	h.Counter("temporal.workflow-task.completed").Inc(2)
	h.WithTags(map[string]string{"workflow.type": "Component"}).Counter("temporal.workflow-task.completed").Inc(1)
	h.Timer("temporal.poll-latency").Record(3 * time.Millisecond)
	h.Gauge("temporal.num-pollers").Update(8)

	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			labels := ""
			for _, l := range m.GetLabel() {
				labels += l.GetName() + "=" + l.GetValue() + ","
			}
			value := m.GetCounter().GetValue() + m.GetGauge().GetValue() + float64(m.GetHistogram().GetSampleCount())
			got[f.GetName()+"{"+labels+"}"] = fmt.Sprint(value)
		}
	}
	want := map[string]string{
		"temporal_workflow_task_completed{namespace=default,task_queue=odaflow,}": "3",
		"temporal_poll_latency_seconds{namespace=default,task_queue=odaflow,}":    "1",
		"temporal_num_pollers{namespace=default,task_queue=odaflow,}":             "8",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("series:\n got %v\nwant %v", got, want)
	}
}

// BenchmarkTemporalMetricsCounter is one SDK metric emission: the SDK asks
// its handler for the counter on every event (each poll, task, local
// activity), so this runs dozens of times per workflow task.
func BenchmarkTemporalMetricsCounter(b *testing.B) {
	h := NewTemporalMetrics(prometheus.NewRegistry()).WithTags(map[string]string{
		"namespace": "default", "task_queue": "odaflow", "workflow_type": "Component", "worker_type": "WorkflowWorker", "activity_type": "WriteStatus",
	})
	b.ReportAllocs()
	for b.Loop() {
		h.Counter("temporal_workflow_task_execution_total").Inc(1)
	}
}
