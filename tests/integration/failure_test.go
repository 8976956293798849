package integration

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/odaflow/odaflow/internal/config"
	"github.com/odaflow/odaflow/watcher"
	"github.com/odaflow/odaflow/worker"
)

func freeAddress(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func readyz(addr string) (int, string) {
	resp, err := http.Get("http://" + addr + "/readyz")
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// With Temporal unreachable, the worker and the watcher start, say so on
// /readyz, keep retrying with backoff, and stop cleanly: no crash loop.
func TestProcessesWaitForAnUnreachableTemporal(t *testing.T) {
	dead := freeAddress(t) // nothing listens here
	common := stack.common
	common.TemporalAddress = dead
	common.TaskQueue = "odaflow-it-dead"

	wcfg := config.Worker{Common: common, IstioGateway: "components/component-gateway"}
	wcfg.HTTPAddress = freeAddress(t)
	w := worker.New(wcfg)
	vcfg := config.Watcher{Common: common}
	vcfg.HTTPAddress = freeAddress(t)
	vcfg.Namespaces = []string{"it-nothing-here"}
	v := watcher.NewApp(vcfg)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, app := range []interface{ Start(context.Context) error }{w, v} {
		if err := app.Start(ctx); err != nil {
			t.Fatalf("start with Temporal down: %v", err)
		}
	}
	for _, addr := range []string{wcfg.HTTPAddress, vcfg.HTTPAddress} {
		eventually(t, 15*time.Second, "readyz reports Temporal unreachable", func() (bool, string) {
			code, body := readyz(addr)
			return code == http.StatusServiceUnavailable && strings.Contains(body, "temporal"), body
		})
	}
	stopped := make(chan struct{})
	go func() {
		stopApp(w)
		stopApp(v)
		close(stopped)
	}()
	select {
	case <-stopped:
	case <-time.After(40 * time.Second):
		t.Fatal("the processes did not stop while Temporal was unreachable")
	}
}
