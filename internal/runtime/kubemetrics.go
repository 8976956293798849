package runtime

import (
	"context"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/tools/metrics"
)

// kubeRequests counts every apiserver request this process makes, by verb
// and status code: the figure behind "apiserver requests per Component"
// and the proof that odaflow makes no 409s.
var kubeRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "odaflow_kube_requests_total",
	Help: "Kubernetes API requests made by this process, by method and status code.",
}, []string{"method", "code"})

var registerKubeMetrics sync.Once

type kubeResult struct{}

func (kubeResult) Increment(_ context.Context, code, method, _ string) {
	kubeRequests.WithLabelValues(method, code).Inc()
}

func registerKubeRequests(reg prometheus.Registerer) {
	registerKubeMetrics.Do(func() {
		metrics.Register(metrics.RegisterOpts{RequestResult: kubeResult{}})
	})
	// The same collector may serve several registries (make dev runs the
	// worker and the watcher in one process).
	_ = reg.Register(kubeRequests)
}
