// Command odaflow is the ODA Canvas control plane on Temporal. One binary,
// one subcommand per process:
//
//	odaflow worker    runs workflows and activities
//	odaflow watcher   turns Kubernetes events into workflow signals
//	odaflow dev       a whole local stack (apiserver, Temporal, worker, watcher)
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"go.uber.org/fx"

	"github.com/odaflow/odaflow"
	"github.com/odaflow/odaflow/internal/config"
	"github.com/odaflow/odaflow/watcher"
	"github.com/odaflow/odaflow/worker"
)

const usage = `odaflow: the ODA Canvas control plane on Temporal

Usage:
  odaflow worker  [flags]   run the Temporal worker (workflows and activities)
  odaflow watcher [flags]   run the watcher (Kubernetes events -> workflow signals)
  odaflow dev     [flags]   run a local stack: kube-apiserver, Temporal + Web UI, worker, watcher
  odaflow webhook [flags]   serve the webhooks over HTTPS (Component conversion)
  odaflow codec-server [flags]  decode odaflow's encrypted payloads for the Temporal Web UI
  odaflow status  [-A|-n ns] [-l sel] [-w] [--no-headers] [-o wide|json|yaml|name|jsonpath=...] [kind [name]]
                            the ODA resources as kubectl get lists them: Ready, status, reason, age, Web UI link
  odaflow explain <Kind>/<ns>/<name>    why a resource is not done (asks its workflow)
  odaflow validate -f FILE...           check Component manifests offline: children and problems
  odaflow uninstall-check [--namespaces NS]  exit non-zero while ODA resources need odaflow (the chart's pre-delete hook)
  odaflow healthcheck [--url URL]       exit 0 when the endpoint answers 200 (container health checks)
  odaflow version

Run "odaflow <command> -h" for the flags of a command.
`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	cmd, args := os.Args[1], os.Args[2:]
	var err error
	switch cmd {
	case "worker":
		err = runWorker(args)
	case "watcher":
		err = runWatcher(args)
	case "dev":
		err = runDev(args)
	case "status":
		err = runStatus(args)
	case "explain":
		err = runExplain(args)
	case "healthcheck":
		err = runHealthcheck(args)
	case "webhook":
		err = runWebhook(args)
	case "codec-server":
		err = runCodecServer(args)
	case "validate":
		err = runValidate(args)
	case "uninstall-check":
		err = runUninstallCheck(args)
	case "version":
		fmt.Println(odaflow.Version())
	case "-h", "--help", "help":
		fmt.Print(usage)
	default:
		fmt.Fprintf(os.Stderr, "odaflow: unknown command %q\n\n%s", cmd, usage)
		os.Exit(2)
	}
	if code := exitCode(err); code != 0 {
		// An exitError carries only a status: the command has said why.
		if !errors.As(err, new(exitError)) {
			fmt.Fprintf(os.Stderr, "odaflow %s: %v\n", cmd, err)
		}
		os.Exit(code)
	}
}

// exitCode is the status odaflow exits with after a command returns err.
func exitCode(err error) int {
	var exit exitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exit):
		return int(exit)
	default:
		return 1
	}
}

type exitError int

func (e exitError) Error() string { return fmt.Sprintf("exit code %d", int(e)) }

// flagError is the exit of a command whose flags did not parse, which the
// flag package has already reported: 0 for -h and --help (the usage asked
// for, as kubectl and helm answer it), 2 for a usage error.
func flagError(err error) exitError {
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	return 2
}

func parse(fs *flag.FlagSet, args []string, validate func() error) error {
	if err := fs.Parse(args); err != nil {
		return flagError(err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %v", fs.Args())
	}
	if err := validate(); err != nil {
		return fmt.Errorf("invalid configuration:\n%w", err)
	}
	return nil
}

func runWorker(args []string) error {
	var cfg config.Worker
	fs := flag.NewFlagSet("odaflow worker", flag.ContinueOnError)
	cfg.Bind(fs)
	// A closure, not the method value cfg.Validate: that would copy cfg
	// before the flags are parsed and validate the defaults.
	if err := parse(fs, args, func() error { cfg.ApplyTemporalEnv(fs); return cfg.Validate() }); err != nil {
		return err
	}
	return runApp(worker.New(cfg))
}

func runWatcher(args []string) error {
	var cfg config.Watcher
	fs := flag.NewFlagSet("odaflow watcher", flag.ContinueOnError)
	cfg.Bind(fs)
	// A closure, not the method value cfg.Validate: that would copy cfg
	// before the flags are parsed and validate the defaults.
	if err := parse(fs, args, func() error { cfg.ApplyTemporalEnv(fs); return cfg.Validate() }); err != nil {
		return err
	}
	return runApp(watcher.NewApp(cfg))
}

// runApp runs an fx app until SIGINT/SIGTERM, then stops it gracefully.
func runApp(app *fx.App) error {
	if err := app.Err(); err != nil {
		return err
	}
	ctx := context.Background()
	if err := app.Start(ctx); err != nil {
		return err
	}
	sig := <-app.Wait()
	stopCtx, cancel := context.WithTimeout(ctx, app.StopTimeout())
	defer cancel()
	if err := app.Stop(stopCtx); err != nil {
		return err
	}
	if sig.ExitCode != 0 {
		return exitError(sig.ExitCode)
	}
	return nil
}

// notifyContext is cancelled by Ctrl-C or SIGTERM.
func notifyContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}
