package runtime

import (
	"context"
	"fmt"
	"os"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.temporal.io/sdk/contrib/opentelemetry"
	"go.temporal.io/sdk/interceptor"
)

// Tracing is the OpenTelemetry set-up of a process: a tracer provider that
// batches spans to an OTLP collector, and the Temporal SDK interceptor that
// makes a span of every workflow start, signal, workflow run and activity,
// with the trace context carried in Temporal headers from the watcher's
// signal to the worker's activities.
type Tracing struct {
	Provider    *sdktrace.TracerProvider
	Interceptor interceptor.Interceptor
}

// NewTracing connects to the collector at endpoint (an http(s) URL; http
// means without TLS). The exporter dials lazily and drops spans it cannot
// deliver, so an unreachable collector never slows or fails a lifecycle.
func NewTracing(ctx context.Context, endpoint string) (*Tracing, error) {
	exp, err := otlptracegrpc.New(ctx, otlptracegrpc.WithEndpointURL(endpoint))
	if err != nil {
		return nil, fmt.Errorf("otlp exporter for %s: %w", endpoint, err)
	}
	service := os.Getenv("OTEL_SERVICE_NAME")
	if service == "" {
		service = "odaflow"
	}
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp),
		sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", service))),
	)
	ic, err := opentelemetry.NewTracingInterceptor(opentelemetry.TracerOptions{Tracer: tp.Tracer("odaflow")})
	if err != nil {
		_ = tp.Shutdown(ctx)
		return nil, fmt.Errorf("temporal tracing interceptor: %w", err)
	}
	return &Tracing{Provider: tp, Interceptor: ic}, nil
}
