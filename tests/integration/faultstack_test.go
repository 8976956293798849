package integration

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/interceptor"
	"go.uber.org/fx"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/odaflow/odaflow/internal/config"
	"github.com/odaflow/odaflow/oda"
	"github.com/odaflow/odaflow/tests/fixtures"
	"github.com/odaflow/odaflow/watcher"
	"github.com/odaflow/odaflow/worker"
)

// faultStack is a worker configuration and a watcher of their own for a
// fault test: their own task queue and namespace glob (which the main
// watcher's "it-[^gkprtx]*" ignores), so a worker can be killed or Temporal
// restarted without touching the other tests' processes.
type faultStack struct {
	common config.Common
}

// startFaultStack starts the watcher for namespaces nsGlob on taskQueue
// against the Temporal server at temporalAddress; workers are started by
// the test (startWorker), as many as it kills.
func startFaultStack(t *testing.T, nsGlob, taskQueue, temporalAddress string) *faultStack {
	t.Helper()
	common := stack.common
	common.TaskQueue = taskQueue
	common.Namespaces = []string{nsGlob}
	common.TemporalAddress = temporalAddress
	// A killed worker and a stopped server fill a warn-level log with what
	// the test does on purpose (workflow tasks held, connections refused).
	common.LogLevel = "error"
	fs := &faultStack{common: common}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	wt := watcher.NewApp(config.Watcher{Common: common, IdentityCheckInterval: 10 * time.Minute, WorkflowTaskTimeout: config.DefaultWorkflowTaskTimeout})
	if err := wt.Start(ctx); err != nil {
		t.Fatalf("start the %s watcher: %v", taskQueue, err)
	}
	t.Cleanup(func() { stopApp(wt) })
	return fs
}

// startWorker starts a worker of the stack that reaches Temporal at
// temporalAddress (a proxy that can be cut, or the server itself), with
// the given interceptor. The returned app is stopped when the test ends
// unless the test stops it first.
func (fs *faultStack) startWorker(t *testing.T, temporalAddress string, ic interceptor.WorkerInterceptor) *fx.App {
	t.Helper()
	common := fs.common
	common.TemporalAddress = temporalAddress
	cfg := config.Worker{Common: common, IstioGateway: "components/component-gateway",
		ServiceInventoryURL: stack.inventoryURL,
		Keycloak: config.Keycloak{URL: stack.keycloak.URL(), Realm: keycloakRealm, AdminRealm: "master",
			AdminSecret: systemNamespace + "/" + keycloakAdminSecret, Timeout: 10 * time.Second},
	}
	var extra []fx.Option
	if ic != nil {
		// The worker's fx group of extra interceptors (worker.Interceptors).
		extra = append(extra, fx.Provide(fx.Annotate(func() interceptor.WorkerInterceptor { return ic }, fx.ResultTags(`group:"worker-interceptors"`))))
	}
	app := worker.New(cfg, extra...)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := app.Start(ctx); err != nil {
		t.Fatalf("start a %s worker: %v", common.TaskQueue, err)
	}
	t.Cleanup(func() { stopApp(app) })
	return app
}

// installReady creates a namespace with the implementations' endpoints
// ready and the productcatalog Component in it, named after the namespace
// without "it-" (paths and the Keycloak client are cluster-wide, so every
// Component needs its own), with a ConfigMap carrying the Component's
// label, as its chart would: adopting it is part of the lifecycle. The
// ingress must already have its address.
func installReady(t *testing.T, ns string) string {
	t.Helper()
	name := strings.TrimPrefix(ns, "it-")
	createNamespace(t, ns)
	for _, svc := range faultImplementations {
		setEndpoints(t, ns, svc, true)
	}
	create(t, oda.KindComponent, fixtures.WithOwnPaths(fixtures.WithoutDependentAPIs(fixtures.ProductCatalog(ns, name))))
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: chartConfigMap(name), Namespace: ns, Labels: map[string]string{oda.LabelComponentName: name}}}
	if _, err := stack.core.CoreV1().ConfigMaps(ns).Create(context.Background(), cm, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create ConfigMap %s/%s: %v", ns, cm.Name, err)
	}
	return name
}

// chartConfigMap names the labelled ConfigMap installReady creates.
func chartConfigMap(component string) string { return component + "-config" }

// adoptedOnce checks that the Component owns its labelled ConfigMap, with
// one owner reference.
func adoptedOnce(ns, component string) error {
	comp, err := get(oda.KindComponent, ns, component)
	if err != nil {
		return err
	}
	cm, err := stack.core.CoreV1().ConfigMaps(ns).Get(context.Background(), chartConfigMap(component), metav1.GetOptions{})
	if err != nil {
		return err
	}
	if refs := cm.OwnerReferences; len(refs) != 1 || refs[0].UID != comp.GetUID() {
		return fmt.Errorf("ConfigMap %s owner references %+v, want the Component %s alone", cm.Name, refs, comp.GetUID())
	}
	return nil
}

// activityRun is one execution of an activity seen by a faultInterceptor.
type activityRun struct {
	// Namespace is the Component's; Key names the workflow (the Component's
	// name replaced by C, so that Components compare) and the activity type;
	// N counts the executions of Key in that workflow on this worker.
	Namespace, Key string
	N              int
	WorkflowID     string
	RunID          string
	ActivityID     string
	Attempt        int32
	Local          bool
	Err            string
	// At is when it started (a crash: when the worker died for it); Done
	// when it returned.
	At, Done time.Time
}

// boundary is where a worker crashes: the n-th execution of an activity
// in one workflow, before or after its side effect.
type boundary struct {
	Key    string
	N      int
	Before bool
}

func (b boundary) String() string {
	when := "after"
	if b.Before {
		when = "before"
	}
	return fmt.Sprintf("%s #%d (%s its side effect)", b.Key, b.N, when)
}

var errWorkerKilled = errors.New("the worker was killed")

// faultInterceptor records every activity the worker runs and, for each
// namespace with a crash point, lets the worker die there: when the
// boundary's activity starts (before) or has returned (after), it holds it
// and every later activity of that Component, so no result of theirs ever
// reaches Temporal. kill() then releases them with an error over a
// connection already cut, and refuses anything else.
type faultInterceptor struct {
	interceptor.WorkerInterceptorBase
	plan map[string]boundary

	mu      sync.Mutex
	counts  map[string]int
	runs    []activityRun
	crashed map[string]activityRun
	dead    bool
	killed  chan struct{}
}

func newFaultInterceptor(plan map[string]boundary) *faultInterceptor {
	return &faultInterceptor{plan: plan, counts: map[string]int{}, crashed: map[string]activityRun{}, killed: make(chan struct{})}
}

func (f *faultInterceptor) InterceptActivity(ctx context.Context, next interceptor.ActivityInboundInterceptor) interceptor.ActivityInboundInterceptor {
	a := &faultActivity{f: f}
	a.Next = next
	return a
}

type faultActivity struct {
	interceptor.ActivityInboundInterceptorBase
	f *faultInterceptor
}

func (a *faultActivity) ExecuteActivity(ctx context.Context, in *interceptor.ExecuteActivityInput) (any, error) {
	f := a.f
	info := activity.GetInfo(ctx)
	ref, err := oda.ParseWorkflowID(info.WorkflowExecution.ID)
	if err != nil {
		return a.Next.ExecuteActivity(ctx, in)
	}
	name := strings.Replace(ref.Name, strings.TrimPrefix(ref.Namespace, "it-"), "C", 1)
	run := activityRun{
		Namespace: ref.Namespace, Key: ref.Kind + "/" + name + " " + info.ActivityType.Name,
		WorkflowID: info.WorkflowExecution.ID, RunID: info.WorkflowExecution.RunID,
		ActivityID: info.ActivityID, Attempt: info.Attempt, Local: info.IsLocalActivity, At: time.Now(),
	}
	f.mu.Lock()
	if f.dead {
		f.mu.Unlock()
		return nil, errWorkerKilled
	}
	if _, down := f.crashed[run.Namespace]; down {
		// The worker is dead for this Component: nothing more of it runs.
		f.mu.Unlock()
		<-f.killed
		return nil, errWorkerKilled
	}
	f.counts[run.Namespace+" "+run.Key]++
	run.N = f.counts[run.Namespace+" "+run.Key]
	b, planned := f.plan[run.Namespace]
	hit := planned && b.Key == run.Key && b.N == run.N
	if hit {
		f.crashed[run.Namespace] = run
	}
	f.mu.Unlock()
	if hit && b.Before {
		<-f.killed
		return nil, errWorkerKilled
	}
	res, err := a.Next.ExecuteActivity(ctx, in)
	if err != nil {
		run.Err = err.Error()
	}
	run.Done = time.Now()
	f.mu.Lock()
	f.runs = append(f.runs, run)
	f.mu.Unlock()
	if hit {
		// The side effect is done; its result dies with the worker.
		<-f.killed
		return nil, errWorkerKilled
	}
	return res, err
}

// kill makes the worker dead: held activities return an error that can no
// longer reach Temporal, and new ones are refused.
func (f *faultInterceptor) kill() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.dead {
		f.dead = true
		close(f.killed)
	}
}

// crashedAt returns the activity each Component crashed at.
func (f *faultInterceptor) crashedAt() map[string]activityRun {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]activityRun{}
	for ns, r := range f.crashed {
		out[ns] = r
	}
	return out
}

// completed lists the activities that ran to the end on this worker
// (results the worker delivered, or would have), in order.
func (f *faultInterceptor) completed(ns string) []activityRun {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []activityRun
	for _, r := range f.runs {
		if ns == "" || r.Namespace == ns {
			out = append(out, r)
		}
	}
	return out
}

// tcpProxy forwards TCP connections to a target until cut: then every
// connection drops and new ones are refused, as when the process at the
// other end dies. A worker that reaches Temporal only through it loses
// Temporal at once and for good.
type tcpProxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	conns  []net.Conn
	cut    bool
}

func startTCPProxy(t *testing.T, target string) *tcpProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("proxy listen: %v", err)
	}
	p := &tcpProxy{ln: ln, target: target}
	go p.serve()
	t.Cleanup(p.Cut)
	return p
}

func (p *tcpProxy) Addr() string { return p.ln.Addr().String() }

func (p *tcpProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = c.Close()
			continue
		}
		p.mu.Lock()
		if p.cut {
			p.mu.Unlock()
			_ = c.Close()
			_ = up.Close()
			return
		}
		p.conns = append(p.conns, c, up)
		p.mu.Unlock()
		go func() { _, _ = io.Copy(up, c); _ = up.Close() }()
		go func() { _, _ = io.Copy(c, up); _ = c.Close() }()
	}
}

// Cut drops every connection and stops accepting new ones.
func (p *tcpProxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cut {
		return
	}
	p.cut = true
	_ = p.ln.Close()
	for _, c := range p.conns {
		_ = c.Close()
	}
}

// creationLog watches kinds of objects in namespaces with a prefix and
// records every uid each name ever had: an object deleted and created
// again shows two.
type creationLog struct {
	mu   sync.Mutex
	uids map[string]map[string]bool
	errs []string
	// phases is every Component's deployment_status as the watch saw it
	// change, by namespace: a failure's timeline.
	phases map[string][]phaseChange
}

// phaseChange is a Component's deployment_status seen at a time.
type phaseChange struct {
	At              time.Time
	ResourceVersion string
	Phase           string
}

// Kinds whose creation the fault tests count: the Component's children,
// the gateway objects and the credentials Secret.
var countedKinds = map[string]schema.GroupVersionResource{
	"Component":      oda.KindComponent.GVR(),
	"ExposedAPI":     oda.KindExposedAPI.GVR(),
	"IdentityConfig": oda.KindIdentityConfig.GVR(),
	"VirtualService": virtualServices,
	"ServiceMonitor": serviceMonitors,
	"Secret":         {Version: "v1", Resource: "secrets"},
}

func watchCreations(t *testing.T, prefix string) *creationLog {
	t.Helper()
	l := &creationLog{uids: map[string]map[string]bool{}, phases: map[string][]phaseChange{}}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	for kind, gvr := range countedKinds {
		list, err := stack.dyn.Resource(gvr).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatalf("list %s: %v", kind, err)
		}
		for i := range list.Items {
			l.record(kind, prefix, &list.Items[i])
		}
		go l.follow(ctx, kind, gvr, prefix, list.GetResourceVersion())
	}
	return l
}

// follow watches from rv, starting again from the last version seen when
// the apiserver ends the watch.
func (l *creationLog) follow(ctx context.Context, kind string, gvr schema.GroupVersionResource, prefix, rv string) {
	for ctx.Err() == nil {
		w, err := stack.dyn.Resource(gvr).Watch(ctx, metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true})
		if err != nil {
			if ctx.Err() == nil {
				time.Sleep(200 * time.Millisecond) // the apiserver may be restarting
			}
			continue
		}
		for ev := range w.ResultChan() {
			if ev.Type == watch.Error {
				l.mu.Lock()
				l.errs = append(l.errs, fmt.Sprintf("watch %s: %v", kind, apierrors.FromObject(ev.Object)))
				l.mu.Unlock()
				continue
			}
			u, ok := ev.Object.(*unstructured.Unstructured)
			if !ok {
				continue
			}
			rv = u.GetResourceVersion()
			if ev.Type != watch.Bookmark {
				l.record(kind, prefix, u)
			}
		}
		w.Stop()
	}
}

func (l *creationLog) record(kind, prefix string, u *unstructured.Unstructured) {
	if !strings.HasPrefix(u.GetNamespace(), prefix) {
		return
	}
	key := kind + " " + u.GetNamespace() + "/" + u.GetName()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.uids[key] == nil {
		l.uids[key] = map[string]bool{}
	}
	l.uids[key][string(u.GetUID())] = true
	if kind == "Component" {
		phase := deploymentStatus(u)
		seen := l.phases[u.GetNamespace()]
		if len(seen) == 0 || seen[len(seen)-1].Phase != phase {
			l.phases[u.GetNamespace()] = append(seen, phaseChange{At: time.Now(), ResourceVersion: u.GetResourceVersion(), Phase: phase})
		}
	}
}

// phaseChanges returns the deployment_status changes seen in ns.
func (l *creationLog) phaseChanges(ns string) []phaseChange {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]phaseChange(nil), l.phases[ns]...)
}

// objects counts the objects of each kind ever seen in ns, and lists those
// created more than once.
func (l *creationLog) objects(ns string) (perKind map[string]int, twice []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	perKind = map[string]int{}
	for key, uids := range l.uids {
		kind, rest, _ := strings.Cut(key, " ")
		if !strings.HasPrefix(rest, ns+"/") {
			continue
		}
		perKind[kind]++
		if len(uids) > 1 {
			twice = append(twice, fmt.Sprintf("%s (%d uids)", key, len(uids)))
		}
	}
	sort.Strings(twice)
	return perKind, twice
}

// keycloakWrites counts the Keycloak double's write requests (logins
// aside) from index from on, by method, path shape (ids replaced) and
// status; with clients, only the requests about those clients (or their
// service-account users).
func keycloakWrites(from int, clients ...string) map[string]int {
	out := map[string]int{}
	for _, r := range stack.keycloak.Requests()[from:] {
		if r.Method == "GET" || strings.HasSuffix(r.Path, "/protocol/openid-connect/token") {
			continue // reads, and logins: each worker logs in once
		}
		if len(clients) > 0 && !slices.Contains(clients, r.ClientID) && !slices.Contains(clients, r.ServiceAccountOf) {
			continue // another test's client (an earlier test's cleanup)
		}
		parts := strings.Split(r.Path, "/")
		// /admin/realms/{realm}/clients/{id}/...: keep the words, not the ids.
		for i := range parts {
			if i > 0 && (parts[i-1] == "clients" || parts[i-1] == "users" || parts[i-1] == "roles" || parts[i-1] == "realms") {
				parts[i] = "*"
			}
		}
		out[fmt.Sprintf("%s %s %d", r.Method, strings.Join(parts, "/"), r.Status)]++
	}
	return out
}
