// Command secretscan is the last step of `make test`: it searches every
// workflow history the tests' Temporal servers recorded, every log of the
// run (the go test output and the servers' logs) and the committed replay
// histories for every secret value the tests registered, in plain text and
// base64. Any hit fails the run; so does a scan over nothing (no secrets
// registered or no histories dumped), which would prove nothing.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/odaflow/odaflow/internal/testartifacts"
)

func main() {
	dir := flag.String("artifacts", os.Getenv(testartifacts.EnvDir), "the test run's artifacts folder (ledger, histories, logs)")
	minSecrets := flag.Int("min-secrets", 3, "fail when fewer secrets were registered: the run was not wired for the scan")
	minHistories := flag.Int("min-histories", 20, "fail when fewer histories were dumped")
	flag.Parse()
	if err := run(*dir, *minSecrets, *minHistories, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "secretscan:", err)
		os.Exit(1)
	}
}

func run(dir string, minSecrets, minHistories int, extra []string) error {
	if dir == "" {
		return fmt.Errorf("no artifacts folder (-artifacts or %s)", testartifacts.EnvDir)
	}
	entries, err := testartifacts.ReadLedger(dir)
	if err != nil {
		return fmt.Errorf("read the secrets ledger: %w", err)
	}
	labels := map[string]bool{}
	values := map[string]bool{}
	for _, e := range entries {
		labels[e.Label] = true
		values[e.Value] = true
	}
	if len(values) < minSecrets {
		return fmt.Errorf("only %d secret values registered (want at least %d): the scan would prove nothing", len(values), minSecrets)
	}
	hits, st, err := testartifacts.Scan(entries, append([]string{dir}, extra...)...)
	if err != nil {
		return err
	}
	fmt.Printf("secretscan: %d secret values (%d kinds) searched in %d files (%.1f MiB), %d workflow histories\n",
		len(values), len(labels), st.Files, float64(st.Bytes)/(1<<20), st.Histories)
	if st.Histories < minHistories {
		return fmt.Errorf("only %d histories dumped (want at least %d): the scan would prove nothing", st.Histories, minHistories)
	}
	for _, h := range hits {
		how := "in plain text"
		if h.Encoded {
			how = "base64-encoded"
		}
		fmt.Fprintf(os.Stderr, "secretscan: LEAK: %s found %s in %s\n", h.Label, how, h.File)
	}
	if len(hits) > 0 {
		return fmt.Errorf("%d leaks", len(hits))
	}
	return nil
}
