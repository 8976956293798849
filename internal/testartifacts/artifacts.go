// Package testartifacts collects what a test run leaves behind for the
// secrets scan (`make test` → hack/secretscan): the secret values the tests
// used, in a ledger, and every workflow history the tests' Temporal servers
// recorded. Everything goes under the folder named by ODAFLOW_TEST_ARTIFACTS;
// without it (a developer's single `go test`) the functions do nothing, so
// the scan is a property of the whole run, checked once at its end.
package testartifacts

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/temporalproto"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	corev1 "k8s.io/api/core/v1"
)

// EnvDir names the artifacts folder.
const EnvDir = "ODAFLOW_TEST_ARTIFACTS"

// LedgerFile is the ledger's name inside the folder: one JSON Entry per line.
const LedgerFile = "secrets.jsonl"

// HistoriesDir holds the dumped histories, one folder per test package.
const HistoriesDir = "histories"

// LogsDir holds the logs of servers and processes the tests started.
const LogsDir = "logs"

// MinSecretLength is the shortest value worth scanning for: shorter ones
// ("admin", "true") would match by accident and prove nothing.
const MinSecretLength = 8

// Entry is one secret value a test used.
type Entry struct {
	Label string `json:"label"`
	Value string `json:"value"`
}

// Dir is the artifacts folder, or "" when the run does not collect them.
func Dir() string { return os.Getenv(EnvDir) }

// Subdir returns (creating it) a folder under the artifacts folder, or ""
// when the run does not collect artifacts.
func Subdir(parts ...string) (string, error) {
	root := Dir()
	if root == "" {
		return "", nil
	}
	d := filepath.Join(append([]string{root}, parts...)...)
	if err := os.MkdirAll(d, 0o755); err != nil {
		return "", fmt.Errorf("artifacts folder: %w", err)
	}
	return d, nil
}

var ledgerMu sync.Mutex

// RegisterSecret records a secret value the tests used, for the scan at
// the end of the run. Values shorter than MinSecretLength are ignored.
func RegisterSecret(label, value string) error {
	if Dir() == "" || len(value) < MinSecretLength {
		return nil
	}
	d, err := Subdir()
	if err != nil {
		return err
	}
	b, err := json.Marshal(Entry{Label: label, Value: value})
	if err != nil {
		return err
	}
	ledgerMu.Lock()
	defer ledgerMu.Unlock()
	f, err := os.OpenFile(filepath.Join(d, LedgerFile), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("secrets ledger: %w", err)
	}
	defer f.Close()
	if _, err := f.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("secrets ledger: %w", err)
	}
	return nil
}

// ReadLedger returns the entries recorded under dir.
func ReadLedger(dir string) ([]Entry, error) {
	b, err := os.ReadFile(filepath.Join(dir, LedgerFile))
	if err != nil {
		return nil, err
	}
	var out []Entry
	for i, line := range strings.Split(string(b), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		var e Entry
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			return nil, fmt.Errorf("%s line %d: %w", LedgerFile, i+1, err)
		}
		out = append(out, e)
	}
	return out, nil
}

// DumpHistories writes the history of every run of every workflow the
// server knows in the client's namespace, open or closed, under
// histories/<pkg>/, in the JSON form the replayer and `temporal workflow
// show -o json` use. It returns how many runs it wrote.
func DumpHistories(ctx context.Context, c client.Client, pkg string) (int, error) {
	d, err := Subdir(HistoriesDir, pkg)
	if err != nil || d == "" {
		return 0, err
	}
	n := 0
	var token []byte
	for {
		resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{PageSize: 500, NextPageToken: token})
		if err != nil {
			return n, fmt.Errorf("list workflows: %w", err)
		}
		for _, ex := range resp.Executions {
			id, run := ex.GetExecution().GetWorkflowId(), ex.GetExecution().GetRunId()
			if err := dumpOne(ctx, c, filepath.Join(d, fileName(id, run)), id, run); err != nil {
				return n, err
			}
			n++
		}
		token = resp.NextPageToken
		if len(token) == 0 {
			return n, nil
		}
	}
}

func dumpOne(ctx context.Context, c client.Client, path, id, run string) error {
	var events []*historypb.HistoryEvent
	it := c.GetWorkflowHistory(ctx, id, run, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			return fmt.Errorf("history of %s/%s: %w", id, run, err)
		}
		events = append(events, ev)
	}
	b, err := temporalproto.CustomJSONMarshalOptions{}.Marshal(&historypb.History{Events: events})
	if err != nil {
		return fmt.Errorf("encode history of %s: %w", id, err)
	}
	return os.WriteFile(path, b, 0o644)
}

// fileName makes a workflow id (which holds slashes) a flat file name.
func fileName(id, run string) string {
	r := strings.NewReplacer("/", "_", ":", "_", " ", "_")
	return r.Replace(id) + "_" + run + ".json"
}

// CopyLogs copies the *.log files under dir (the servers' and processes'
// logs, never their data) into the artifacts' logs folder for pkg.
func CopyLogs(dir, pkg string) error {
	dst, err := Subdir(LogsDir, pkg)
	if err != nil || dst == "" {
		return err
	}
	return filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(d.Name(), ".log") {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		return os.WriteFile(filepath.Join(dst, strings.ReplaceAll(rel, string(filepath.Separator), "_")), b, 0o644)
	})
}

// RegisterKubeSecrets registers every credential held in a Kubernetes
// Secret: the values of keys named like a password, secret, token or key
// (usernames and CA certificates are not secrets).
func RegisterKubeSecrets(secrets []corev1.Secret) error {
	for _, s := range secrets {
		for k, v := range s.Data {
			if sensitiveKey.MatchString(k) {
				if err := RegisterSecret("Secret "+s.Namespace+"/"+s.Name+" "+k, string(v)); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

var sensitiveKey = regexp.MustCompile(`(?i)(password|secret|token|key)$`)
