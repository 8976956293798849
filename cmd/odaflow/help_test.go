package main

import (
	"io"
	"strings"
	"testing"
)

// TestHelpExitsZero: -h and --help print a command's usage and exit 0, as
// kubectl's and helm's do; an unknown flag is a usage error, exit 2.
func TestHelpExitsZero(t *testing.T) {
	commands := map[string]func([]string) error{
		"worker": runWorker, "watcher": runWatcher, "dev": runDev, "status": runStatus,
		"explain": runExplain, "healthcheck": runHealthcheck, "webhook": runWebhook,
		"codec-server": runCodecServer, "validate": runValidate, "uninstall-check": runUninstallCheck,
	}
	for name, run := range commands {
		for args, want := range map[string]int{"-h": 0, "--help": 0, "--no-such-flag": 2} {
			if got := exitCode(run(strings.Fields(args))); got != want {
				t.Errorf("odaflow %s %s exits %d, want %d", name, args, got, want)
			}
		}
	}
	if code := validateMain([]string{"-h"}, strings.NewReader(""), io.Discard, io.Discard); code != 0 {
		t.Errorf("odaflow validate -h exits %d", code)
	}
}
