package main

import (
	"bufio"
	"context"
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/odaflow/odaflow/internal/doubles/keycloak"
	"github.com/odaflow/odaflow/internal/localstack"
	"github.com/odaflow/odaflow/oda"
	"github.com/odaflow/odaflow/tests/fixtures"
	"github.com/odaflow/odaflow/tests/kit"
)

type benchEnv struct {
	kube     *localstack.Kube
	temporal *localstack.Temporal
	// postgres is the production-shape Temporal server's database, nil on
	// the dev server; its CPU is reported with Temporal's.
	postgres *localstack.Postgres
	// temporalKind names the Temporal server the figures were taken on.
	temporalKind string
	tc           client.Client
	bin          string
	work         string
	root         string
	dyn          dynamic.Interface
	core         kubernetes.Interface
	// keycloak is the identity platform's double, so the identity step
	// runs as in production rather than failing for want of one.
	keycloak *keycloak.Server
	// hubs stands in for the components' event hubs, the worker's HTTP
	// proxy; listenerKeyFile holds the worker's listener key.
	hubs            *componentHubs
	listenerKeyFile string
	// env is added to the worker's and watcher's environment.
	env []string
}

// identity starts the Keycloak double with the Canvas's realm and puts its
// admin credentials in a Secret, as a Canvas install does; and the
// components' hubs with a key for the worker's identity listener.
func (e *benchEnv) identity(ctx context.Context) error {
	hubs, err := startComponentHubs()
	if err != nil {
		return err
	}
	e.hubs = hubs
	e.listenerKeyFile = filepath.Join(e.work, "listener-key")
	if err := os.WriteFile(e.listenerKeyFile, []byte(rand.String(48)+"\n"), 0o600); err != nil {
		return fmt.Errorf("listener key: %w", err)
	}
	password := rand.String(24)
	kc, err := keycloak.New(keycloak.Options{AdminPassword: password})
	if err != nil {
		return err
	}
	if err := kc.SeedCanvas("odari"); err != nil {
		return err
	}
	e.keycloak = kc
	_, _ = e.core.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "odaflow-system"}}, metav1.CreateOptions{})
	_, err = e.core.CoreV1().Secrets("odaflow-system").Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "keycloak-admin"},
		Data:       map[string][]byte{"username": []byte(keycloak.AdminUser), "password": []byte(password)},
	}, metav1.CreateOptions{})
	return err
}

func numCPU() int { return runtime.NumCPU() }

// ingress creates the Istio ingress Service with an address, as a cloud
// load balancer would.
func (e *benchEnv) ingress(ctx context.Context) error {
	_, _ = e.core.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "istio-ingress"}}, metav1.CreateOptions{})
	svc, err := e.core.CoreV1().Services("istio-ingress").Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "istio-ingress", Namespace: "istio-ingress", Labels: map[string]string{"istio": "ingressgateway"}},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Name: "http2", Port: 80}, {Name: "https", Port: 443}}},
	}, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "34.159.217.74"}}
	_, err = e.core.CoreV1().Services("istio-ingress").UpdateStatus(ctx, svc, metav1.UpdateOptions{})
	return err
}

var implementations = []string{"ctk-prodcatapi", "ctk-productcatalogmanagement-sm", "ctk-partyroleapi"}

// component is a productcatalog Component of the Canvas's measured shape
// (3 exposed APIs) with API paths of its own.
func component(ns, name string) *unstructured.Unstructured {
	return fixtures.WithOwnPaths(fixtures.WithoutAPI(fixtures.WithoutDependentAPIs(fixtures.ProductCatalog(ns, name)), "promotionmanagement"))
}

// namespace creates ns with ready EndpointSlices for the implementation
// Services, so that ExposedAPIs there can become ready.
func (e *benchEnv) namespace(ctx context.Context, ns string) error {
	if _, err := e.core.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create namespace %s: %w", ns, err)
	}
	ready := true
	for _, impl := range implementations {
		_, err := e.core.DiscoveryV1().EndpointSlices(ns).Create(ctx, &discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Name: impl + "-x", Namespace: ns, Labels: map[string]string{discoveryv1.LabelServiceName: impl}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"10.244.0.9"}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}},
		}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create EndpointSlice %s/%s: %w", ns, impl, err)
		}
	}
	return nil
}

type proc struct {
	name string
	cmd  *exec.Cmd
	addr string
}

func freeAddr() string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func (e *benchEnv) start(ctx context.Context, name, queue, namespaces string) (*proc, error) {
	addr := freeAddr()
	cmd := exec.Command(e.bin, name)
	cmd.Env = append(os.Environ(),
		"KUBECONFIG="+e.kube.KubeconfigPath,
		"ODAFLOW_TEMPORAL_ADDRESS="+e.temporal.Address,
		"ODAFLOW_TASK_QUEUE="+queue,
		"ODAFLOW_NAMESPACES="+namespaces,
		"ODAFLOW_HTTP_ADDRESS="+addr,
		"ODAFLOW_LEADER_ELECT=false",
		"ODAFLOW_LOG_LEVEL=warn",
		"ODAFLOW_KEYCLOAK_URL="+e.keycloak.URL(),
		"ODAFLOW_KEYCLOAK_ADMIN_SECRET=odaflow-system/keycloak-admin",
	)
	if name == "worker" {
		// The identity listener as a Canvas install configures it, and the
		// hubs reached through componentHubs.
		cmd.Env = append(cmd.Env,
			"HTTP_PROXY="+e.hubs.proxyURL(),
			"ODAFLOW_LISTENER_BASE_URL=http://"+addr,
			"ODAFLOW_LISTENER_KEY_FILE="+e.listenerKeyFile,
		)
	}
	cmd.Env = append(cmd.Env, e.env...)
	// Appended to, so a restarted process's log follows its predecessor's.
	logf, err := os.OpenFile(filepath.Join(e.work, name+"-"+queue+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &proc{name: name, cmd: cmd, addr: addr}
	// The watcher is ready once its informers have listed the cluster: tens
	// of seconds with the storm's 50,000 objects.
	deadline := time.Now().Add(5 * time.Minute)
	for time.Now().Before(deadline) {
		resp, err := http.Get("http://" + addr + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return p, nil
			}
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	_ = cmd.Process.Kill()
	return nil, fmt.Errorf("%s did not become ready; see %s", name, logf.Name())
}

func (p *proc) stop() {
	_ = p.cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { _ = p.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
	}
}

// machineCPUSeconds is the CPU time the machine has spent busy (every
// state but idle and iowait) and in all, summed over its CPUs, from
// /proc/stat.
func machineCPUSeconds() (busy, all float64) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	fields := strings.Fields(line)
	if len(fields) < 6 || fields[0] != "cpu" {
		return 0, 0
	}
	// user nice system idle iowait irq softirq steal (guest time is
	// already counted in user).
	for i, f := range fields[1:min(len(fields), 9)] {
		v, _ := strconv.ParseFloat(f, 64)
		all += v / 100 // USER_HZ
		if i != 3 && i != 4 {
			busy += v / 100
		}
	}
	return busy, all
}

// selfCPUSeconds is the bench process's own CPU time, without the
// processes it started (whose CPU, once reaped, is counted as its own
// children's).
func selfCPUSeconds() float64 {
	st, ok := readProcStat("self")
	if !ok {
		return 0
	}
	return st.own
}

// procStat is what the bench reads of /proc/<pid>/stat.
type procStat struct {
	ppid int
	// own is the process's CPU (utime+stime), reaped the CPU of its
	// children that have exited and been waited for (cutime+cstime).
	own, reaped float64
}

func readProcStat(pid string) (procStat, bool) {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return procStat{}, false // gone meanwhile
	}
	s := string(b)
	// Fields after "(comm) ": state is [0], ppid [1], utime [11],
	// stime [12], cutime [13], cstime [14], in USER_HZ ticks.
	fields := strings.Fields(s[strings.LastIndex(s, ")")+2:])
	if len(fields) < 15 {
		return procStat{}, false
	}
	var ticks [4]float64
	for i, f := range fields[11:15] {
		ticks[i], _ = strconv.ParseFloat(f, 64)
	}
	ppid, _ := strconv.Atoi(fields[1])
	return procStat{ppid: ppid, own: (ticks[0] + ticks[1]) / 100, reaped: (ticks[2] + ticks[3]) / 100}, true
}

// treeCPUSeconds is the CPU time of a process and of its descendants,
// live ones (utime+stime) and reaped ones (cutime+cstime): PostgreSQL
// serves each connection from a child process of its postmaster.
func treeCPUSeconds(root int) float64 {
	return treesCPUSeconds(map[string]int{"": root})[""]
}

// treesCPUSeconds is treeCPUSeconds for several roots (name -> pid), from
// one pass over /proc.
func treesCPUSeconds(roots map[string]int) map[string]float64 {
	procs := map[int]procStat{}
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		if st, ok := readProcStat(d.Name()); ok {
			procs[pid] = st
		}
	}
	rootName := map[int]string{}
	for name, pid := range roots {
		rootName[pid] = name
	}
	total := make(map[string]float64, len(roots))
	for pid, p := range procs {
		// Counted under the nearest root above it (or itself).
		for up := pid; up > 1; up = procs[up].ppid {
			if name, ok := rootName[up]; ok {
				total[name] += p.own + p.reaped
				break
			}
		}
	}
	return total
}

// peakRSSMiB reads VmHWM.
func peakRSSMiB(pid int) float64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "VmHWM:") {
			kb, _ := strconv.ParseFloat(strings.Fields(sc.Text())[1], 64)
			return kb / 1024
		}
	}
	return 0
}

// kubeRequests scrapes odaflow_kube_requests_total: the total and the 409s.
func kubeRequests(addr string) (total, conflicts float64) {
	m, _ := scrape(addr)
	total, conflicts, _ = m.kubeRequests()
	return total, conflicts
}

// kubeRequests reads odaflow_kube_requests_total from one scrape: the
// total, the 409s and the split by method.
func (m metrics) kubeRequests() (total, conflicts float64, byMethod map[string]float64) {
	return m.sum(kubeRequestsTotal), m.sum(kubeRequestsTotal, `code="409"`), m.by(kubeRequestsTotal, "method")
}

const kubeRequestsTotal = "odaflow_kube_requests_total"

// byLabels is one metric of a scrape, keyed by its label set as printed
// ({method="PATCH",resource="exposedapis"}).
func (m metrics) byLabels(name string) map[string]float64 {
	out := map[string]float64{}
	for series, v := range m {
		if seriesName(series) == name {
			out[series[len(name):]] += v
		}
	}
	return out
}

type compTimes struct {
	applied  time.Time
	children time.Time
	exposed  time.Time
	seen     map[string]bool
	ready    map[string]bool
	// seenAt and exposedAt are when each API was first seen and first
	// exposed (BENCH_TIMELINE).
	seenAt, exposedAt map[string]time.Time
}

func newCompTimes() *compTimes {
	return &compTimes{seen: map[string]bool{}, ready: map[string]bool{}, seenAt: map[string]time.Time{}, exposedAt: map[string]time.Time{}}
}

// warmupName is the Component each size applies, and waits for, before
// its measured ones: it pays for what only a freshly started stack pays
// (connections, sticky caches, the apiserver's first requests on each
// resource), which the Canvas it is compared with had long paid.
const warmupName = "warmup"

func (e *benchEnv) runSize(ctx context.Context, round, n, concurrency int, warmup bool, timeout time.Duration) (Result, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	ns := fmt.Sprintf("bench-%d-%d", round, n)
	queue := ns
	if err := e.namespace(ctx, ns); err != nil {
		return Result{}, err
	}
	worker, err := e.start(ctx, "worker", queue, ns)
	if err != nil {
		return Result{}, err
	}
	defer worker.stop()
	watcher, err := e.start(ctx, "watcher", queue, ns)
	if err != nil {
		return Result{}, err
	}
	defer watcher.stop()

	// Follow the ExposedAPIs with an informer (a watch that relists when the
	// apiserver closes it): no polling load on the apiserver.
	times := map[string]*compTimes{}
	var mu sync.Mutex
	var exposedCount atomic.Int64
	allExposed, warmed := make(chan struct{}), make(chan struct{})
	observe := func(obj any) {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return
		}
		comp := u.GetLabels()[oda.LabelComponentName]
		now := time.Now()
		mu.Lock()
		defer mu.Unlock()
		t := times[comp]
		if t == nil {
			t = newCompTimes()
			times[comp] = t
		}
		t.seen[u.GetName()] = true
		if _, ok := t.seenAt[u.GetName()]; !ok {
			t.seenAt[u.GetName()] = now
		}
		if len(t.seen) == 3 && t.children.IsZero() {
			t.children = now
		}
		url, _, _ := unstructured.NestedString(u.Object, "status", "apiStatus", "url")
		rdy, _, _ := unstructured.NestedBool(u.Object, "status", "implementation", "ready")
		t.ready[u.GetName()] = url != "" && rdy
		if _, ok := t.exposedAt[u.GetName()]; !ok && url != "" && rdy {
			t.exposedAt[u.GetName()] = now
		}
		count := 0
		for _, r := range t.ready {
			if r {
				count++
			}
		}
		if count == 3 && t.exposed.IsZero() {
			t.exposed = now
			if comp == warmupName {
				close(warmed)
				return
			}
			if exposedCount.Add(1) == int64(n) {
				close(allExposed)
			}
		}
	}
	factory := dynamicinformer.NewFilteredDynamicSharedInformerFactory(e.dyn, 0, ns, nil)
	inf := factory.ForResource(oda.KindExposedAPI.GVR()).Informer()
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: observe, UpdateFunc: func(_, obj any) { observe(obj) }})
	stopInformer := make(chan struct{})
	defer close(stopInformer)
	factory.Start(stopInformer)
	factory.WaitForCacheSync(stopInformer)
	if warmup {
		if _, err := e.dyn.Resource(oda.KindComponent.GVR()).Namespace(ns).Create(ctx, component(ns, warmupName), metav1.CreateOptions{}); err != nil {
			return Result{}, fmt.Errorf("create the warm-up Component: %w", err)
		}
		select {
		case <-warmed:
		case <-ctx.Done():
			return Result{}, fmt.Errorf("the warm-up Component was not exposed before the timeout")
		}
		// Its last writes (the Component's summary, its Events) come after
		// its APIs are exposed: let them land before the counters are read.
		if err := e.awaitComplete(ctx, ns, warmupName); err != nil {
			return Result{}, err
		}
		time.Sleep(2 * time.Second)
	}

	pids := map[string]int{"worker": worker.cmd.Process.Pid, "watcher": watcher.cmd.Process.Pid, "temporal": e.temporal.Pid(), "apiserver": e.kube.Pids()["kube-apiserver"]}
	if e.postgres != nil {
		pids["postgres"] = e.postgres.Pid()
	}
	// cpuOf reads the CPU every process has spent so far: the four of the
	// per-Component figure (and PostgreSQL), etcd, and the bench itself.
	etcd := e.kube.Pids()["etcd"]
	roots := maps.Clone(pids)
	roots["etcd"] = etcd
	cpuOf := func() map[string]float64 {
		c := treesCPUSeconds(roots)
		c["bench"] = selfCPUSeconds()
		return c
	}
	// One scrape of the worker at each end of the size: its requests, their
	// split by resource and its retries all come from it.
	worker0, _ := scrape(worker.addr)
	req0w, c0w, m0 := worker0.kubeRequests()
	byRes0 := worker0.byLabels("odaflow_kube_requests_by_resource_total")
	req0v, c0v := kubeRequests(watcher.addr)
	subscribed0, _, refused0 := e.hubs.counts()

	var perf *perfRecording
	var perfFocus *regexp.Regexp
	if f := os.Getenv("BENCH_PERF_FOCUS"); f != "" {
		if perfFocus, err = regexp.Compile(f); err != nil {
			return Result{}, fmt.Errorf("BENCH_PERF_FOCUS: %w", err)
		}
	}
	if os.Getenv("BENCH_PERF") != "" {
		profiled := maps.Clone(pids)
		profiled["etcd"] = e.kube.Pids()["etcd"]
		if perf, err = startPerf(e.work, fmt.Sprintf("N%d", n), profiled); err != nil {
			return Result{}, err
		}
		defer func() { _ = perf.stop() }() // when the size fails midway
	}
	cpu0 := cpuOf()
	busy0, _ := machineCPUSeconds()
	start := time.Now()
	sem := make(chan struct{}, concurrency)
	var wg sync.WaitGroup
	var createErr atomic.Value
	for i := range n {
		name := fmt.Sprintf("bench%d-%04d", n, i)
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			applied := time.Now()
			if _, err := e.dyn.Resource(oda.KindComponent.GVR()).Namespace(ns).Create(ctx, component(ns, name), metav1.CreateOptions{}); err != nil {
				createErr.Store(err)
				return
			}
			mu.Lock()
			t := times[name]
			if t == nil {
				t = newCompTimes()
				times[name] = t
			}
			t.applied = applied
			mu.Unlock()
		}()
	}
	wg.Wait()
	if err, _ := createErr.Load().(error); err != nil {
		return Result{}, fmt.Errorf("create: %w", err)
	}
	select {
	case <-allExposed:
	case <-ctx.Done():
		return Result{}, fmt.Errorf("only %d of %d Components fully exposed before the timeout", exposedCount.Load(), n)
	}
	wall := time.Since(start)
	busy1, _ := machineCPUSeconds()
	cpuExposed := cpuOf()
	if perf != nil {
		// Only the measured window: the apply and its workflows, not the
		// settling below.
		if err := perf.stop(); err != nil {
			return Result{}, err
		}
		if err := perf.report(os.Stdout, 30, perfFocus); err != nil {
			return Result{}, err
		}
	}
	// Let the last status writes (Component summaries) land before counting.
	time.Sleep(2 * time.Second)

	r := Result{N: n, Temporal: e.temporalKind, WallSeconds: wall.Seconds(), CPUSeconds: map[string]float64{}, PeakRSSMiB: map[string]float64{}, Completed: int(exposedCount.Load()), Warmup: warmup}
	cpu1 := cpuOf()
	total := 0.0
	r.OtherCPUSeconds, r.WindowCPUSeconds = map[string]float64{}, map[string]float64{}
	for k := range cpu1 {
		r.WindowCPUSeconds[k] = cpuExposed[k] - cpu0[k]
		if _, counted := pids[k]; !counted {
			r.OtherCPUSeconds[k] = cpu1[k] - cpu0[k]
			continue
		}
		r.CPUSeconds[k] = cpu1[k] - cpu0[k]
		total += r.CPUSeconds[k]
	}
	r.CPUSecondsPerComponent = total / float64(n)
	r.MachineBusyCores = (busy1 - busy0) / wall.Seconds()
	r.PeakRSSMiB["worker"] = peakRSSMiB(pids["worker"])
	r.PeakRSSMiB["watcher"] = peakRSSMiB(pids["watcher"])
	worker1, _ := scrape(worker.addr)
	req1w, c1w, m1 := worker1.kubeRequests()
	r.WorkerRequestsByMethod = map[string]float64{}
	for m, v := range m1 {
		r.WorkerRequestsByMethod[m] = (v - m0[m]) / float64(n)
	}
	r.WorkerRequestsByResource = map[string]float64{}
	for k, v := range worker1.byLabels("odaflow_kube_requests_by_resource_total") {
		if d := (v - byRes0[k]) / float64(n); d > 0 {
			r.WorkerRequestsByResource[k] = d
		}
	}
	r.WorkerRetries = retriesOf(worker1.minus(worker0))
	req1v, c1v := kubeRequests(watcher.addr)
	r.KubeRequestsPerComp = (req1w - req0w + req1v - req0v) / float64(n)
	r.Conflicts409 = int(c1w - c0w + c1v - c0v)
	subscribed1, _, refused1 := e.hubs.counts()
	r.HubSubscriptionsPerComp = float64(subscribed1-subscribed0) / float64(n)
	r.HubRefused = refused1 - refused0

	var children, exposed []float64
	mu.Lock()
	var names []string
	for name, t := range times {
		if t.applied.IsZero() {
			continue
		}
		names = append(names, name)
		children = append(children, t.children.Sub(t.applied).Seconds())
		exposed = append(exposed, t.exposed.Sub(t.applied).Seconds())
	}
	mu.Unlock()
	r.ChildrenCreated, r.AllExposed = percentiles(children), percentiles(exposed)
	r.HistoryEventsPerComp, r.WorkflowTaskTroubles = e.historyStats(ctx, ns, names)
	if os.Getenv("BENCH_TIMELINE") != "" {
		// A copy, so the informer is not held up while the histories are read.
		mu.Lock()
		snapshot := make(map[string]*compTimes, len(times))
		for name, t := range times {
			snapshot[name] = &compTimes{applied: t.applied, seenAt: maps.Clone(t.seenAt), exposedAt: maps.Clone(t.exposedAt)}
		}
		mu.Unlock()
		writeTimeline(ctx, os.Stdout, e.tc, ns, snapshot)
	}
	if os.Getenv("BENCH_DEBUG") != "" && len(names) > 0 {
		kit.WriteHistory(ctx, os.Stdout, e.tc, oda.WorkflowID("Component", ns, names[0]))
		kit.WriteHistory(ctx, os.Stdout, e.tc, oda.WorkflowID("ExposedAPI", ns, names[0]+"-metrics"))
		kit.WriteHistory(ctx, os.Stdout, e.tc, oda.WorkflowID("IdentityConfig", ns, names[0]))
	}
	return r, nil
}

// awaitComplete polls one Component until its status says Complete.
func (e *benchEnv) awaitComplete(ctx context.Context, ns, name string) error {
	for {
		u, err := e.dyn.Resource(oda.KindComponent.GVR()).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		if err == nil && componentStatus(u) == oda.StatusComplete {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("component %s/%s not Complete: %w", ns, name, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// historyStats reads the histories of up to 50 of the Components: the
// events per Component (its workflow's and its 3 ExposedAPIs'), and the
// workflow tasks that timed out or failed in those and its IdentityConfig's,
// per Component. A task that times out after it started runs again, and
// its local activities with it: under overload that is where repeated
// writes and first-write conflicts come from.
func (e *benchEnv) historyStats(ctx context.Context, ns string, names []string) (events float64, troubles map[string]float64) {
	sort.Strings(names)
	if len(names) > 50 {
		names = names[:50]
	}
	total := 0
	counts := map[string]int{}
	for _, name := range names {
		ids := []string{oda.WorkflowID("Component", ns, name)}
		for _, api := range []string{"productcatalogmanagement-v4", "metrics", "partyrole-v4"} {
			ids = append(ids, oda.WorkflowID("ExposedAPI", ns, name+"-"+api))
		}
		for i, id := range append(ids, oda.WorkflowID("IdentityConfig", ns, name)) {
			it := e.tc.GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
			for it.HasNext() {
				ev, err := it.Next()
				if err != nil {
					break
				}
				if i < len(ids) {
					total++
				}
				switch ev.GetEventType() {
				case enumspb.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT:
					counts["timed out ("+strings.ToLower(strings.TrimPrefix(ev.GetWorkflowTaskTimedOutEventAttributes().GetTimeoutType().String(), "TIMEOUT_TYPE_"))+")"]++
				case enumspb.EVENT_TYPE_WORKFLOW_TASK_FAILED:
					counts["failed ("+strings.ToLower(strings.TrimPrefix(ev.GetWorkflowTaskFailedEventAttributes().GetCause().String(), "WORKFLOW_TASK_FAILED_CAUSE_"))+")"]++
				}
			}
		}
	}
	if len(names) == 0 {
		return 0, nil
	}
	troubles = map[string]float64{}
	for k, v := range counts {
		troubles[k] = float64(v) / float64(len(names))
	}
	return float64(total) / float64(len(names)), troubles
}

func percentiles(v []float64) Percentiles {
	if len(v) == 0 {
		return Percentiles{}
	}
	sort.Float64s(v)
	at := func(q float64) float64 {
		i := int(q*float64(len(v))+0.999999) - 1
		if i < 0 {
			i = 0
		}
		if i >= len(v) {
			i = len(v) - 1
		}
		return v[i]
	}
	return Percentiles{P50: at(0.50), P95: at(0.95), P99: at(0.99), Max: v[len(v)-1]}
}
