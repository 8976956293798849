package localstack

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// PostgresOptions configures StartPostgres.
type PostgresOptions struct {
	// BinDir holds initdb, postgres and pg_isready; empty = FindPostgres.
	BinDir string
	// Logs receives the server's output, each line prefixed with
	// "[postgres] "; nil = a file under the data folder's logs/.
	Logs io.Writer
	// StartTimeout bounds initdb plus start-up; default 2m.
	StartTimeout time.Duration
}

// Postgres is a running PostgreSQL server on 127.0.0.1 with a throw-away
// data folder. Its superuser is "postgres" and it trusts every local
// connection: it only listens on loopback and on a socket in its own folder.
type Postgres struct {
	Host string
	Port int
	// User is the superuser clients connect as (no password: trust auth).
	User string
	// Dir holds data/, the socket and logs/; removed by Stop.
	Dir string

	bin  string
	sink *logSink

	mu      sync.Mutex
	proc    *process
	stopped bool
}

// FindPostgres returns the bin folder of Debian's newest installed
// PostgreSQL (/usr/lib/postgresql/<major>/bin), or $ODAFLOW_POSTGRES_BIN.
// hack/tools.sh postgres installs the package when none is there.
func FindPostgres() (string, error) {
	if dir := os.Getenv("ODAFLOW_POSTGRES_BIN"); dir != "" {
		if _, err := os.Stat(filepath.Join(dir, "postgres")); err != nil {
			return "", fmt.Errorf("localstack: ODAFLOW_POSTGRES_BIN=%s: %w", dir, err)
		}
		return dir, nil
	}
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/postgres")
	if len(matches) == 0 {
		return "", errors.New("localstack: no PostgreSQL in /usr/lib/postgresql (run hack/tools.sh postgres)")
	}
	// Newest major version first: compare the folder names as numbers.
	sort.Slice(matches, func(i, j int) bool { return pgMajor(matches[i]) > pgMajor(matches[j]) })
	return filepath.Dir(matches[0]), nil
}

func pgMajor(postgresPath string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(postgresPath))))
	return n
}

// StartPostgres runs initdb in a new temp folder and starts postgres on a
// free loopback port, returning once it accepts connections. PostgreSQL
// refuses to run as root, so as root both run as the "postgres" system user
// (the Debian package creates it).
func StartPostgres(ctx context.Context, o PostgresOptions) (pg *Postgres, err error) {
	if o.BinDir == "" {
		if o.BinDir, err = FindPostgres(); err != nil {
			return nil, err
		}
	}
	cred, err := postgresCredential()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "odaflow-postgres-")
	if err != nil {
		return nil, err
	}
	pg = &Postgres{Host: "127.0.0.1", User: "postgres", Dir: dir, bin: o.BinDir}
	pg.sink = newLogSink(o.Logs, filepath.Join(dir, "logs"))
	defer func() {
		if err != nil {
			_ = pg.Stop()
			pg = nil
		}
	}()
	// The server user must reach its data folder: MkdirTemp makes it 0700
	// for root.
	if err := os.Chmod(dir, 0o755); err != nil {
		return pg, err
	}
	data, sock := filepath.Join(dir, "data"), filepath.Join(dir, "run")
	for _, d := range []string{data, sock} {
		if err := os.Mkdir(d, 0o700); err != nil {
			return pg, err
		}
		if cred != nil {
			if err := os.Chown(d, int(cred.Uid), int(cred.Gid)); err != nil {
				return pg, fmt.Errorf("localstack: chown %s to the postgres user: %w", d, err)
			}
		}
	}
	ctx, cancel := context.WithTimeout(ctx, startTimeoutOr(o.StartTimeout))
	defer cancel()

	// --no-sync and fsync=off: the data folder is thrown away after the
	// test, so durability against a machine crash buys nothing here, and on
	// this disk each fsync costs about 6 ms. Temporal's own writes and
	// reads are unchanged.
	initdb := exec.CommandContext(ctx, filepath.Join(o.BinDir, "initdb"),
		"-D", data, "-U", "postgres", "--auth=trust", "--no-sync", "-E", "UTF8", "--locale=C")
	initdb.SysProcAttr = sysProcAttrAs(cred)
	initdb.Env = []string{"PATH=" + o.BinDir + ":/usr/bin:/bin", "LC_ALL=C"}
	if out, err := initdb.CombinedOutput(); err != nil {
		return pg, fmt.Errorf("localstack: initdb: %w\n%s", err, out)
	}
	if pg.Port, err = freePort(); err != nil {
		return pg, fmt.Errorf("localstack: picking a free port for postgres: %w", err)
	}
	args := []string{"-D", data, "-h", pg.Host, "-p", strconv.Itoa(pg.Port), "-k", sock,
		"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
		// Temporal's services each keep a pool of connections.
		"-c", "max_connections=300",
	}
	p, err := startProcessAs("postgres", filepath.Join(o.BinDir, "postgres"), args,
		[]string{"LC_ALL=C"}, cred, pg.sink)
	if err != nil {
		return pg, err
	}
	pg.mu.Lock()
	pg.proc = p
	pg.mu.Unlock()
	isready := filepath.Join(o.BinDir, "pg_isready")
	return pg, pollUntil(ctx, "postgres", 100*time.Millisecond, p, func(ctx context.Context) (bool, error) {
		out, err := exec.CommandContext(ctx, isready, "-h", pg.Host, "-p", strconv.Itoa(pg.Port), "-U", pg.User, "-d", "postgres").CombinedOutput()
		if err != nil {
			return false, fmt.Errorf("pg_isready: %v: %s", err, strings.TrimSpace(string(out)))
		}
		return true, nil
	})
}

// Pid is the postmaster's process id (0 when stopped); each client
// connection is served by a child of it.
func (pg *Postgres) Pid() int {
	pg.mu.Lock()
	defer pg.mu.Unlock()
	return livePid(pg.proc)
}

// Address is host:port.
func (pg *Postgres) Address() string { return fmt.Sprintf("%s:%d", pg.Host, pg.Port) }

// Stop stops the server (SIGTERM: a "smart" shutdown that is immediate
// once its clients are gone, SIGKILL after a bounded wait) and removes its
// folder. Stop Temporal first.
func (pg *Postgres) Stop() error {
	pg.mu.Lock()
	if pg.stopped {
		pg.mu.Unlock()
		return nil
	}
	pg.stopped = true
	p := pg.proc
	pg.mu.Unlock()
	var err error
	if p != nil {
		err = p.stop(stopGrace)
	}
	return errors.Join(err, os.RemoveAll(pg.Dir))
}

// postgresCredential is the "postgres" user when running as root (nil
// otherwise: the server then runs as the current user).
func postgresCredential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("localstack: running as root, PostgreSQL needs the postgres user (apt-get install postgresql creates it): %w", err)
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return nil, err
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return nil, err
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

func startTimeoutOr(d time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return defaultStartTimeout
}
