package runtime

import (
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/util/workqueue"
)

// The metrics every Kubernetes controller exports under these names
// (client-go through component-base or controller-runtime), so that the
// dashboards and alerts written for them work on odaflow unchanged.
var (
	// client-go requests: RequestResult and RequestLatency (kubemetrics.go).
	restClientRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "rest_client_requests_total",
		Help: "Number of HTTP requests, partitioned by status code, method, and host.",
	}, []string{"code", "method", "host"})
	restClientDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "rest_client_request_duration_seconds",
		Help:    "Request latency in seconds. Broken down by verb, and host.",
		Buckets: []float64{0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0},
	}, []string{"verb", "host"})

	// client-go workqueues, by queue name (the watcher's odaflow-watcher).
	workqueueDepth = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "workqueue_depth", Help: "Current depth of workqueue",
	}, []string{"name"})
	workqueueAdds = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "workqueue_adds_total", Help: "Total number of adds handled by workqueue",
	}, []string{"name"})
	workqueueLatency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "workqueue_queue_duration_seconds", Help: "How long in seconds an item stays in workqueue before being requested.",
		Buckets: prometheus.ExponentialBuckets(10e-9, 10, 12),
	}, []string{"name"})
	workqueueWorkDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "workqueue_work_duration_seconds", Help: "How long in seconds processing an item from workqueue takes.",
		Buckets: prometheus.ExponentialBuckets(10e-9, 10, 12),
	}, []string{"name"})
	workqueueUnfinished = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "workqueue_unfinished_work_seconds",
		Help: "How many seconds of work has been done that is in progress and hasn't been observed by work_duration. Large values indicate stuck threads.",
	}, []string{"name"})
	workqueueLongest = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "workqueue_longest_running_processor_seconds",
		Help: "How many seconds has the longest running processor for workqueue been running.",
	}, []string{"name"})
	workqueueRetries = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "workqueue_retries_total", Help: "Total number of retries handled by workqueue",
	}, []string{"name"})

	// client-go leader election, by Lease name.
	leaderStatus = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "leader_election_master_status",
		Help: "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master. 'name' is the string used to identify the lease.",
	}, []string{"name"})
	leaderSlowpath = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "leader_election_slowpath_total",
		Help: "Total number of slow path exercised in renewing leader leases. 'name' is the string used to identify the lease.",
	}, []string{"name"})
)

var standardCollectors = []prometheus.Collector{
	restClientRequests, restClientDuration,
	workqueueDepth, workqueueAdds, workqueueLatency, workqueueWorkDuration, workqueueUnfinished, workqueueLongest, workqueueRetries,
	leaderStatus, leaderSlowpath,
}

// setStandardProviders hands client-go's workqueue and leader-election
// metrics to the collectors above. client-go takes its providers once, before
// the first queue or elector exists: NewRegistry runs before either is built.
func setStandardProviders() {
	workqueue.SetProvider(workqueueProvider{})
	leaderelection.SetProvider(leaderProvider{})
}

type workqueueProvider struct{}

func (workqueueProvider) NewDepthMetric(name string) workqueue.GaugeMetric {
	return workqueueDepth.WithLabelValues(name)
}
func (workqueueProvider) NewAddsMetric(name string) workqueue.CounterMetric {
	return workqueueAdds.WithLabelValues(name)
}
func (workqueueProvider) NewLatencyMetric(name string) workqueue.HistogramMetric {
	return workqueueLatency.WithLabelValues(name)
}
func (workqueueProvider) NewWorkDurationMetric(name string) workqueue.HistogramMetric {
	return workqueueWorkDuration.WithLabelValues(name)
}
func (workqueueProvider) NewUnfinishedWorkSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return workqueueUnfinished.WithLabelValues(name)
}
func (workqueueProvider) NewLongestRunningProcessorSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return workqueueLongest.WithLabelValues(name)
}
func (workqueueProvider) NewRetriesMetric(name string) workqueue.CounterMetric {
	return workqueueRetries.WithLabelValues(name)
}

type leaderProvider struct{}

func (leaderProvider) NewLeaderMetric() leaderelection.LeaderMetric { return leaderMetric{} }

type leaderMetric struct{}

func (leaderMetric) On(name string)  { leaderStatus.WithLabelValues(name).Set(1) }
func (leaderMetric) Off(name string) { leaderStatus.WithLabelValues(name).Set(0) }
func (leaderMetric) SlowpathExercised(name string) {
	leaderSlowpath.WithLabelValues(name).Inc()
}
