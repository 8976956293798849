package localstack

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
)

// fastPollDynamicConfig removes the history service's 50 ms task-queue poll
// floor (see docs/research temporal-local.md).
var fastPollDynamicConfig = []string{
	"history.transferProcessorMaxPollRPS=1000",
	"history.transferProcessorMaxPollHostRPS=1000",
	"history.visibilityProcessorMaxPollRPS=1000",
	"history.visibilityProcessorMaxPollHostRPS=1000",
	"history.timerProcessorMaxPollRPS=1000",
}

// cachedSearchAttributes turns the search-attribute cache back on. The dev
// server switches it off unless told otherwise, so that attributes added at
// run time apply at once; it then reads the cluster metadata from sqlite on
// every start and upsert (about 120 reads of cluster and namespace metadata per Component in the bench, on the
// one connection every persistence call shares). odaflow's attributes are
// registered when the server starts (Options.SearchAttributes), before any
// workflow runs, so a cache refreshed every minute serves them as well.
const cachedSearchAttributes = "system.forceSearchAttributesCacheRefreshOnRead=false"

// DevServerArgs are the `temporal server start-dev` flags every dev server
// of odaflow's runs with, the local stack's and the integration tests' own
// (started through the SDK's testsuite): the poll floor removed, the
// search-attribute cache kept, and searchAttributes (name -> type)
// registered at start.
func DevServerArgs(searchAttributes map[string]string) []string {
	var args []string
	for _, v := range fastPollDynamicConfig {
		args = append(args, "--dynamic-config-value", v)
	}
	args = append(args, "--dynamic-config-value", cachedSearchAttributes)
	for _, name := range sortedKeys(searchAttributes) {
		args = append(args, "--search-attribute", name+"="+searchAttributes[name])
	}
	return args
}

// Temporal is a running `temporal server start-dev`.
type Temporal struct {
	// Address is the frontend's host:port (gRPC).
	Address string
	// UIAddress is the Web UI's URL, http://127.0.0.1:<port>.
	UIAddress string
	// Namespace is "default".
	Namespace string
	// DBFile is the sqlite file when Persist, else empty (in memory).
	DBFile string
	// DataDir is where logs (and the DB file) live.
	DataDir string

	opts Options
	temp bool
	sink *logSink
	bin  string
	args []string
	// name labels the process in logs ("temporal" for the dev server).
	name string
	// setup, when set, runs after each process start and before the
	// readiness check: the production server registers its namespace there.
	setup func(ctx context.Context, p *process) error
	// conn is how the harness's own clients connect: TLS with a client
	// certificate for a server started with TemporalServerOptions.TLS.
	conn client.ConnectionOptions

	mu      sync.Mutex
	proc    *process
	stopped bool
}

// StartTemporal starts the Temporal dev server and waits until the frontend
// answers a health check and the namespace exists (bounded by StartTimeout).
func StartTemporal(ctx context.Context, o Options) (t *Temporal, err error) {
	bin, err := o.tool("temporal")
	if err != nil {
		return nil, err
	}
	dir, temp, err := o.prepareDir("odaflow-temporal-")
	if err != nil {
		return nil, err
	}
	t = &Temporal{Namespace: "default", DataDir: dir, opts: o, temp: temp, bin: bin, name: "temporal"}
	t.sink = newLogSink(o.Logs, filepath.Join(dir, "logs"))
	defer func() {
		if err != nil {
			_ = t.Stop()
			t = nil
		}
	}()

	port, uiPort := o.TemporalPort, o.TemporalUIPort
	var zeros int
	for _, p := range []int{port, uiPort} {
		if p == 0 {
			zeros++
		}
	}
	free, err := freePorts(zeros)
	if err != nil {
		return t, fmt.Errorf("localstack: picking free ports: %w", err)
	}
	for _, p := range []*int{&port, &uiPort} {
		if *p == 0 {
			*p, free = free[0], free[1:]
		} else if err := portFree(*p); err != nil {
			return t, fmt.Errorf("localstack: port %d is not free (is another odaflow dev running?): %w", *p, err)
		}
	}
	t.Address = fmt.Sprintf("127.0.0.1:%d", port)
	t.UIAddress = fmt.Sprintf("http://127.0.0.1:%d", uiPort)

	args := []string{"server", "start-dev",
		"--ip", "127.0.0.1",
		"--port", fmt.Sprint(port),
		"--ui-port", fmt.Sprint(uiPort),
		"--log-level", "error",
	}
	if o.Persist {
		t.DBFile = filepath.Join(dir, "temporal.db")
		args = append(args, "--db-filename", t.DBFile,
			"--sqlite-pragma", "journal_mode=wal",
			"--sqlite-pragma", "synchronous=normal")
	}
	args = append(args, DevServerArgs(o.SearchAttributes)...)
	args = append(args, o.TemporalExtraArgs...)
	t.args = args

	ctx, cancel := context.WithTimeout(ctx, o.startTimeout())
	defer cancel()
	return t, t.start(ctx)
}

func (t *Temporal) start(ctx context.Context) error {
	started := time.Now()
	p, err := startProcess(t.name, t.bin, t.args, t.sink)
	if err != nil {
		return err
	}
	t.mu.Lock()
	t.proc = p
	t.mu.Unlock()
	if t.setup != nil {
		if err := t.setup(ctx, p); err != nil {
			return err
		}
	}
	if err := waitTemporal(ctx, p, t.clientOptions, t.Address, t.Namespace); err != nil {
		return err
	}
	// A persisted database keeps the namespace of an earlier run, whose search
	// attributes may be older than the ones asked for now: add what is missing.
	if err := t.ensureSearchAttributes(ctx); err != nil {
		return err
	}
	if t.sink.shared != nil {
		fmt.Fprintf(t.sink.shared, "localstack: %s ready in %s (%s, UI %s)\n",
			t.name, time.Since(started).Round(time.Millisecond), t.Address, t.UIAddress)
	}
	return nil
}

// Dial returns a client for the dev server's namespace (the caller closes it).
func (t *Temporal) Dial(ctx context.Context) (client.Client, error) {
	return client.DialContext(ctx, t.clientOptions(t.Namespace))
}

// clientOptions are the options of the harness's own clients.
func (t *Temporal) clientOptions(namespace string) client.Options {
	return client.Options{HostPort: t.Address, Namespace: namespace, Logger: quietLogger(), ConnectionOptions: t.conn}
}

// Stop stops the server (SIGTERM, then SIGKILL after a bounded wait) and
// removes a temporary DataDir.
func (t *Temporal) Stop() error {
	t.mu.Lock()
	if t.stopped {
		t.mu.Unlock()
		return nil
	}
	t.stopped = true
	p := t.proc
	t.mu.Unlock()
	err := p.stop(stopGrace)
	if t.temp {
		err = errors.Join(err, os.RemoveAll(t.DataDir))
	}
	return err
}

// Restart stops the server and starts it again on the same ports and the
// same database file (an in-memory server comes back empty).
func (t *Temporal) Restart(ctx context.Context) error {
	if err := t.StopServer(); err != nil {
		return err
	}
	return t.StartServer(ctx)
}

// StopServer stops the server process but keeps its ports and database
// file for StartServer: the fault tests keep Temporal down for a while.
func (t *Temporal) StopServer() error {
	t.mu.Lock()
	if t.stopped {
		t.mu.Unlock()
		return errors.New("localstack: temporal is stopped")
	}
	p := t.proc
	t.mu.Unlock()
	return p.stop(stopGrace)
}

// StartServer starts the server again after StopServer, on the same ports
// and database file.
func (t *Temporal) StartServer(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, t.opts.startTimeout())
	defer cancel()
	return t.start(ctx)
}

// Pid returns the server's process id, 0 when it is not running (tests).
func (t *Temporal) Pid() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return livePid(t.proc)
}

func waitTemporal(ctx context.Context, p *process, opts func(namespace string) client.Options, addr, namespace string) error {
	// Backoff from 50 ms to 1 s between attempts; each attempt is bounded.
	interval := 50 * time.Millisecond
	var last error
	for {
		if p.exited() {
			return p.diedError()
		}
		ok, err := temporalHealthy(ctx, opts, namespace)
		if ok {
			return nil
		}
		last = err
		timer := time.NewTimer(interval)
		select {
		case <-ctx.Done():
			timer.Stop()
			if p.exited() {
				return p.diedError()
			}
			return fmt.Errorf("temporal at %s: not ready: %v (last error: %v); last output:\n%s", addr, ctx.Err(), last, p.tail.lastLines(20))
		case <-p.done:
			timer.Stop()
		case <-timer.C:
		}
		interval = min(interval*2, time.Second)
	}
}

func temporalHealthy(ctx context.Context, opts func(namespace string) client.Options, namespace string) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	c, err := client.DialContext(ctx, opts(namespace))
	if err != nil {
		return false, err
	}
	defer c.Close()
	if _, err := c.CheckHealth(ctx, &client.CheckHealthRequest{}); err != nil {
		return false, err
	}
	nc, err := client.NewNamespaceClient(opts(""))
	if err != nil {
		return false, err
	}
	defer nc.Close()
	if _, err := nc.Describe(ctx, namespace); err != nil {
		return false, err
	}
	return true, nil
}

func (t *Temporal) ensureSearchAttributes(ctx context.Context) error {
	if len(t.opts.SearchAttributes) == 0 {
		return nil
	}
	c, err := t.Dial(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	op := c.OperatorService()
	have, err := op.ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: t.Namespace})
	if err != nil {
		return fmt.Errorf("temporal: list search attributes: %w", err)
	}
	missing := map[string]enums.IndexedValueType{}
	for _, name := range sortedKeys(t.opts.SearchAttributes) {
		if _, ok := have.GetCustomAttributes()[name]; ok {
			continue
		}
		typ, err := indexedValueType(t.opts.SearchAttributes[name])
		if err != nil {
			return fmt.Errorf("temporal: search attribute %s: %w", name, err)
		}
		missing[name] = typ
	}
	if len(missing) == 0 {
		return nil
	}
	_, err = op.AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{Namespace: t.Namespace, SearchAttributes: missing})
	if err != nil {
		return fmt.Errorf("temporal: add search attributes: %w", err)
	}
	return nil
}

func indexedValueType(s string) (enums.IndexedValueType, error) {
	for v, name := range enums.IndexedValueType_name {
		n := strings.TrimPrefix(name, "INDEXED_VALUE_TYPE_")
		if v != 0 && strings.EqualFold(strings.ReplaceAll(n, "_", ""), s) {
			return enums.IndexedValueType(v), nil
		}
	}
	return 0, fmt.Errorf("unknown type %q (Text, Keyword, Int, Double, Bool, Datetime, KeywordList)", s)
}

func quietLogger() sdklog.Logger {
	return sdklog.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
