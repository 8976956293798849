package localstack

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestPostgres starts PostgreSQL as the test suites do: as root it must run
// as the postgres user, answer on its loopback port, and leave nothing
// behind after Stop.
func TestPostgres(t *testing.T) {
	bin, err := FindPostgres()
	if err != nil {
		if os.Getenv("CI") != "" || os.Getenv("ODAFLOW_SKIP_INTEGRATION") == "" {
			t.Fatalf("PostgreSQL is missing (run make tools or hack/tools.sh postgres): %v", err)
		}
		t.Skipf("skipping on request: %v", err)
	}
	var logs syncBuffer
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pg, err := StartPostgres(ctx, PostgresOptions{BinDir: bin, Logs: &logs})
	if err != nil {
		t.Fatalf("start: %v\n%s", err, logs.tail(4000))
	}
	defer func() { _ = pg.Stop() }()
	if os.Geteuid() == 0 {
		status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pg.proc.Pid()))
		if err != nil {
			t.Fatal(err)
		}
		cred, _ := postgresCredential()
		want := "Uid:\t" + strconv.Itoa(int(cred.Uid))
		if !strings.Contains(string(status), want) {
			t.Errorf("postgres runs as root: /proc status has no %q", want)
		}
	}
	out, err := exec.Command(bin+"/psql", "-h", pg.Host, "-p", strconv.Itoa(pg.Port), "-U", pg.User, "-d", "postgres", "-Atc", "select 40+2").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "42" {
		t.Fatalf("psql: %v: %s", err, out)
	}
	if err := pg.Stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if _, err := os.Stat(pg.Dir); !os.IsNotExist(err) {
		t.Errorf("%s still there after Stop: %v", pg.Dir, err)
	}
}
