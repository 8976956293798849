package runtime

import (
	"fmt"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/otlptranslator"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.temporal.io/sdk/client"
	temporalotel "go.temporal.io/sdk/contrib/opentelemetry"
)

// temporalScope is the meter name the SDK's contrib handler uses by default.
const temporalScope = "temporal-sdk-go"

// temporalLatencyBuckets are in seconds: the SDK's timers carry the unit
// "s", and the OTel default buckets (0 … 10000) are meant for milliseconds.
// They span a local activity (1 ms) to a long poll (60 s).
var temporalLatencyBuckets = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}

// NewTemporalMetrics is the Temporal SDK's own OpenTelemetry metrics
// handler, exported through the OTel Prometheus exporter into reg, so the
// SDK's metrics are served on the process's /metrics under the names
// Temporal documents: counters end in _total (temporal_request_total),
// timers are histograms in seconds
// (temporal_activity_execution_latency_seconds_bucket), gauges keep their
// name (temporal_worker_task_slots_available).
func NewTemporalMetrics(reg prometheus.Registerer, log *slog.Logger) (client.MetricsHandler, error) {
	exporter, err := otelprom.New(
		otelprom.WithRegisterer(reg),
		otelprom.WithTranslationStrategy(otlptranslator.UnderscoreEscapingWithSuffixes),
		// The labels are the SDK's tags only: no otel_scope_* on every
		// series and no target_info, which Prometheus's own target labels
		// already say.
		otelprom.WithoutScopeInfo(),
		otelprom.WithoutTargetInfo(),
	)
	if err != nil {
		return nil, fmt.Errorf("temporal metrics exporter: %w", err)
	}
	provider := sdkmetric.NewMeterProvider(
		sdkmetric.WithReader(exporter),
		sdkmetric.WithView(sdkmetric.NewView(
			sdkmetric.Instrument{Kind: sdkmetric.InstrumentKindHistogram, Scope: instrumentation.Scope{Name: temporalScope}},
			sdkmetric.Stream{Aggregation: sdkmetric.AggregationExplicitBucketHistogram{Boundaries: temporalLatencyBuckets}},
		)),
	)
	return temporalotel.NewMetricsHandler(temporalotel.MetricsHandlerOptions{
		Meter: provider.Meter(temporalScope),
		// client.MetricsCounter only increases: exported as Prometheus
		// counters (_total), not as gauges.
		UseMonotonicCounters: true,
		// The contrib handler panics on a meter error by default; a
		// metric is not worth a worker.
		OnError: func(err error) { log.Warn("temporal metric", "error", err) },
	}), nil
}
