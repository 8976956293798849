// Package configtest checks that a command's flags and environment variables
// match one to one (config.EnvName).
package configtest

import (
	"flag"
	"fmt"
	"strings"
	"testing"
)

// Bind registers a command's flags on fs and returns the environment errors
// its configuration collected while doing so.
type Bind func(fs *flag.FlagSet) (envErrs func() error)

// CheckEnvMapping checks, for every flag bind registers, that:
//   - its usage names its variable, envName(flag) (config.EnvName; a
//     parameter because config's own tests use this package);
//   - that variable, set to a valid value other than the default, becomes
//     the flag's value;
//   - for a flag that is not a string, a value that does not parse is
//     reported, naming the variable;
//   - no two flags share a variable.
func CheckEnvMapping(t *testing.T, envName func(flag string) string, bind Bind) {
	t.Helper()
	fs := flag.NewFlagSet("names", flag.ContinueOnError)
	bind(fs)
	seen := map[string]string{}
	n := 0
	fs.VisitAll(func(f *flag.Flag) {
		n++
		env := envName(f.Name)
		if other, dup := seen[env]; dup {
			t.Errorf("--%s and --%s share %s", f.Name, other, env)
		}
		seen[env] = f.Name
		if !strings.HasSuffix(f.Usage, "(env "+env+")") {
			t.Errorf("--%s: usage %q does not end with (env %s)", f.Name, f.Usage, env)
		}
		value, want, bad := sample(f)
		t.Run(f.Name, func(t *testing.T) {
			t.Setenv(env, value)
			fs := flag.NewFlagSet("env", flag.ContinueOnError)
			errs := bind(fs)
			if err := errs(); err != nil {
				t.Errorf("%s=%q refused: %v", env, value, err)
			}
			if got := fs.Lookup(f.Name).Value.String(); got != want {
				t.Errorf("%s=%q gives --%s=%q, want %q", env, value, f.Name, got, want)
			}
			if bad == "" {
				return
			}
			t.Setenv(env, bad)
			fs = flag.NewFlagSet("bad", flag.ContinueOnError)
			err := bind(fs)()
			if err == nil || !strings.Contains(err.Error(), env) || !strings.Contains(err.Error(), "--"+f.Name) {
				t.Errorf("%s=%q: error %v, want one naming %s and --%s", env, bad, err, env, f.Name)
			}
			if got := fs.Lookup(f.Name).Value.String(); got != f.DefValue {
				t.Errorf("%s=%q: --%s=%q, want the built-in default %q", env, bad, f.Name, got, f.DefValue)
			}
		})
	})
	if n == 0 {
		t.Fatal("no flags registered")
	}
}

// sample is a valid value for f's variable other than its default, the
// flag's value it should give, and a value that must not parse ("" for a
// string, where every value parses).
func sample(f *flag.Flag) (value, want, bad string) {
	switch typ := fmt.Sprintf("%T", f.Value); typ {
	case "*flag.boolValue":
		if f.DefValue == "true" {
			return "false", "false", "yes"
		}
		return "true", "true", "yes"
	case "*flag.durationValue":
		return "7m", "7m0s", "seven minutes"
	case "*flag.intValue":
		return "7", "7", "seven"
	case "*flag.float64Value":
		return "7.5", "7.5", "fast"
	case "*flag.stringValue":
		return "from-env-" + f.Name, "from-env-" + f.Name, ""
	default: // a list
		return "a, b,,c", "a,b,c", ""
	}
}
