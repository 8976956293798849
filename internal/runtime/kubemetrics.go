package runtime

import (
	"context"
	"net/url"
	"strings"
	"sync"
	"time"

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

// kubeRequestsByResource splits the same requests by resource (and
// subresource): where the requests per Component go.
var kubeRequestsByResource = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "odaflow_kube_requests_by_resource_total",
	Help: "Kubernetes API requests made by this process, by method and resource[/subresource].",
}, []string{"method", "resource"})

var registerKubeMetrics sync.Once

type kubeLatency struct{}

func (kubeLatency) Observe(_ context.Context, verb string, u url.URL, latency time.Duration) {
	kubeRequestsByResource.WithLabelValues(verb, resourceOf(u.Path)).Inc()
	restClientDuration.WithLabelValues(verb, u.Host).Observe(latency.Seconds())
}

// resourceOf names the resource a request path addresses:
// /api/v1/namespaces/ns/events → "events",
// /apis/oda.tmforum.org/v1/namespaces/ns/exposedapis/x/status →
// "exposedapis/status". Names never enter the label, so its values stay few.
func resourceOf(path string) string {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		parts = parts[2:]
	case len(parts) >= 3 && parts[0] == "apis":
		parts = parts[3:]
	default:
		return "other"
	}
	if len(parts) >= 2 && parts[0] == "namespaces" && len(parts) > 2 {
		parts = parts[2:]
	}
	switch len(parts) {
	case 0:
		return "other"
	case 1, 2:
		return parts[0]
	default:
		return parts[0] + "/" + parts[2]
	}
}

type kubeResult struct{}

func (kubeResult) Increment(_ context.Context, code, method, host string) {
	kubeRequests.WithLabelValues(method, code).Inc()
	restClientRequests.WithLabelValues(code, method, host).Inc()
}

func registerKubeRequests(reg prometheus.Registerer) {
	registerKubeMetrics.Do(func() {
		metrics.Register(metrics.RegisterOpts{RequestResult: kubeResult{}, RequestLatency: kubeLatency{}})
		setStandardProviders()
	})
	// The same collector may serve several registries (make dev runs the
	// worker and the watcher in one process).
	_ = reg.Register(kubeRequests)
	_ = reg.Register(kubeRequestsByResource)
	_ = reg.Register(kubeRequestRepeats)
	for _, c := range standardCollectors {
		_ = reg.Register(c)
	}
}
