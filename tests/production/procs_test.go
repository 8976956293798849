package production

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// proc is one odaflow process (`odaflow worker` or `odaflow watcher`).
type proc struct {
	// name is the watcher's identity in the Lease (ODAFLOW_IDENTITY) and the log
	// file's name.
	name string
	cmd  *exec.Cmd
	// httpAddr serves /readyz and /metrics.
	httpAddr string
	logPath  string
	done     chan struct{}
}

// starts numbers the processes so every one has its own name and log.
var starts int

// startProc starts `odaflow <role>` with the environment a Deployment
// gives it and waits for /readyz.
func startProc(ctx context.Context, role string) (*proc, error) {
	starts++
	p := &proc{name: fmt.Sprintf("%s-%d", role, starts), done: make(chan struct{})}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p.httpAddr = l.Addr().String()
	_ = l.Close()
	p.logPath = filepath.Join(env.logDir, p.name+".log")
	logf, err := os.Create(p.logPath)
	if err != nil {
		return nil, err
	}
	p.cmd = exec.Command(env.bin, role)
	p.cmd.Env = append(os.Environ(),
		"KUBECONFIG="+env.kube.KubeconfigPath,
		"ODAFLOW_TEMPORAL_ADDRESS="+env.temporal.Address,
		"ODAFLOW_TASK_QUEUE="+taskQueue,
		"ODAFLOW_NAMESPACES=prod-*",
		"ODAFLOW_HTTP_ADDRESS="+p.httpAddr,
		"ODAFLOW_LOG_LEVEL=info",
		// Both watchers run, one acts: the other stands by for the Lease.
		"ODAFLOW_LEADER_ELECT=true",
		"ODAFLOW_LEADER_ELECTION_ID="+leaseName,
		"ODAFLOW_LEADER_ELECTION_NAMESPACE="+systemNamespace,
		"ODAFLOW_IDENTITY="+p.name,
		"ODAFLOW_KEYCLOAK_URL="+env.keycloak.URL(),
		"ODAFLOW_KEYCLOAK_REALM="+keycloakRealm,
		"ODAFLOW_KEYCLOAK_ADMIN_SECRET="+systemNamespace+"/"+keycloakAdminSecret,
	)
	p.cmd.Stdout, p.cmd.Stderr = logf, logf
	// Killed with the test binary, so a crashed run leaves nothing behind.
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		_ = logf.Close()
		return nil, fmt.Errorf("start %s: %w", p.name, err)
	}
	go func() {
		_ = p.cmd.Wait()
		_ = logf.Close()
		close(p.done)
	}()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if !p.alive() {
			return nil, fmt.Errorf("%s exited during start-up; see %s:\n%s", p.name, p.logPath, p.tail())
		}
		if resp, err := http.Get("http://" + p.httpAddr + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p, nil
			}
		}
		select {
		case <-ctx.Done():
			p.kill()
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	p.kill()
	return nil, fmt.Errorf("%s not ready after a minute; see %s:\n%s", p.name, p.logPath, p.tail())
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

func (p *proc) alive() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// kill is SIGKILL: no shutdown hook runs, as when a node dies.
func (p *proc) kill() {
	_ = p.cmd.Process.Kill()
	<-p.done
}

// stop is SIGTERM, then SIGKILL after 30 s.
func (p *proc) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		p.kill()
	}
}

// tail is the end of the process's log, for failure messages.
func (p *proc) tail() string {
	b, _ := os.ReadFile(p.logPath)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > 30 {
		lines = lines[len(lines)-30:]
	}
	return strings.Join(lines, "\n")
}

// ensureProcesses starts a worker or watcher in every empty or dead slot
// (what a Deployment's controller does), so each test begins with two of
// each. The dead ones are reported.
func ensureProcesses(ctx context.Context) error {
	var errs []error
	for _, slots := range []struct {
		role  string
		procs *[2]*proc
	}{{"worker", &env.workers}, {"watcher", &env.watchers}} {
		for i, p := range slots.procs {
			if p != nil && p.alive() {
				continue
			}
			if p != nil {
				fmt.Fprintf(os.Stderr, "production: %s had exited (%v); starting a new %s\n", p.name, p.cmd.ProcessState, slots.role)
			}
			np, err := startProc(ctx, slots.role)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			slots.procs[i] = np
		}
	}
	return errors.Join(errs...)
}

func stopProcesses() {
	for _, p := range append(env.watchers[:], env.workers[:]...) {
		if p != nil {
			p.stop()
		}
	}
}

// byPid finds the worker with this process id.
func workerByPid(pid int) *proc {
	for _, p := range env.workers {
		if p != nil && p.pid() == pid {
			return p
		}
	}
	return nil
}

// watcherByName finds the watcher with this Lease identity.
func watcherByName(name string) *proc {
	for _, p := range env.watchers {
		if p != nil && p.name == name {
			return p
		}
	}
	return nil
}
