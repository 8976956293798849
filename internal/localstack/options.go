// Package localstack runs a local control plane for odaflow: a real etcd,
// kube-apiserver and kube-controller-manager (garbage collector and
// namespace controller), and the Temporal dev server, all as child processes
// built by hack/tools.sh. It serves the integration tests (free ports,
// throw-away state) and `odaflow dev` (fixed ports, state kept between runs).
//
// No controller-runtime/envtest: the processes are started with os/exec in
// their own process groups and stopped with SIGTERM, then SIGKILL.
package localstack

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

// Options for a local control plane.
type Options struct {
	// ToolsDir is the folder with etcd, kube-apiserver, kube-controller-manager
	// and temporal (see FindTools).
	ToolsDir string
	// DataDir holds the state; empty = a temp dir removed on Stop.
	DataDir string
	// Persist keeps etcd data and the Temporal sqlite file between runs (make
	// dev). It requires DataDir. Without it etcd data is wiped on start and on
	// Stop and Temporal runs in memory.
	Persist bool
	// Logs receives process output, each line prefixed with "[name] ".
	// nil = one file per process under DataDir/logs.
	Logs io.Writer
	// KubePort and EtcdPort: 0 = free ports (tests); make dev uses 6443 and
	// 2379. etcd's peer port is EtcdPort+1 when EtcdPort is fixed.
	KubePort, EtcdPort int
	// TemporalPort and TemporalUIPort: 0 = free ports; make dev uses 7233 and 8233.
	TemporalPort, TemporalUIPort int
	// SearchAttributes maps name -> type (Keyword, Text, Int, Double, Bool,
	// Datetime, KeywordList), registered on the dev server.
	SearchAttributes map[string]string
	// TemporalExtraArgs are appended to `temporal server start-dev`.
	TemporalExtraArgs []string
	// KubeAPIServerExtraArgs are appended to kube-apiserver's flags, e.g.
	// --enable-aggregator-routing=true, with which the apiserver calls a
	// webhook Service at its endpoints' addresses instead of its ClusterIP
	// (no kube-proxy runs here to route a ClusterIP).
	KubeAPIServerExtraArgs []string
	// CRDDir, if set, is installed by StartKube (see InstallCRDs) before
	// kube-controller-manager starts. The garbage collector rediscovers
	// resource types only every 30 s, so objects owned by (or owning) a custom
	// resource whose CRD appears later may be collected up to ~30 s late
	// (measured: 9.9 s for a CRD installed 20 s after start).
	CRDDir string
	// StartTimeout bounds each start (and restart); default 2m.
	StartTimeout time.Duration
}

const defaultStartTimeout = 2 * time.Minute

func (o Options) startTimeout() time.Duration {
	if o.StartTimeout > 0 {
		return o.StartTimeout
	}
	return defaultStartTimeout
}

// prepareDir resolves the data directory. temp reports a directory created
// here, to be removed on Stop.
func (o Options) prepareDir(prefix string) (dir string, temp bool, err error) {
	if o.ToolsDir == "" {
		return "", false, errors.New("localstack: Options.ToolsDir is empty (see FindTools)")
	}
	if o.DataDir == "" {
		if o.Persist {
			return "", false, errors.New("localstack: Persist needs a DataDir")
		}
		d, err := os.MkdirTemp("", prefix)
		if err != nil {
			return "", false, err
		}
		return d, true, nil
	}
	d, err := filepath.Abs(o.DataDir)
	if err != nil {
		return "", false, err
	}
	if err := os.MkdirAll(d, 0o755); err != nil {
		return "", false, err
	}
	return d, false, nil
}

func (o Options) tool(name string) (string, error) {
	p := filepath.Join(o.ToolsDir, name)
	st, err := os.Stat(p)
	if err != nil {
		return "", fmt.Errorf("localstack: %s not found in %s (run hack/tools.sh): %w", name, o.ToolsDir, err)
	}
	if st.IsDir() || st.Mode()&0o111 == 0 {
		return "", fmt.Errorf("localstack: %s is not an executable file", p)
	}
	return p, nil
}

// pollUntil calls check every interval until it reports done, the process p
// (if any) exits, or ctx ends. The error names what was awaited, the last
// check error and, for a dead process, the tail of its output.
func pollUntil(ctx context.Context, what string, interval time.Duration, p *process, check func(context.Context) (bool, error)) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	var last error
	for {
		if p != nil && p.exited() {
			return p.diedError()
		}
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		ok, err := check(cctx)
		cancel()
		if ok {
			return nil
		}
		if err != nil {
			last = err
		}
		select {
		case <-ctx.Done():
			msg := fmt.Sprintf("%s: not ready: %v", what, ctx.Err())
			if last != nil {
				msg += fmt.Sprintf(" (last error: %v)", last)
			}
			if p != nil {
				if p.exited() {
					return p.diedError()
				}
				msg += "; last output of " + p.name + ":\n" + p.tail.lastLines(20)
			}
			return errors.New(msg)
		case <-t.C:
		case <-doneOrNil(p):
		}
	}
}

func doneOrNil(p *process) <-chan struct{} {
	if p == nil {
		return nil
	}
	return p.done
}
