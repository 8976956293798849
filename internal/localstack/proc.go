package localstack

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// stopGrace is how long a process gets between SIGTERM and SIGKILL.
const stopGrace = 15 * time.Second

// tailSize is how much of a process's recent output is kept for error messages.
const tailSize = 16 << 10

// process is one child server (etcd, kube-apiserver, ...), started in its own
// process group so that Stop can signal the whole group.
type process struct {
	name string
	path string
	args []string

	cmd     *exec.Cmd
	logFile *os.File
	tail    *tailBuffer
	done    chan struct{} // closed when the process has exited and been reaped
	waitErr error         // valid after done is closed
}

// logSink decides where process output goes: a shared writer (every line
// prefixed with the process name) or one file per process under logDir.
type logSink struct {
	shared io.Writer // nil = files
	logDir string
}

func newLogSink(w io.Writer, logDir string) *logSink {
	if w != nil {
		return &logSink{shared: &lockedWriter{w: w}}
	}
	return &logSink{logDir: logDir}
}

// startProcess launches path with args. The caller's context deliberately
// does not own the process: cancelling a start-up context must not leave a
// half-killed server behind, Stop does the killing.
func startProcess(name, path string, args []string, sink *logSink) (*process, error) {
	return startProcessWith(name, path, args, os.Environ(), nil, sink)
}

// startProcessWith is startProcess with the child's whole environment given
// (nil inherits nothing) and an optional filter every byte of its output
// passes through before it reaches the log or the error-message tail (the
// Vault dev server prints its root token and unseal key).
func startProcessWith(name, path string, args, env []string, filter func(io.Writer) io.Writer, sink *logSink) (*process, error) {
	return startProcessAttr(name, path, args, env, filter, sysProcAttr(), sink)
}

// startProcessAs is startProcessWith as another user (cred nil = this
// process's user): PostgreSQL refuses to run as root.
func startProcessAs(name, path string, args, env []string, cred *syscall.Credential, sink *logSink) (*process, error) {
	return startProcessAttr(name, path, args, env, nil, sysProcAttrAs(cred), sink)
}

func startProcessAttr(name, path string, args, env []string, filter func(io.Writer) io.Writer, attr *syscall.SysProcAttr, sink *logSink) (*process, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("%s: binary not found: %w", name, err)
	}
	p := &process{name: name, path: path, args: args, tail: &tailBuffer{max: tailSize}}
	var out io.Writer
	if sink.shared != nil {
		out = io.MultiWriter(&prefixWriter{prefix: "[" + name + "] ", w: sink.shared}, p.tail)
	} else {
		if err := os.MkdirAll(sink.logDir, 0o755); err != nil {
			return nil, err
		}
		f, err := os.OpenFile(filepath.Join(sink.logDir, name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(f, "==== %s %s started at %s\n", name, strings.Join(args, " "), time.Now().Format(time.RFC3339))
		p.logFile = f
		out = io.MultiWriter(f, p.tail)
	}
	if filter != nil {
		out = filter(out)
	}
	cmd := exec.Command(path, args...)
	cmd.Stdout = out
	cmd.Stderr = out
	cmd.Env = env
	cmd.SysProcAttr = attr
	// Bound the wait for the output pipes once the process is gone.
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		p.closeLog()
		return nil, fmt.Errorf("%s: start: %w", name, err)
	}
	p.cmd = cmd
	p.done = make(chan struct{})
	go func() {
		p.waitErr = cmd.Wait()
		p.closeLog()
		close(p.done)
	}()
	return p, nil
}

func (p *process) closeLog() {
	if p.logFile != nil {
		_ = p.logFile.Close()
	}
}

// Pid returns the process id (also the process group id).
func (p *process) Pid() int { return p.cmd.Process.Pid }

// livePid is p's process id while it runs, 0 when there is none or it
// has exited.
func livePid(p *process) int {
	if p == nil || p.exited() {
		return 0
	}
	return p.Pid()
}

// exited reports whether the process has terminated.
func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// diedError describes a process that exited while it was expected to run.
func (p *process) diedError() error {
	return fmt.Errorf("%s exited during start-up (%v); last output:\n%s", p.name, p.waitErr, p.tail.lastLines(40))
}

// stop sends SIGTERM to the process group, waits up to grace, then SIGKILLs
// the group. It is safe to call more than once and on an exited process.
func (p *process) stop(grace time.Duration) error {
	if p == nil || p.cmd == nil {
		return nil
	}
	pgid := p.cmd.Process.Pid
	if !p.exited() {
		_ = syscall.Kill(-pgid, syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(grace):
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			select {
			case <-p.done:
			case <-time.After(10 * time.Second):
				return fmt.Errorf("%s (pid %d) did not exit after SIGKILL", p.name, pgid)
			}
		}
	}
	// Leftover children of the group (none expected): make sure they go too.
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	return nil
}

// freePort is one port of freePorts.
func freePort() (int, error) {
	ports, err := freePorts(1)
	if err != nil {
		return 0, err
	}
	return ports[0], nil
}

// freePorts returns n distinct ports between 20000 and 32767 that can be
// bound on loopback now, tried in random order. A server is started on
// them moments later, so they come from below the kernel's ephemeral range
// (32768 and up): a port from that range, free when picked, can be taken
// meanwhile by any outgoing connection of a process running alongside
// (the test packages run in parallel), and the server then fails to bind.
func freePorts(n int) ([]int, error) {
	var ports []int
	if n == 0 {
		return nil, nil
	}
	for _, p := range rand.Perm(32767 - 20000) {
		port := 20000 + p
		if portFree(port) == nil {
			ports = append(ports, port)
			if len(ports) == n {
				return ports, nil
			}
		}
	}
	return nil, errors.New("no free ports between 20000 and 32767")
}

// portFree reports whether 127.0.0.1:port can be bound right now.
func portFree(port int) error {
	l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		return err
	}
	return l.Close()
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tailBuffer) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, b...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(b), nil
}

func (t *tailBuffer) lastLines(n int) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := strings.TrimRight(string(t.buf), "\n")
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	if s == "" {
		return "  (no output)"
	}
	return "  " + strings.Join(lines, "\n  ")
}

// lockedWriter serialises writes from several processes to one writer.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// prefixWriter writes complete lines, each prefixed, to w (one Write per line
// so that lines of different processes do not interleave).
type prefixWriter struct {
	mu     sync.Mutex
	prefix string
	w      io.Writer
	buf    []byte
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.buf = append(p.buf, b...)
	for {
		i := bytes.IndexByte(p.buf, '\n')
		if i < 0 {
			break
		}
		line := make([]byte, 0, len(p.prefix)+i+1)
		line = append(line, p.prefix...)
		line = append(line, p.buf[:i+1]...)
		p.buf = p.buf[i+1:]
		if _, err := p.w.Write(line); err != nil {
			return len(b), err
		}
	}
	// A very long unterminated line is flushed as is.
	if len(p.buf) > 64<<10 {
		_, _ = p.w.Write(append([]byte(p.prefix), append(p.buf, '\n')...))
		p.buf = p.buf[:0]
	}
	return len(b), nil
}

// stopAll stops processes in order and joins the errors.
func stopAll(procs ...*process) error {
	var errs []error
	for _, p := range procs {
		if err := p.stop(stopGrace); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
