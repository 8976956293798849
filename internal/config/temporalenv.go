package config

import (
	"errors"
	"flag"
	"fmt"
	"os"

	"go.temporal.io/sdk/contrib/envconfig"
)

// temporalFlags are the flags the Temporal SDK's environment configuration
// can fill, with what it fills them from.
var temporalFlags = []struct {
	flag string
	from func(p envconfig.ClientConfigProfile) string
}{
	{"temporal-address", func(p envconfig.ClientConfigProfile) string { return p.Address }},
	{"temporal-namespace", func(p envconfig.ClientConfigProfile) string { return p.Namespace }},
	{"temporal-tls-cert", func(p envconfig.ClientConfigProfile) string { return tlsOf(p).ClientCertPath }},
	{"temporal-tls-key", func(p envconfig.ClientConfigProfile) string { return tlsOf(p).ClientKeyPath }},
	{"temporal-tls-ca", func(p envconfig.ClientConfigProfile) string { return tlsOf(p).ServerCACertPath }},
	{"temporal-tls-server-name", func(p envconfig.ClientConfigProfile) string { return tlsOf(p).ServerName }},
}

func tlsOf(p envconfig.ClientConfigProfile) envconfig.ClientConfigTLS {
	if p.TLS == nil {
		return envconfig.ClientConfigTLS{}
	}
	return *p.TLS
}

// ApplyTemporalEnv takes the Temporal connection settings that Temporal's
// own tools read, through the SDK's envconfig: TEMPORAL_ADDRESS,
// TEMPORAL_NAMESPACE, TEMPORAL_API_KEY, TEMPORAL_TLS and TEMPORAL_TLS_*, and
// a profile (TEMPORAL_PROFILE, default "default") of the TOML file
// TEMPORAL_CONFIG_FILE (default <user config dir>/temporalio/temporal.toml;
// a missing file is no error). Precedence, per setting: an odaflow flag on
// the command line or its ODAFLOW_* variable, then TEMPORAL_* variables,
// then the profile, then odaflow's default. Call it after fs.Parse; what
// it cannot use is reported by Validate.
func (c *Common) ApplyTemporalEnv(fs *flag.FlagSet) {
	prof, err := envconfig.LoadClientConfigProfile(envconfig.LoadClientConfigProfileOptions{})
	if err != nil {
		c.envErrs = append(c.envErrs, fmt.Errorf("temporal environment configuration: %w", err))
		return
	}
	explicit := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { explicit[f.Name] = true })
	isExplicit := func(name string) bool {
		v, ok := os.LookupEnv(EnvName(name))
		return explicit[name] || (ok && v != "")
	}
	for _, tf := range temporalFlags {
		if v := tf.from(prof); v != "" && !isExplicit(tf.flag) {
			if err := fs.Set(tf.flag, v); err != nil {
				c.envErrs = append(c.envErrs, fmt.Errorf("temporal environment configuration: --%s: %w", tf.flag, err))
			}
		}
	}
	// odaflow's own flag takes a file, reloaded on rotation; Temporal's
	// variable and profiles carry the key itself.
	if prof.APIKey != "" && !isExplicit("temporal-api-key-file") {
		c.APIKey = prof.APIKey
	}
	if prof.TLS != nil {
		// TEMPORAL_TLS=true: TLS with the system roots and no client
		// certificate (Temporal Cloud with an API key); false: plaintext
		// even with an API key (a local server).
		enabled := !prof.TLS.Disabled
		c.TemporalTLS = &enabled
		var unsupported []string
		if len(prof.TLS.ClientCertData) > 0 || len(prof.TLS.ClientKeyData) > 0 || len(prof.TLS.ServerCACertData) > 0 {
			unsupported = append(unsupported, "certificate data (TEMPORAL_TLS_*_DATA, *_data): give files (*_PATH), which odaflow reloads on rotation")
		}
		if prof.TLS.DisableHostVerification {
			unsupported = append(unsupported, "TEMPORAL_TLS_DISABLE_HOST_VERIFICATION")
		}
		for _, u := range unsupported {
			c.envErrs = append(c.envErrs, errors.New("temporal environment configuration: odaflow does not take "+u))
		}
	}
	if len(prof.GRPCMeta) > 0 || prof.Authority != "" {
		c.envErrs = append(c.envErrs, errors.New("temporal environment configuration: odaflow does not take gRPC metadata (TEMPORAL_GRPC_META_*) or an authority (TEMPORAL_CLIENT_AUTHORITY)"))
	}
	// A codec endpoint is for the CLI and the Web UI: a worker that called
	// a remote codec on every replay would be slow, and odaflow's payloads
	// are not encoded. It is left alone.
}
