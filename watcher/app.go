package watcher

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.temporal.io/sdk/client"
	"go.uber.org/fx"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/odaflow/odaflow/dependency"
	"github.com/odaflow/odaflow/gateway"
	"github.com/odaflow/odaflow/internal/config"
	"github.com/odaflow/odaflow/internal/runtime"
	"github.com/odaflow/odaflow/oda"
	"github.com/odaflow/odaflow/workflows"
)

// HistoryLimit is the history length at which new lifecycles continue as
// new: well before the server's own suggestion (4,000 events by default),
// so replays stay short. It travels in the start input, so lifecycles that
// are already running keep the limit they started with.
const HistoryLimit = 2000

// LifecycleOptions are the watcher's settings that workflows start with.
type LifecycleOptions struct {
	IdentityCheckInterval time.Duration
	SecretsCheckInterval  time.Duration
}

// DefaultLifecycles are the kinds that have their own workflow.
func DefaultLifecycles(opts LifecycleOptions) map[string]Lifecycle {
	return map[string]Lifecycle{
		oda.KindComponent.Name: {
			Workflow: workflows.ComponentWorkflow,
			Input: func(ns, name string) any {
				return workflows.ComponentInput{Namespace: ns, Name: name, HistoryLimit: HistoryLimit}
			},
		},
		oda.KindExposedAPI.Name: {
			Workflow: workflows.ExposedAPIWorkflow,
			Input: func(ns, name string) any {
				return workflows.ExposedAPIInput{Namespace: ns, Name: name, HistoryLimit: HistoryLimit}
			},
		},
		oda.KindIdentityConfig.Name: {
			Workflow: workflows.IdentityConfigWorkflow,
			Input: func(ns, name string) any {
				return workflows.IdentityConfigInput{Namespace: ns, Name: name, HistoryLimit: HistoryLimit, CheckInterval: opts.IdentityCheckInterval}
			},
		},
		oda.KindSecretsManagement.Name: {
			Workflow: workflows.SecretsManagementWorkflow,
			Input: func(ns, name string) any {
				return workflows.SecretsManagementInput{Namespace: ns, Name: name, HistoryLimit: HistoryLimit, CheckInterval: opts.SecretsCheckInterval}
			},
		},
		oda.KindDependentAPI.Name: {
			Workflow: workflows.DependentAPIWorkflow,
			Input: func(ns, name string) any {
				return workflows.DependentAPIInput{Namespace: ns, Name: name, HistoryLimit: HistoryLimit}
			},
		},
	}
}

// NewApp builds the watcher process; extra options (runtime.WithLogHandler)
// are added to it.
func NewApp(cfg config.Watcher, extra ...fx.Option) *fx.App {
	return fx.New(append([]fx.Option{
		fx.Supply(cfg, cfg.Common),
		runtime.Module,
		fx.Invoke(runApp),
	}, extra...)...)
}

func runApp(lc fx.Lifecycle, shutdown fx.Shutdowner, cfg config.Watcher, dyn dynamic.Interface, core kubernetes.Interface, md metadata.Interface,
	temporal client.Client, reg *prometheus.Registry, health *runtime.Health, log *slog.Logger) error {
	filter, err := NewNamespaceFilter(cfg.Namespaces)
	if err != nil {
		return err
	}
	ingress, err := labels.Parse(cfg.IngressSelector)
	if err != nil {
		return fmt.Errorf("--ingress-selector %q: %w", cfg.IngressSelector, err)
	}
	statusKey, err := cfg.StatusKey()
	if err != nil {
		return err
	}
	metrics := NewMetrics(reg)
	health.Add("kubernetes", runtime.KubeCheck(core))
	health.Add("temporal", runtime.TemporalCheck(temporal))
	// searchAttributes is decided once, before the first start: a missing
	// attribute would make every start fail.
	searchAttributes := false
	// current is the watcher acting now. Ready means its informers have
	// listed the cluster; a replica standing by for the Lease has nothing
	// to list and is ready.
	var current atomic.Pointer[Watcher]
	health.Add("watcher caches", func(context.Context) error {
		w := current.Load()
		switch {
		case w == nil && cfg.LeaderElect:
			return nil
		case w == nil:
			return errors.New("watcher not started")
		case !w.Synced():
			return errors.New("informers still listing the cluster")
		}
		return nil
	})
	newWatcher := func() *Watcher {
		w := New(Config{
			Namespaces: filter, TaskQueue: cfg.TaskQueue, Lifecycles: DefaultLifecycles(LifecycleOptions{IdentityCheckInterval: cfg.IdentityCheckInterval, SecretsCheckInterval: cfg.SecretsCheckInterval}),
			IngressSelector: ingress, IngressNamespace: cfg.IngressNamespace, SearchAttributes: searchAttributes,
			ChildStatusWindow: cfg.ChildStatusWindow, WorkflowTaskTimeout: cfg.WorkflowTaskTimeout, StatusKey: statusKey,
			Gateway: gateway.Config{Gateway: cfg.Gateway, PublicHostname: cfg.PublicHostname, AllowedHostnames: cfg.AllowedHostnames}.WithDefaults(),
			Trust:   dependency.Trust{SharedNamespaces: cfg.SharedAPINamespaces},
		}, Clients{Dynamic: dyn, Core: core, Metadata: md}, temporal, log.With("component", "watcher"), metrics)
		current.Store(w)
		return w
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	lc.Append(fx.Hook{
		OnStart: func(context.Context) error {
			go func() {
				defer close(done)
				if cfg.SearchAttributes {
					searchAttributes = runtime.EnsureSearchAttributesWithRetry(ctx, temporal.OperatorService(), cfg.TemporalNamespace,
						workflows.SearchAttributeNames, log.With("component", "watcher"))
				}
				if ctx.Err() != nil {
					return
				}
				if !cfg.LeaderElect {
					if err := newWatcher().Run(ctx); err != nil {
						log.Error("watcher stopped", "err", err)
						_ = shutdown.Shutdown(fx.ExitCode(1))
					}
					return
				}
				runElected(ctx, cfg, core, log, newWatcher, shutdown)
			}()
			return nil
		},
		OnStop: func(context.Context) error {
			cancel()
			<-done
			return nil
		},
	})
	return nil
}

// runElected acts only while this replica holds the Lease. Losing it ends
// the process (the pod restarts and rejoins as a candidate), the simplest
// way to be sure two replicas never act at once.
func runElected(ctx context.Context, cfg config.Watcher, core kubernetes.Interface, log *slog.Logger, newWatcher func() *Watcher, shutdown fx.Shutdowner) {
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1ObjectMeta(cfg.LeaderElectionNamespace, cfg.LeaderElectionID),
		Client:     core.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: cfg.Identity},
	}
	leaderelection.RunOrDie(ctx, leaderelection.LeaderElectionConfig{
		Lock:            lock,
		ReleaseOnCancel: true,
		LeaseDuration:   15 * time.Second,
		RenewDeadline:   10 * time.Second,
		RetryPeriod:     2 * time.Second,
		Name:            cfg.LeaderElectionID,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(ctx context.Context) {
				log.Info("leading; watching", "identity", cfg.Identity)
				if err := newWatcher().Run(ctx); err != nil {
					log.Error("watcher stopped", "err", err)
				}
			},
			OnStoppedLeading: func() {
				if ctx.Err() == nil {
					log.Warn("lost the lease; exiting so that one replica acts", "identity", cfg.Identity)
					_ = shutdown.Shutdown(fx.ExitCode(1))
				}
			},
			OnNewLeader: func(id string) {
				if id != cfg.Identity {
					log.Info(fmt.Sprintf("%s leads; standing by", id))
				}
			},
		},
	})
}

func metav1ObjectMeta(ns, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: ns, Name: name}
}
