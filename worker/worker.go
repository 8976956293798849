// Package worker is the odaflow worker process: an fx application that
// registers every workflow and activity on the task queue, serves health and
// metrics, and shuts down gracefully (in-flight activities finish first).
package worker

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/worker"
	"go.uber.org/fx"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/odaflow/odaflow/activities"
	"github.com/odaflow/odaflow/gateway"
	"github.com/odaflow/odaflow/internal/config"
	"github.com/odaflow/odaflow/internal/runtime"
	"github.com/odaflow/odaflow/listener"
	"github.com/odaflow/odaflow/workflows"
)

// Register puts every odaflow workflow and activity on w. Tests and the
// replayer use the same function, so what they run is what production runs.
func Register(w worker.Registry, acts Activities) {
	workflows.Register(w)
	w.RegisterActivity(acts.Kube)
	w.RegisterActivity(acts.Exposure)
	w.RegisterActivity(acts.Inventory)
	w.RegisterActivity(acts.Identity)
	w.RegisterActivity(acts.Vault)
}

// Activities are every activity implementation the worker serves.
type Activities struct {
	fx.In
	Kube      *activities.Kube
	Exposure  *activities.Exposure
	Inventory *activities.ServiceInventory
	Identity  *activities.Identity
	Vault     *activities.Vault
}

// GatewayConfig maps the worker's flags onto the gateway rules.
func GatewayConfig(cfg config.Worker) gateway.Config {
	gc := gateway.Config{Gateway: cfg.Gateway, IstioGateway: cfg.IstioGateway, PublicHostname: cfg.PublicHostname, MetricsMode: cfg.MetricsMode}
	return gc
}

// Interceptors are Temporal worker interceptors the builder of the
// application provides in the fx group "worker-interceptors", after the
// worker's own (livenessHeartbeats); the fault tests crash the worker at chosen activity
// boundaries through one.
type Interceptors struct {
	fx.In
	List []interceptor.WorkerInterceptor `group:"worker-interceptors"`
}

// WithHubHTTPClient makes the identity activities call the components'
// TMF630 hubs with hc instead of a plain client. `odaflow dev` uses it: its
// cluster runs no component pods, so hc takes the hubs' cluster-local
// Service names to the dev process's own stand-in, as a cluster's DNS and
// Service routing would take them to the pods.
func WithHubHTTPClient(hc *http.Client) fx.Option {
	return fx.Decorate(func(id *activities.Identity) *activities.Identity {
		id.Hub.HTTP = hc
		return id
	})
}

// StopTimeout is how long the worker lets running activities finish after
// SIGTERM (worker.Options.WorkerStopTimeout). The chart's
// worker.terminationGracePeriodSeconds must exceed it (tests/chart).
const StopTimeout = 20 * time.Second

// New builds the worker application; extra options (e.g. an interceptor
// for Interceptors) are added to it.
func New(cfg config.Worker, extra ...fx.Option) *fx.App {
	return fx.New(append([]fx.Option{
		// fx's default of 15 s would end the stop before the worker's own
		// drain; 5 s more for closing the clients after it.
		fx.StopTimeout(StopTimeout + 5*time.Second),
		fx.Supply(cfg, cfg.Common),
		runtime.Module,
		fx.Provide(func(dyn dynamic.Interface, core kubernetes.Interface, log *slog.Logger) (*activities.Kube, error) {
			kube := activities.NewKube(dyn, core, log.With("component", "activities"))
			key, err := cfg.StatusKey()
			if err != nil {
				return nil, err
			}
			if key == nil {
				log.Warn("no --status-key-file: status writes are not sealed, so a status or status-fence a tenant writes on an ODA resource is trusted (docs/tenancy.md)")
			}
			kube.StatusKey = key
			return kube, nil
		}),
		fx.Provide(func(kube *activities.Kube) (*activities.Exposure, error) {
			var kong *activities.KongAdmin
			if cfg.Gateway == gateway.GatewayKongAdmin {
				var err error
				if kong, err = activities.NewKongAdmin(cfg.KongAdminURL, cfg.KongAdminTokenFile, nil); err != nil {
					return nil, fmt.Errorf("kong-admin gateway: %w", err)
				}
			}
			return &activities.Exposure{Kube: kube, Config: GatewayConfig(cfg), Kong: kong}, nil
		}),
		fx.Provide(func(kube *activities.Kube) *activities.ServiceInventory {
			return &activities.ServiceInventory{URL: cfg.ServiceInventoryURL, HTTP: &http.Client{Timeout: 15 * time.Second}, Kube: kube}
		}),
		fx.Provide(func(kube *activities.Kube, log *slog.Logger) *activities.Identity {
			ns, name, _ := strings.Cut(cfg.Keycloak.AdminSecret, "/")
			id := activities.NewIdentity(kube, activities.KeycloakConfig{
				URL: cfg.Keycloak.URL, Realm: cfg.Keycloak.Realm, AdminRealm: cfg.Keycloak.AdminRealm,
				AdminSecretNamespace: ns, AdminSecretName: name, Timeout: cfg.Keycloak.Timeout,
			}, log.With("component", "identity"))
			if cfg.ListenerBaseURL != "" {
				id.Hub = activities.HubConfig{ListenerBaseURL: cfg.ListenerBaseURL, Keys: listener.KeyFile(cfg.ListenerKeyFile)}
			}
			return id
		}),
		fx.Provide(fx.Annotate(func(cl client.Client, log *slog.Logger) runtime.Route {
			// Served even without a listener URL, answering 503, so a hub
			// registered by an earlier configuration gets a clear answer.
			return runtime.Route{Pattern: "/listener/", Handler: listener.New(cl, listener.KeyFile(cfg.ListenerKeyFile), log.With("component", "listener"))}
		}, fx.ResultTags(`group:"http-routes"`))),
		fx.Provide(func(log *slog.Logger) (*activities.Vault, error) {
			v := cfg.Vault
			if v.Address == "" {
				return activities.DisabledVault(), nil
			}
			return activities.NewVault(activities.VaultConfig{
				Address: v.Address, CACertFile: v.CACertFile, SkipVerify: v.SkipVerify, TokenFile: v.TokenFile,
				LoginAuthPath: v.LoginAuthPath, LoginRole: v.LoginRole, AuthPath: v.AuthPath,
				KubernetesHost: v.KubernetesHost, KubernetesCACertFile: v.KubernetesCAFile,
				TokenReviewerJWTFile: v.TokenReviewerJWTFile, Audience: v.Audience,
			}, log.With("component", "vault"))
		}),
		fx.Invoke(run),
	}, extra...)...)
}

func run(lc fx.Lifecycle, cfg config.Worker, cl client.Client, acts Activities, ics Interceptors, core kubernetes.Interface, health *runtime.Health, log *slog.Logger) {
	w := worker.New(cl, cfg.TaskQueue, worker.Options{
		// Let activities finish (they are short apiserver calls) before the
		// process exits on SIGTERM.
		WorkerStopTimeout: StopTimeout,
		// Lifecycle steps are short and latency-bound, not CPU-bound: more
		// pollers keep tasks flowing when thousands of Components move at once.
		MaxConcurrentWorkflowTaskPollers: 8,
		MaxConcurrentActivityTaskPollers: 4,
		Interceptors:                     append([]interceptor.WorkerInterceptor{&livenessHeartbeats{}}, ics.List...),
	})
	Register(w, acts)
	health.Add("temporal", runtime.TemporalCheck(cl))
	health.Add("kubernetes", runtime.KubeCheck(core))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	lc.Append(fx.Hook{
		OnStart: func(context.Context) error {
			go func() {
				defer close(done)
				if cfg.SearchAttributes {
					// The watcher sets them too; whichever process has the
					// right registers them, the other finds them there.
					runtime.EnsureSearchAttributesWithRetry(ctx, cl.OperatorService(), cfg.TemporalNamespace, workflows.SearchAttributeNames, log)
				}
				startWithBackoff(ctx, log, "worker", w.Start)
			}()
			return nil
		},
		OnStop: func(context.Context) error {
			cancel()
			<-done
			w.Stop()
			return nil
		},
	})
	log.Info("worker configured", "taskQueue", cfg.TaskQueue, "temporal", cfg.TemporalAddress, "namespace", cfg.TemporalNamespace, "gateway", cfg.Gateway)
}

// startWithBackoff starts a component that needs a reachable Temporal
// server, retrying with capped exponential backoff and one log line per
// attempt, until it starts or ctx ends.
func startWithBackoff(ctx context.Context, log *slog.Logger, what string, start func() error) {
	delay := time.Second
	for {
		err := start()
		if err == nil {
			log.Info(what + " started")
			return
		}
		log.Warn(fmt.Sprintf("%s could not start; retrying", what), "retryIn", delay.String(), "err", err)
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		delay = min(delay*2, time.Minute)
	}
}
