package localstack

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/types/known/durationpb"
)

// TemporalServerNames are the files a temporal-server folder must hold
// (hack/tools.sh temporal-server builds them and copies the schemas).
var TemporalServerNames = []string{"temporal-server", "temporal-sql-tool", "schema/postgresql/v12/temporal/versioned", "schema/postgresql/v12/visibility/versioned"}

// TemporalServerOptions configures StartTemporalServer.
type TemporalServerOptions struct {
	// Dir holds temporal-server, temporal-sql-tool and schema/ (see
	// FindTemporalServer).
	Dir string
	// Postgres is the database server; its databases "temporal" and
	// "temporal_visibility" are created and migrated on the first start.
	Postgres *Postgres
	// Logs receives the server's output, each line prefixed with
	// "[temporal-server] "; nil = a file under DataDir/logs.
	Logs io.Writer
	// SearchAttributes maps name -> type, added to namespace "default".
	SearchAttributes map[string]string
	// StartTimeout bounds each start (and restart); default 2m.
	StartTimeout time.Duration
	// TLS, when set, serves the frontend over TLS and requires a client
	// certificate signed by TLS.ClientCAFile.
	TLS *TemporalServerTLS
}

// TemporalServerTLS is the frontend's TLS. The server reads its files again
// every RefreshInterval; the harness (and the server's own system worker)
// connect with ClientCertFile.
type TemporalServerTLS struct {
	// CertFile and KeyFile are the frontend's certificate, for ServerName.
	CertFile, KeyFile string
	ServerName        string
	// CAFile verifies CertFile, for the clients.
	CAFile string
	// ClientCAFile holds the CAs a client certificate must be signed by.
	ClientCAFile string
	// ClientCertFile and ClientKeyFile are the harness's own client
	// certificate, signed by a CA of ClientCAFile.
	ClientCertFile, ClientKeyFile string
}

// clientTLS is the harness's connection to a TLS frontend.
func (o *TemporalServerTLS) clientTLS() (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(o.ClientCertFile, o.ClientKeyFile)
	if err != nil {
		return nil, fmt.Errorf("localstack: temporal-server client certificate: %w", err)
	}
	ca, err := os.ReadFile(o.CAFile)
	if err != nil {
		return nil, fmt.Errorf("localstack: temporal-server CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return nil, fmt.Errorf("localstack: no certificate in %s", o.CAFile)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: pool, ServerName: o.ServerName, MinVersion: tls.VersionTLS12}, nil
}

// yaml is the server config's global.tls section.
func (o *TemporalServerTLS) yaml() string {
	client := fmt.Sprintf("      client:\n        serverName: %q\n        rootCaFiles: [%q]\n", o.ServerName, o.CAFile)
	return fmt.Sprintf(`  tls:
    refreshInterval: 1s
    frontend:
      server:
        certFile: %q
        keyFile: %q
        requireClientAuth: true
        clientCaFiles: [%q]
%s    systemWorker:
      certFile: %q
      keyFile: %q
%s`, o.CertFile, o.KeyFile, o.ClientCAFile, client, o.ClientCertFile, o.ClientKeyFile, client)
}

// StartTemporalOnPostgres starts PostgreSQL (Debian's, from pgBin) and
// temporal-server (from serverDir) on it: Temporal as production runs it.
// Both write to logs. Stop Temporal before PostgreSQL: its connections would
// hold up PostgreSQL's shutdown.
func StartTemporalOnPostgres(ctx context.Context, serverDir, pgBin string, logs io.Writer, searchAttributes map[string]string) (*Postgres, *Temporal, error) {
	pg, err := StartPostgres(ctx, PostgresOptions{BinDir: pgBin, Logs: logs})
	if err != nil {
		return nil, nil, fmt.Errorf("start postgres: %w", err)
	}
	t, err := StartTemporalServer(ctx, TemporalServerOptions{Dir: serverDir, Postgres: pg, Logs: logs, SearchAttributes: searchAttributes})
	if err != nil {
		_ = pg.Stop()
		return nil, nil, fmt.Errorf("start temporal-server: %w", err)
	}
	return pg, t, nil
}

// FindTemporalServer resolves the folder of the production Temporal server:
// $ODAFLOW_TEMPORAL_SERVER_DIR, else <repo root>/bin/temporal-server. It
// never builds (a cold build takes 5-20 minutes): run
// `hack/tools.sh temporal-server` or `make tools`.
func FindTemporalServer() (string, error) {
	dir := os.Getenv("ODAFLOW_TEMPORAL_SERVER_DIR")
	if dir == "" {
		root, err := RepoRoot()
		if err != nil {
			return "", fmt.Errorf("localstack: temporal-server not found: set ODAFLOW_TEMPORAL_SERVER_DIR or run inside the odaflow repository: %w", err)
		}
		dir = filepath.Join(root, "bin", "temporal-server")
	}
	var missing []string
	for _, n := range TemporalServerNames {
		if _, err := os.Stat(filepath.Join(dir, n)); err != nil {
			missing = append(missing, n)
		}
	}
	if len(missing) > 0 {
		return "", fmt.Errorf("localstack: %s lacks %s (run hack/tools.sh temporal-server)", dir, strings.Join(missing, ", "))
	}
	return filepath.Abs(dir)
}

// StartTemporalServer runs the Temporal server binary (all four services in
// one process, as a small production install does) on PostgreSQL: it
// creates and migrates the main and visibility databases with
// temporal-sql-tool and the server's own schema files, writes a config on
// free loopback ports, starts the server, registers namespace "default" and
// the search attributes. The returned Temporal has no Web UI (UIAddress is
// empty); Restart keeps the database, Stop leaves Postgres running.
func StartTemporalServer(ctx context.Context, o TemporalServerOptions) (t *Temporal, err error) {
	if o.Postgres == nil {
		return nil, errors.New("localstack: StartTemporalServer needs a Postgres")
	}
	dir, err := os.MkdirTemp("", "odaflow-temporal-server-")
	if err != nil {
		return nil, err
	}
	t = &Temporal{Namespace: "default", DataDir: dir, temp: true, name: "temporal-server",
		bin:  filepath.Join(o.Dir, "temporal-server"),
		opts: Options{SearchAttributes: o.SearchAttributes, StartTimeout: o.StartTimeout}}
	t.sink = newLogSink(o.Logs, filepath.Join(dir, "logs"))
	defer func() {
		if err != nil {
			_ = t.Stop()
			t = nil
		}
	}()
	sctx, cancel := context.WithTimeout(ctx, t.opts.startTimeout())
	defer cancel()
	for _, db := range []struct{ name, schema string }{
		{"temporal", "temporal"},
		{"temporal_visibility", "visibility"},
	} {
		if err := setupSchema(sctx, o, db.name, filepath.Join(o.Dir, "schema", "postgresql", "v12", db.schema, "versioned")); err != nil {
			return t, err
		}
	}
	// 4 services x (gRPC + membership) + the frontend's HTTP port.
	ports, err := freePorts(9)
	if err != nil {
		return t, fmt.Errorf("localstack: picking free ports: %w", err)
	}
	// The SQL schema stores membership ports as smallint, which the
	// ports freePorts picks (below 32768) fit.
	t.Address = fmt.Sprintf("127.0.0.1:%d", ports[0])
	cfgFile, dcFile := filepath.Join(dir, "config.yaml"), filepath.Join(dir, "dynamicconfig.yaml")
	if err := os.WriteFile(dcFile, []byte(serverDynamicConfig()), 0o644); err != nil {
		return t, err
	}
	tlsSection := ""
	if o.TLS != nil {
		tc, err := o.TLS.clientTLS()
		if err != nil {
			return t, err
		}
		t.conn.TLS = tc
		tlsSection = o.TLS.yaml()
	}
	if err := os.WriteFile(cfgFile, []byte(serverConfig(o.Postgres, ports, dcFile, tlsSection)), 0o644); err != nil {
		return t, err
	}
	// No authorizer: the server listens on loopback only.
	t.args = []string{"--config-file", cfgFile, "--allow-no-auth", "start"}
	t.setup = func(ctx context.Context, p *process) error {
		return registerNamespace(ctx, p, t.clientOptions, t.Namespace)
	}
	return t, t.start(sctx)
}

// setupSchema creates a database and brings it to the newest schema
// version; on an existing database both steps are no-ops.
func setupSchema(ctx context.Context, o TemporalServerOptions, db, versioned string) error {
	tool := filepath.Join(o.Dir, "temporal-sql-tool")
	base := []string{"--ep", o.Postgres.Host, "-p", strconv.Itoa(o.Postgres.Port), "-u", o.Postgres.User, "--pl", "postgres12", "--db", db}
	steps := [][]string{
		{"create-database", "--defaultdb", "postgres"},
		{"setup-schema", "-v", "0.0"},
		{"update-schema", "-d", versioned},
	}
	for _, step := range steps {
		out, err := exec.CommandContext(ctx, tool, append(append([]string{}, base...), step...)...).CombinedOutput()
		if err != nil && !(step[0] == "create-database" && strings.Contains(string(out), "already exists")) {
			return fmt.Errorf("localstack: temporal-sql-tool %s on %s: %w\n%s", step[0], db, err, lastLines(out, 20))
		}
	}
	return nil
}

// registerNamespace waits for the frontend and registers the namespace
// when it is missing (the production server, unlike the dev server,
// starts with none).
func registerNamespace(ctx context.Context, p *process, opts func(namespace string) client.Options, namespace string) error {
	return pollUntil(ctx, "temporal-server namespace "+namespace, 200*time.Millisecond, p, func(ctx context.Context) (bool, error) {
		nc, err := client.NewNamespaceClient(opts(""))
		if err != nil {
			return false, err
		}
		defer nc.Close()
		if _, err := nc.Describe(ctx, namespace); err != nil {
			err = nc.Register(ctx, &workflowservice.RegisterNamespaceRequest{
				Namespace:                        namespace,
				WorkflowExecutionRetentionPeriod: durationpb.New(24 * time.Hour),
			})
			var exists *serviceerror.NamespaceAlreadyExists
			if err != nil && !errors.As(err, &exists) {
				return false, err
			}
		}
		// A new namespace reaches the services' caches a refresh later;
		// until then calls that name it fail with NotFound.
		c, err := client.DialContext(ctx, opts(namespace))
		if err != nil {
			return false, err
		}
		defer c.Close()
		if _, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: namespace}); err != nil {
			return false, fmt.Errorf("namespace %s not served yet: %w", namespace, err)
		}
		return true, nil
	})
}

// serverConfig is the server's static config: PostgreSQL for both stores,
// every service bound to loopback on the given ports (frontend gRPC first).
func serverConfig(pg *Postgres, ports []int, dynamicConfigFile, tlsSection string) string {
	store := func(db string, conns int) string {
		return fmt.Sprintf(`      sql:
        pluginName: postgres12
        databaseName: %s
        connectAddr: "%s"
        connectProtocol: tcp
        user: %s
        maxConns: %d
        maxIdleConns: %d
        maxConnLifetime: 1h
`, db, pg.Address(), pg.User, conns, conns)
	}
	service := func(grpc, membership int, extra string) string {
		return fmt.Sprintf("    rpc:\n      grpcPort: %d\n      membershipPort: %d\n      bindOnIP: 127.0.0.1\n%s", grpc, membership, extra)
	}
	return `log:
  stdout: true
  level: warn
persistence:
  defaultStore: default
  visibilityStore: visibility
  numHistoryShards: 4
  datastores:
    default:
` + store("temporal", 20) + `    visibility:
` + store("temporal_visibility", 10) + `global:
  membership:
    maxJoinDuration: 30s
    broadcastAddress: 127.0.0.1
` + tlsSection + `services:
  frontend:
` + service(ports[0], ports[1], fmt.Sprintf("      httpPort: %d\n", ports[8])) + `  history:
` + service(ports[2], ports[3], "") + `  matching:
` + service(ports[4], ports[5], "") + `  worker:
` + service(ports[6], ports[7], "") + `clusterMetadata:
  enableGlobalNamespace: false
  failoverVersionIncrement: 10
  masterClusterName: active
  currentClusterName: active
  clusterInformation:
    active:
      enabled: true
      initialFailoverVersion: 1
      rpcName: frontend
      rpcAddress: "127.0.0.1:` + strconv.Itoa(ports[0]) + `"
dcRedirectionPolicy:
  policy: noop
dynamicConfigClient:
  filepath: "` + dynamicConfigFile + `"
  pollInterval: 10s
`
}

// serverDynamicConfig removes the history service's 50 ms task-queue poll
// floor as the dev server's flags do (fastPollDynamicConfig), makes a newly
// added search attribute usable at once, and refreshes the namespace cache
// every second so a namespace registered at start-up serves right away.
// It also turns on what production should run with (README, "Temporal
// server settings"): a stopping worker's outstanding polls are cancelled
// by the server, so no task is handed to a worker that is going away (the
// dev server, 1.29, lacks the setting; the worker's liveness heartbeats
// bound the stall there).
func serverDynamicConfig() string {
	var b strings.Builder
	for _, kv := range fastPollDynamicConfig {
		k, v, _ := strings.Cut(kv, "=")
		fmt.Fprintf(&b, "%s:\n  - value: %s\n", k, v)
	}
	b.WriteString("system.forceSearchAttributesCacheRefreshOnRead:\n  - value: true\n")
	b.WriteString("system.namespaceCacheRefreshInterval:\n  - value: 1s\n")
	b.WriteString("frontend.enableCancelWorkerPollsOnShutdown:\n  - value: true\n")
	return b.String()
}

func lastLines(b []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
