package config

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// temporalEnv clears every variable ApplyTemporalEnv reads (an empty
// TEMPORAL_* variable counts as set for envconfig, so they are unset, not
// emptied), points TEMPORAL_CONFIG_FILE at a missing file, then sets env.
func temporalEnv(t *testing.T, env map[string]string) {
	t.Helper()
	t.Setenv("KUBECONFIG", "")
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "TEMPORAL_") || strings.HasPrefix(k, "ODAFLOW_TEMPORAL_") {
			t.Setenv(k, "") // restores the value after the test
			os.Unsetenv(k)
		}
	}
	t.Setenv("TEMPORAL_CONFIG_FILE", filepath.Join(t.TempDir(), "missing.toml"))
	for k, v := range env {
		t.Setenv(k, v)
	}
}

// parseTemporal binds a watcher's flags, parses args and applies the
// Temporal environment, as `odaflow watcher` does.
func parseTemporal(t *testing.T, args ...string) Watcher {
	t.Helper()
	var w Watcher
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	w.Bind(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	w.ApplyTemporalEnv(fs)
	return w
}

func TestTemporalEnvPrecedence(t *testing.T) {
	profile := filepath.Join(t.TempDir(), "temporal.toml")
	if err := os.WriteFile(profile, []byte(`
[profile.default]
address = "default-profile:7233"

[profile.prod]
address = "prod.tmprl.cloud:7233"
namespace = "prod.acct"
[profile.prod.tls]
client_cert_path = "/certs/prod.crt"
client_key_path = "/certs/prod.key"
server_name = "prod.tmprl.cloud"
`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		env       map[string]string
		args      []string
		address   string
		namespace string
		cert      string
		server    string
	}{
		{name: "defaults", address: "127.0.0.1:7233", namespace: "default"},
		{name: "TEMPORAL_* over the defaults",
			env:     map[string]string{"TEMPORAL_ADDRESS": "env:7233", "TEMPORAL_NAMESPACE": "env-ns"},
			address: "env:7233", namespace: "env-ns"},
		{name: "ODAFLOW_* over TEMPORAL_*",
			env:     map[string]string{"TEMPORAL_ADDRESS": "env:7233", "ODAFLOW_TEMPORAL_ADDRESS": "odaflow:7233", "TEMPORAL_NAMESPACE": "env-ns"},
			address: "odaflow:7233", namespace: "env-ns"},
		{name: "a flag over TEMPORAL_*",
			env:  map[string]string{"TEMPORAL_ADDRESS": "env:7233", "TEMPORAL_NAMESPACE": "env-ns"},
			args: []string{"--temporal-namespace", "flag-ns"}, address: "env:7233", namespace: "flag-ns"},
		{name: "the default profile of the file",
			env:     map[string]string{"TEMPORAL_CONFIG_FILE": profile},
			address: "default-profile:7233", namespace: "default"},
		{name: "a named profile, TEMPORAL_* over it, flags over both",
			env:     map[string]string{"TEMPORAL_CONFIG_FILE": profile, "TEMPORAL_PROFILE": "prod", "TEMPORAL_NAMESPACE": "env-ns"},
			args:    []string{"--temporal-tls-server-name", "flag.example"},
			address: "prod.tmprl.cloud:7233", namespace: "env-ns", cert: "/certs/prod.crt", server: "flag.example"},
		{name: "TEMPORAL_TLS_* paths",
			env:     map[string]string{"TEMPORAL_TLS_CLIENT_CERT_PATH": "/c.crt", "TEMPORAL_TLS_CLIENT_KEY_PATH": "/c.key", "TEMPORAL_TLS_SERVER_NAME": "s"},
			address: "127.0.0.1:7233", namespace: "default", cert: "/c.crt", server: "s"},
		{name: "ODAFLOW_* cert over TEMPORAL_TLS_*",
			env:     map[string]string{"TEMPORAL_TLS_CLIENT_CERT_PATH": "/c.crt", "ODAFLOW_TEMPORAL_TLS_CERT": "/o.crt"},
			address: "127.0.0.1:7233", namespace: "default", cert: "/o.crt"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			temporalEnv(t, tc.env)
			w := parseTemporal(t, tc.args...)
			if err := errorsOf(w); err != "" {
				t.Fatalf("errors: %s", err)
			}
			if w.TemporalAddress != tc.address || w.TemporalNamespace != tc.namespace || w.TLSCert != tc.cert || w.TLSServerName != tc.server {
				t.Errorf("address %q namespace %q cert %q server name %q, want %q %q %q %q",
					w.TemporalAddress, w.TemporalNamespace, w.TLSCert, w.TLSServerName, tc.address, tc.namespace, tc.cert, tc.server)
			}
		})
	}
}

func errorsOf(w Watcher) string {
	var s []string
	for _, e := range w.envErrs {
		s = append(s, e.Error())
	}
	return strings.Join(s, "; ")
}

func TestTemporalEnvAPIKeyAndTLS(t *testing.T) {
	t.Run("TEMPORAL_API_KEY", func(t *testing.T) {
		temporalEnv(t, map[string]string{"TEMPORAL_API_KEY": "k1"})
		if w := parseTemporal(t); w.APIKey != "k1" || w.TemporalTLS != nil {
			t.Errorf("APIKey %q TemporalTLS %v, want k1 and TLS left to the key", w.APIKey, w.TemporalTLS)
		}
	})
	t.Run("--temporal-api-key-file over TEMPORAL_API_KEY", func(t *testing.T) {
		temporalEnv(t, map[string]string{"TEMPORAL_API_KEY": "k1"})
		if w := parseTemporal(t, "--temporal-api-key-file", "/keys/k"); w.APIKey != "" || w.APIKeyFile != "/keys/k" {
			t.Errorf("APIKey %q APIKeyFile %q, want the file only", w.APIKey, w.APIKeyFile)
		}
	})
	t.Run("TEMPORAL_TLS", func(t *testing.T) {
		for v, want := range map[string]bool{"true": true, "false": false} {
			temporalEnv(t, map[string]string{"TEMPORAL_TLS": v})
			if w := parseTemporal(t); w.TemporalTLS == nil || *w.TemporalTLS != want {
				t.Errorf("TEMPORAL_TLS=%s: TemporalTLS %v", v, w.TemporalTLS)
			}
		}
	})
	t.Run("TEMPORAL_TLS=false with a certificate", func(t *testing.T) {
		temporalEnv(t, map[string]string{"TEMPORAL_TLS": "false"})
		w := parseTemporal(t, "--temporal-tls-server-name", "x")
		if err := w.Validate(); err == nil || !strings.Contains(err.Error(), "TLS to Temporal is disabled") {
			t.Errorf("Validate() = %v", err)
		}
	})
}

// What odaflow cannot honour is an error at start, not silently dropped.
func TestTemporalEnvRefusals(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"TEMPORAL_PROFILE": "nope"}, "unable to find profile nope"},
		{map[string]string{"TEMPORAL_TLS_CLIENT_CERT_DATA": "PEM"}, "certificate data"},
		{map[string]string{"TEMPORAL_TLS_DISABLE_HOST_VERIFICATION": "true"}, "TEMPORAL_TLS_DISABLE_HOST_VERIFICATION"},
		{map[string]string{"TEMPORAL_GRPC_META_X_TENANT": "a"}, "gRPC metadata"},
	} {
		temporalEnv(t, tc.env)
		w := parseTemporal(t)
		if err := w.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: Validate() = %v, want it to mention %q", tc.env, err, tc.want)
		}
	}
}
