package runtime

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/workqueue"
)

// TestStandardMetrics: after NewRegistry, a client-go request and a
// workqueue report under the names every Kubernetes controller uses.
func TestStandardMetrics(t *testing.T) {
	reg := NewRegistry()

	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"major":"1","minor":"37","gitVersion":"v1.37.2"}`))
	}))
	defer srv.Close()
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.Discovery().ServerVersion(); err != nil {
		t.Fatal(err)
	}

	q := workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[string]{Name: "standard-metrics-test"})
	defer q.ShutDown()
	q.Add("a")
	item, _ := q.Get()
	q.Done(item)

	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*dto.MetricFamily{}
	for _, f := range families {
		byName[f.GetName()] = f
	}
	host := strings.TrimPrefix(srv.URL, "http://")
	if got := sample(byName["rest_client_requests_total"], map[string]string{"code": "200", "method": "GET", "host": host}); got < 1 {
		t.Errorf("rest_client_requests_total{code=200,method=GET,host=%s} = %v, want ≥ 1", host, got)
	}
	if got := sample(byName["rest_client_request_duration_seconds"], map[string]string{"verb": "GET", "host": host}); got < 1 {
		t.Errorf("rest_client_request_duration_seconds count = %v, want ≥ 1", got)
	}
	if got := sample(byName["workqueue_adds_total"], map[string]string{"name": "standard-metrics-test"}); got != 1 {
		t.Errorf("workqueue_adds_total = %v, want 1", got)
	}
	if got := sample(byName["workqueue_work_duration_seconds"], map[string]string{"name": "standard-metrics-test"}); got != 1 {
		t.Errorf("workqueue_work_duration_seconds count = %v, want 1", got)
	}
	for _, name := range []string{"workqueue_depth", "workqueue_queue_duration_seconds", "workqueue_longest_running_processor_seconds", "workqueue_unfinished_work_seconds"} {
		if byName[name] == nil {
			t.Errorf("%s is not exported", name)
		}
	}
}

// sample is a counter's value or a histogram's count for the series with
// these labels (-1 when there is none).
func sample(f *dto.MetricFamily, labels map[string]string) float64 {
	if f == nil {
		return -1
	}
	for _, m := range f.GetMetric() {
		match := true
		for _, lp := range m.GetLabel() {
			if v, ok := labels[lp.GetName()]; ok && v != lp.GetValue() {
				match = false
			}
		}
		if !match {
			continue
		}
		switch {
		case m.Counter != nil:
			return m.GetCounter().GetValue()
		case m.Histogram != nil:
			return float64(m.GetHistogram().GetSampleCount())
		case m.Gauge != nil:
			return m.GetGauge().GetValue()
		}
	}
	return -1
}
