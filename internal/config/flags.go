package config

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// EnvName is the environment variable of the flag --name: ODAFLOW_ and the
// name in upper case with "-" as "_" (--vault-ca-cert-file is
// ODAFLOW_VAULT_CA_CERT_FILE), except for the flags whose variable is a
// standard that the tools around odaflow already set (wellKnownEnv).
func EnvName(flagName string) string {
	if v, ok := wellKnownEnv[flagName]; ok {
		return v
	}
	return "ODAFLOW_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// wellKnownEnv are the flags whose variable keeps the name every Kubernetes
// and OpenTelemetry tool reads.
var wellKnownEnv = map[string]string{
	"kubeconfig":    "KUBECONFIG",
	"otlp-endpoint": "OTEL_EXPORTER_OTLP_ENDPOINT",
}

// Flags registers flags that each have exactly one environment variable,
// EnvName(flag), which sets the flag's default: a flag given on the command
// line wins over its variable. A variable that does not parse is added to
// Errs, and the flag keeps its built-in default, so that Validate reports it
// with every other problem instead of the process starting with a setting
// nobody chose. The usage text gains "(env NAME)".
type Flags struct {
	FS   *flag.FlagSet
	Errs *[]error
}

// lookup returns the flag's variable and its value; an empty variable counts
// as unset, as it does for a Deployment's `value: ""`.
func (f Flags) lookup(name string) (env, value string, ok bool) {
	env = EnvName(name)
	value, ok = os.LookupEnv(env)
	return env, value, ok && value != ""
}

func (f Flags) usage(name, usage string) string {
	return usage + " (env " + EnvName(name) + ")"
}

func (f Flags) fail(name, env, value, want string) {
	*f.Errs = append(*f.Errs, fmt.Errorf("%s=%q (--%s) must be %s", env, value, name, want))
}

// String registers a string flag.
func (f Flags) String(p *string, name, def, usage string) {
	if _, v, ok := f.lookup(name); ok {
		def = v
	}
	f.FS.StringVar(p, name, def, f.usage(name, usage))
}

// fromEnv is the default of the flag name: its variable parsed, or def when
// the variable is unset or does not parse (which is reported).
func fromEnv[T any](f Flags, name string, def T, parse func(string) (T, error), want string) T {
	if env, v, ok := f.lookup(name); ok {
		if x, err := parse(v); err == nil {
			return x
		}
		f.fail(name, env, v, want)
	}
	return def
}

// Bool registers a boolean flag; its variable is true or false (or 1, 0, t,
// f: strconv.ParseBool).
func (f Flags) Bool(p *bool, name string, def bool, usage string) {
	f.FS.BoolVar(p, name, fromEnv(f, name, def, strconv.ParseBool, "true or false"), f.usage(name, usage))
}

// Int registers an integer flag.
func (f Flags) Int(p *int, name string, def int, usage string) {
	f.FS.IntVar(p, name, fromEnv(f, name, def, strconv.Atoi, "an integer"), f.usage(name, usage))
}

// Float64 registers a number flag.
func (f Flags) Float64(p *float64, name string, def float64, usage string) {
	parse := func(s string) (float64, error) { return strconv.ParseFloat(s, 64) }
	f.FS.Float64Var(p, name, fromEnv(f, name, def, parse, "a number"), f.usage(name, usage))
}

// Duration registers a duration flag (time.ParseDuration: 30s, 10m).
func (f Flags) Duration(p *time.Duration, name string, def time.Duration, usage string) {
	f.FS.DurationVar(p, name, fromEnv(f, name, def, time.ParseDuration, "a duration such as 30s or 10m"), f.usage(name, usage))
}

// List registers a comma-separated list flag (SplitList).
func (f Flags) List(p *[]string, name string, def []string, usage string) {
	*p = def
	if _, v, ok := f.lookup(name); ok {
		*p = SplitList(v)
	}
	f.FS.Var(listFlag{p}, name, f.usage(name, usage))
}

type listFlag struct{ v *[]string }

func (l listFlag) String() string {
	if l.v == nil {
		return ""
	}
	return strings.Join(*l.v, ",")
}

func (l listFlag) Set(s string) error {
	*l.v = SplitList(s)
	return nil
}

// SplitList splits a comma-separated list, dropping empty items.
func SplitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
