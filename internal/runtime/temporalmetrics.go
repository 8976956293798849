package runtime

import (
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.temporal.io/sdk/client"
)

// promHandler exposes the Temporal SDK's metrics (workflow task latency,
// activity execution counts, poller state…) through Prometheus without the
// tally bridge. A metric's label names are fixed by its first use; later
// uses with other tag keys are mapped onto that set.
type promHandler struct {
	reg *promVecs
	// tags are keyed by their sanitized names, once per WithTags: the SDK
	// asks for a metric on every event it counts, tags already set.
	tags map[string]string
}

type promVecs struct {
	reg      prometheus.Registerer
	mu       sync.Mutex
	counters map[string]*labelled[*prometheus.CounterVec]
	gauges   map[string]*labelled[*prometheus.GaugeVec]
	timers   map[string]*labelled[*prometheus.HistogramVec]
}

type labelled[V any] struct {
	vec  V
	keys []string
}

// NewTemporalMetrics returns a client.MetricsHandler that registers into reg.
func NewTemporalMetrics(reg prometheus.Registerer) client.MetricsHandler {
	return promHandler{reg: &promVecs{
		reg:      reg,
		counters: map[string]*labelled[*prometheus.CounterVec]{},
		gauges:   map[string]*labelled[*prometheus.GaugeVec]{},
		timers:   map[string]*labelled[*prometheus.HistogramVec]{},
	}}
}

func (h promHandler) WithTags(tags map[string]string) client.MetricsHandler {
	merged := make(map[string]string, len(h.tags)+len(tags))
	for k, v := range h.tags {
		merged[k] = v
	}
	for k, v := range tags {
		merged[sanitize(k)] = v
	}
	return promHandler{reg: h.reg, tags: merged}
}

// metricName maps the SDK's dots and dashes, which Prometheus names do not
// take, to underscores. Built once: building a Replacer costs more than
// using it, and the SDK names a metric on every event it counts.
var metricName = strings.NewReplacer(".", "_", "-", "_")

func sanitize(name string) string { return metricName.Replace(name) }

func sortedKeys(tags map[string]string) []string {
	keys := make([]string, 0, len(tags))
	for k := range tags {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func values(keys []string, tags map[string]string) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = tags[k]
	}
	return out
}

func (h promHandler) Counter(name string) client.MetricsCounter {
	name = sanitize(name)
	h.reg.mu.Lock()
	l, ok := h.reg.counters[name]
	if !ok {
		keys := sortedKeys(h.tags)
		l = &labelled[*prometheus.CounterVec]{vec: prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: "Temporal SDK metric " + name}, keys), keys: keys}
		if err := h.reg.reg.Register(l.vec); err != nil {
			if are, isAre := err.(prometheus.AlreadyRegisteredError); isAre {
				l.vec, _ = are.ExistingCollector.(*prometheus.CounterVec)
			}
		}
		h.reg.counters[name] = l
	}
	h.reg.mu.Unlock()
	if l.vec == nil {
		return client.MetricsNopHandler.Counter(name)
	}
	c := l.vec.WithLabelValues(values(l.keys, h.tags)...)
	return counterFunc(func(d int64) { c.Add(float64(d)) })
}

func (h promHandler) Gauge(name string) client.MetricsGauge {
	name = sanitize(name)
	h.reg.mu.Lock()
	l, ok := h.reg.gauges[name]
	if !ok {
		keys := sortedKeys(h.tags)
		l = &labelled[*prometheus.GaugeVec]{vec: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: "Temporal SDK metric " + name}, keys), keys: keys}
		if err := h.reg.reg.Register(l.vec); err != nil {
			if are, isAre := err.(prometheus.AlreadyRegisteredError); isAre {
				l.vec, _ = are.ExistingCollector.(*prometheus.GaugeVec)
			}
		}
		h.reg.gauges[name] = l
	}
	h.reg.mu.Unlock()
	if l.vec == nil {
		return client.MetricsNopHandler.Gauge(name)
	}
	g := l.vec.WithLabelValues(values(l.keys, h.tags)...)
	return gaugeFunc(g.Set)
}

func (h promHandler) Timer(name string) client.MetricsTimer {
	name = sanitize(name) + "_seconds"
	h.reg.mu.Lock()
	l, ok := h.reg.timers[name]
	if !ok {
		keys := sortedKeys(h.tags)
		l = &labelled[*prometheus.HistogramVec]{vec: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: name, Help: "Temporal SDK metric " + name, Buckets: prometheus.ExponentialBuckets(0.001, 2, 16),
		}, keys), keys: keys}
		if err := h.reg.reg.Register(l.vec); err != nil {
			if are, isAre := err.(prometheus.AlreadyRegisteredError); isAre {
				l.vec, _ = are.ExistingCollector.(*prometheus.HistogramVec)
			}
		}
		h.reg.timers[name] = l
	}
	h.reg.mu.Unlock()
	if l.vec == nil {
		return client.MetricsNopHandler.Timer(name)
	}
	o := l.vec.WithLabelValues(values(l.keys, h.tags)...)
	return timerFunc(func(d time.Duration) { o.Observe(d.Seconds()) })
}

type counterFunc func(int64)

func (f counterFunc) Inc(d int64) { f(d) }

type gaugeFunc func(float64)

func (f gaugeFunc) Update(v float64) { f(v) }

type timerFunc func(time.Duration)

func (f timerFunc) Record(d time.Duration) { f(d) }
