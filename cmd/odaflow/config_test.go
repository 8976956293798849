package main

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/odaflow/odaflow/internal/config"
	"github.com/odaflow/odaflow/internal/config/configtest"
)

var updateDocs = flag.Bool("update", false, "rewrite docs/configuration.md's generated tables")

func TestWebhookFlagsHaveOneVariableEach(t *testing.T) {
	configtest.CheckEnvMapping(t, config.EnvName, func(fs *flag.FlagSet) func() error {
		var c webhookConfig
		c.bind(fs)
		return func() error { return errors.Join(c.envErrs...) }
	})
}

func TestCodecServerFlagsHaveOneVariableEach(t *testing.T) {
	configtest.CheckEnvMapping(t, config.EnvName, func(fs *flag.FlagSet) func() error {
		var c codecServerConfig
		c.bind(fs)
		return func() error { return errors.Join(c.envErrs...) }
	})
}

func TestWebhookReportsUnparsableVariables(t *testing.T) {
	t.Setenv("ODAFLOW_SELF_SIGNED", "yes")
	t.Setenv("ODAFLOW_SHUTDOWN_DELAY", "5")
	var c webhookConfig
	fs := flag.NewFlagSet("webhook", flag.ContinueOnError)
	c.bind(fs)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	err := c.validate()
	for _, want := range []string{`ODAFLOW_SELF_SIGNED="yes"`, `ODAFLOW_SHUTDOWN_DELAY="5"`, "no serving certificate"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("validate() = %v, want it to mention %s", err, want)
		}
	}
}

// TestConfigurationDocIsCurrent keeps docs/configuration.md's tables equal
// to the flags the commands register. After adding or changing a flag:
//
//	go test ./cmd/odaflow -run TestConfigurationDocIsCurrent -update
func TestConfigurationDocIsCurrent(t *testing.T) {
	path := filepath.Join("..", "..", "docs", "configuration.md")
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	const begin, end = "<!-- flags:begin -->\n", "<!-- flags:end -->\n"
	head, rest, ok1 := strings.Cut(string(doc), begin)
	_, tail, ok2 := strings.Cut(rest, end)
	if !ok1 || !ok2 {
		t.Fatalf("%s lacks the %q and %q markers", path, begin, end)
	}
	want := flagTables(t)
	if *updateDocs {
		if err := os.WriteFile(path, []byte(head+begin+want+end+tail), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if got, _, _ := strings.Cut(rest, end); got != want {
		t.Errorf("%s is out of date with the flags; run\n\tgo test ./cmd/odaflow -run TestConfigurationDocIsCurrent -update", path)
	}
}

// flagTables renders one table per command, the flags the worker and the
// watcher share first.
func flagTables(t *testing.T) string {
	t.Helper()
	bind := map[string]func(*flag.FlagSet){
		"common":       func(fs *flag.FlagSet) { new(config.Common).Bind(fs) },
		"worker":       func(fs *flag.FlagSet) { new(config.Worker).Bind(fs) },
		"watcher":      func(fs *flag.FlagSet) { new(config.Watcher).Bind(fs) },
		"webhook":      func(fs *flag.FlagSet) { new(webhookConfig).bind(fs) },
		"codec-server": func(fs *flag.FlagSet) { new(codecServerConfig).bind(fs) },
	}
	// The defaults as built in, not as this machine's environment sets them.
	for _, b := range bind {
		fs := flag.NewFlagSet("env", flag.ContinueOnError)
		b(fs)
		fs.VisitAll(func(f *flag.Flag) { t.Setenv(config.EnvName(f.Name), "") })
	}
	host, _ := os.Hostname()
	flags := func(name string) []*flag.Flag {
		fs := flag.NewFlagSet(name, flag.ContinueOnError)
		bind[name](fs)
		var out []*flag.Flag
		fs.VisitAll(func(f *flag.Flag) { out = append(out, f) })
		return out
	}
	common := map[string]bool{}
	for _, f := range flags("common") {
		common[f.Name] = true
	}
	var b strings.Builder
	table := func(title string, fs []*flag.Flag) {
		b.WriteString("\n### " + title + "\n\n| flag | variable | default | meaning |\n|---|---|---|---|\n")
		for _, f := range fs {
			def := f.DefValue
			switch {
			case def == "":
				def = "—"
			case def == host && f.Name == "identity":
				def = "the host name"
			default:
				def = "`" + def + "`"
			}
			usage := strings.TrimSuffix(f.Usage, " (env "+config.EnvName(f.Name)+")")
			usage = strings.ReplaceAll(usage, "|", `\|`)
			b.WriteString("| `--" + f.Name + "` | `" + config.EnvName(f.Name) + "` | " + def + " | " + usage + " |\n")
		}
	}
	only := func(name string) []*flag.Flag {
		return slices.DeleteFunc(flags(name), func(f *flag.Flag) bool { return common[f.Name] })
	}
	table("`odaflow worker` and `odaflow watcher`", flags("common"))
	table("`odaflow worker` only", only("worker"))
	table("`odaflow watcher` only", only("watcher"))
	table("`odaflow webhook`", flags("webhook"))
	table("`odaflow codec-server`", flags("codec-server"))
	b.WriteString("\n")
	return b.String()
}
