package tracing

import (
	"context"
	"fmt"
	"os"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.26.0"
	"go.opentelemetry.io/otel/trace"
)

// Enabled reports whether the environment asks for trace export: one of
// OTEL_EXPORTER_OTLP_ENDPOINT and OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is
// set, and OTEL_TRACES_EXPORTER is not "none".
func Enabled(lookup func(string) (string, bool)) bool {
	if v, _ := lookup("OTEL_TRACES_EXPORTER"); v == "none" {
		return false
	}
	for _, k := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"} {
		if v, ok := lookup(k); ok && v != "" {
			return true
		}
	}
	return false
}

// FromEnv returns a tracer exporting over OTLP/HTTP as the standard
// OTEL_EXPORTER_OTLP_* variables say (endpoint, headers, timeout, ...),
// batched, for service (the service.name resource attribute, overridden by
// OTEL_SERVICE_NAME), and the function that flushes and stops it. When
// the environment does not ask for export ([Enabled]) it returns a nil
// tracer: tracing is off.
func FromEnv(ctx context.Context, service string) (trace.Tracer, func(context.Context) error, error) {
	if !Enabled(os.LookupEnv) {
		return nil, func(context.Context) error { return nil }, nil
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("tracing: OTLP exporter: %w", err)
	}
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(semconv.ServiceName(service)))
	if err != nil {
		res = resource.Default()
	}
	if name := os.Getenv("OTEL_SERVICE_NAME"); name != "" {
		res, _ = resource.Merge(res, resource.NewSchemaless(semconv.ServiceName(name)))
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	return tp.Tracer(InstrumentationName), tp.Shutdown, nil
}
