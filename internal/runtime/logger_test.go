package runtime

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"go.uber.org/fx"
	"k8s.io/klog/v2"

	"github.com/odaflow/odaflow/internal/config"
)

// loggerApp builds an application with runtime's logger, fx event logger
// and klog routing, its records going to a text handler at level.
func loggerApp(t *testing.T, level slog.Level) (*bytes.Buffer, *slog.Logger) {
	t.Helper()
	var buf bytes.Buffer
	var log *slog.Logger
	app := fx.New(
		fx.Supply(config.Common{LogLevel: "info"}),
		WithLogHandler(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: level})),
		fx.Provide(newAppLogger),
		fx.WithLogger(FxLogger),
		fx.Invoke(routeKlog, func(l *slog.Logger) { log = l }),
	)
	if err := app.Err(); err != nil {
		t.Fatal(err)
	}
	return &buf, log
}

func TestFxRecordsOnlyAtDebug(t *testing.T) {
	defer klog.ClearLogger()
	buf, log := loggerApp(t, slog.LevelInfo)
	log.Info("odaflow's own line")
	if got := buf.String(); strings.Contains(got, "component=fx") || !strings.Contains(got, "odaflow's own line") {
		t.Fatalf("at info, want odaflow's line and no fx record, got:\n%s", got)
	}
	buf, _ = loggerApp(t, slog.LevelDebug)
	if got := buf.String(); !strings.Contains(got, "level=DEBUG msg=provided component=fx") {
		t.Fatalf("at debug, want fx's records, got:\n%s", got)
	}
}

func TestKlogGoesThroughTheApplicationsHandler(t *testing.T) {
	defer klog.ClearLogger()
	buf, _ := loggerApp(t, slog.LevelInfo)
	klog.ErrorS(nil, "watch of *v1.Service ended", "reflector", "informers.go:1")
	klog.Flush()
	if got := buf.String(); !strings.Contains(got, `level=ERROR msg="watch of *v1.Service ended" component=client-go reflector=informers.go:1`) {
		t.Fatalf("klog's line is not in the application's log:\n%s", got)
	}
}
