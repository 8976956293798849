package main

import (
	"flag"
	"fmt"
	"net/http"
	"time"
)

// runHealthcheck probes an odaflow HTTP endpoint and exits non-zero unless
// it answers 200: the container health check of an image with no shell and
// no curl (docker-compose.yaml).
func runHealthcheck(args []string) error {
	fs := flag.NewFlagSet("odaflow healthcheck", flag.ContinueOnError)
	url := fs.String("url", "http://127.0.0.1:8080/readyz", "endpoint to probe")
	timeout := fs.Duration("timeout", 3*time.Second, "give up after this long")
	if err := fs.Parse(args); err != nil {
		return flagError(err)
	}
	cl := &http.Client{Timeout: *timeout}
	resp, err := cl.Get(*url)
	if err != nil {
		return fmt.Errorf("probe %s: %w", *url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("probe %s: %s", *url, resp.Status)
	}
	return nil
}
