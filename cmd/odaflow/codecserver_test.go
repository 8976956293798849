package main

import (
	"flag"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCodecServerNeedsKeysAndAuthorisation(t *testing.T) {
	var c codecServerConfig
	fs := flag.NewFlagSet("codec-server", flag.ContinueOnError)
	c.bind(fs)
	if err := fs.Parse([]string{"--codec-cors-origins=https://ui.example.test/path"}); err != nil {
		t.Fatal(err)
	}
	err := c.validate()
	for _, want := range []string{"--payload-keys-dir is required", "--codec-token-file", "--codec-cors-origins"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("validate() = %v, want it to mention %s", err, want)
		}
	}
}

func TestCodecServerHasTimeouts(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "k1"), []byte("MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="), 0o600); err != nil {
		t.Fatal(err)
	}
	var c codecServerConfig
	fs := flag.NewFlagSet("codec-server", flag.ContinueOnError)
	c.bind(fs)
	if err := fs.Parse([]string{"--payload-keys-dir=" + dir, "--codec-allow-unauthenticated"}); err != nil {
		t.Fatal(err)
	}
	if err := c.validate(); err != nil {
		t.Fatal(err)
	}
	srv, err := newCodecServer(c, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if srv.ReadHeaderTimeout <= 0 || srv.ReadTimeout <= 0 || srv.WriteTimeout <= 0 || srv.IdleTimeout <= 0 {
		t.Fatalf("a timeout is unset: %+v", srv)
	}
}
