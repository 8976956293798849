package integration

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"text/tabwriter"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.uber.org/fx"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/odaflow/odaflow/internal/config"
	"github.com/odaflow/odaflow/oda"
	"github.com/odaflow/odaflow/watcher"
)

// watcherLatencyResult is what TestWatcherEventToSignalLatency writes to
// results/watcher-latency.json.
type watcherLatencyResult struct {
	Date        string `json:"date"`
	Machine     string `json:"machine"`
	N           int    `json:"n"`
	Concurrency int    `json:"concurrency"`
	// CreateSeconds is the wall time of the N create calls.
	CreateSeconds float64 `json:"createSeconds"`
	// EventToSignalSeconds runs from a create call returning to the first
	// WorkflowExecutionSignaled event of the Component's workflow (its
	// history event time): watch delivery, the watcher's decision and the
	// signal-with-start round trip.
	EventToSignalSeconds watcherPercentiles `json:"eventToSignalSeconds"`
	Signalled            int                `json:"signalled"`
}

type watcherPercentiles struct {
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P99  float64 `json:"p99"`
	Max  float64 `json:"max"`
	Mean float64 `json:"mean"`
}

func watcherPercentilesOf(d []time.Duration) watcherPercentiles {
	if len(d) == 0 {
		return watcherPercentiles{}
	}
	s := slices.Clone(d)
	slices.Sort(s)
	at := func(p int) float64 { return s[min(len(s)-1, len(s)*p/100)].Seconds() }
	var sum time.Duration
	for _, x := range s {
		sum += x
	}
	return watcherPercentiles{P50: at(50), P90: at(90), P99: at(99), Max: s[len(s)-1].Seconds(), Mean: (sum / time.Duration(len(s))).Seconds()}
}

// TestWatcherEventToSignalLatency measures, on the real apiserver and
// Temporal server, how long a new Component waits for its workflow's first
// signal. It is a measurement, not a pass/fail test:
//
//	ODAFLOW_BENCH=1 go test ./tests/integration/ -run TestWatcherEventToSignalLatency -v
//
// (ODAFLOW_BENCH_N changes the number of Components, 1000 by default.)
func TestWatcherEventToSignalLatency(t *testing.T) {
	if os.Getenv("ODAFLOW_BENCH") != "1" {
		t.Skip("a measurement: ODAFLOW_BENCH=1 go test ./tests/integration/ -run TestWatcherEventToSignalLatency -v")
	}
	n := 1000
	if s := os.Getenv("ODAFLOW_BENCH_N"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 {
			t.Fatalf("ODAFLOW_BENCH_N=%q: want a positive number", s)
		}
		n = v
	}
	const concurrency = 8
	ns := "it-watcher-latency"
	createNamespace(t, ns)
	ctx := context.Background()
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("lat-%04d", i)
	}

	// Create the Components, each tiny and valid, from a few goroutines,
	// noting when each create call returned.
	created := make([]time.Time, n)
	errs := make([]error, n)
	next := make(chan int)
	var wg sync.WaitGroup
	start := time.Now()
	for range concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				u := &unstructured.Unstructured{Object: map[string]any{
					"apiVersion": oda.APIVersion, "kind": oda.KindComponent.Name,
					"metadata": map[string]any{"name": names[i], "namespace": ns},
					"spec":     map[string]any{"securityFunction": map[string]any{"canvasSystemRole": "Admin"}},
				}}
				_, errs[i] = stack.dyn.Resource(oda.KindComponent.GVR()).Namespace(ns).Create(ctx, u, metav1.CreateOptions{})
				created[i] = time.Now()
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	createWall := time.Since(start)
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("create: %v", err)
	}
	t.Logf("%d Components created in %s", n, createWall.Round(time.Millisecond))

	// Read each workflow's first signal from its history.
	signalled := make([]time.Time, n)
	pending := make([]int, n)
	for i := range pending {
		pending[i] = i
	}
	deadline := time.Now().Add(10 * time.Minute)
	var last string
	for len(pending) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d Components never had their workflow signalled; last: %s", len(pending), n, last)
		}
		var still []int
		for _, i := range pending {
			at, err := firstSignalTime(ctx, oda.WorkflowID(oda.KindComponent.Name, ns, names[i]))
			if err != nil || at.IsZero() {
				still = append(still, i)
				last = fmt.Sprintf("%s: %v", names[i], err)
				continue
			}
			signalled[i] = at
		}
		pending = still
		if len(pending) > 0 {
			time.Sleep(500 * time.Millisecond)
		}
	}
	lat := make([]time.Duration, n)
	for i := range n {
		lat[i] = signalled[i].Sub(created[i])
	}
	res := watcherLatencyResult{
		Date:    time.Now().UTC().Format(time.RFC3339),
		Machine: fmt.Sprintf("%s/%s, %d CPUs", runtime.GOOS, runtime.GOARCH, runtime.NumCPU()),
		N:       n, Concurrency: concurrency, CreateSeconds: createWall.Seconds(),
		EventToSignalSeconds: watcherPercentilesOf(lat), Signalled: n,
	}

	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "Components\tcreate wall\tp50\tp90\tp99\tmax\tmean\t\n")
	p := res.EventToSignalSeconds
	ms := func(s float64) string { return fmt.Sprintf("%.1f ms", s*1000) }
	fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t\n", n, createWall.Round(time.Millisecond), ms(p.P50), ms(p.P90), ms(p.P99), ms(p.Max), ms(p.Mean))
	_ = tw.Flush()
	t.Logf("create returned → first WorkflowExecutionSignaled (history event time):\n%s", b.String())

	writeResult(t, "watcher-latency.json", res)
}

// firstSignalTime is the event time of the first WorkflowExecutionSignaled
// event of a workflow's current run; zero while there is none.
func firstSignalTime(ctx context.Context, workflowID string) (time.Time, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	it := stack.tc.GetWorkflowHistory(ctx, workflowID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			var notFound *serviceerror.NotFound
			if errors.As(err, &notFound) {
				return time.Time{}, nil
			}
			return time.Time{}, err
		}
		if ev.GetEventType() == enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED {
			return ev.GetEventTime().AsTime(), nil
		}
	}
	return time.Time{}, nil
}

// TestWatcherLeaderElection runs two more watchers that elect a leader with
// one Lease: exactly one holds it, and when it stops the other takes over.
// They serve a namespace pattern that matches nothing and another task
// queue, so that the suite's own watcher stays the only one that acts.
func TestWatcherLeaderElection(t *testing.T) {
	ns := "it-leader-election"
	createNamespace(t, ns)
	const leaseName = "odaflow-watcher-it"
	common := stack.common
	common.TaskQueue = "odaflow-it-leader-election"
	common.Namespaces = []string{"it-leader-election-serves-nothing"}
	identities := []string{"watcher-a", "watcher-b"}
	apps := map[string]*fx.App{}
	var mu sync.Mutex
	stopped := map[string]bool{}
	stop := func(id string) {
		mu.Lock()
		done := stopped[id]
		stopped[id] = true
		mu.Unlock()
		if !done {
			stopApp(apps[id])
		}
	}
	for _, id := range identities {
		app := watcher.NewApp(config.Watcher{
			Common: common, LeaderElect: true,
			LeaderElectionNamespace: ns, LeaderElectionID: leaseName, Identity: id,
		})
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err := app.Start(ctx)
		cancel()
		if err != nil {
			t.Fatalf("start watcher %s: %v", id, err)
		}
		apps[id] = app
		t.Cleanup(func() { stop(id) })
	}

	holder := func() (string, error) {
		l, err := stack.core.CoordinationV1().Leases(ns).Get(context.Background(), leaseName, metav1.GetOptions{})
		if err != nil {
			return "", err
		}
		if l.Spec.HolderIdentity == nil {
			return "", nil
		}
		return *l.Spec.HolderIdentity, nil
	}
	var leader string
	eventually(t, 30*time.Second, "one of the two watchers holds the Lease", func() (bool, string) {
		h, err := holder()
		if err != nil {
			if apierrors.IsNotFound(err) {
				return false, "no Lease yet"
			}
			return false, err.Error()
		}
		leader = h
		return slices.Contains(identities, h), fmt.Sprintf("holder %q", h)
	})
	other := identities[0]
	if other == leader {
		other = identities[1]
	}
	t.Logf("%s leads, %s stands by", leader, other)

	// The standby does not take the Lease while the leader renews it:
	// watch it over a few of the standby's retry periods (2 s).
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(250 * time.Millisecond) {
		if h, err := holder(); err != nil || h != leader {
			t.Fatalf("the Lease moved while its holder ran: holder %q, err %v", h, err)
		}
	}

	// The leader stops (releasing the Lease): the standby takes it.
	stop(leader)
	since := time.Now()
	eventually(t, 30*time.Second, other+" takes the Lease over", func() (bool, string) {
		h, err := holder()
		if err != nil {
			return false, err.Error()
		}
		return h == other, fmt.Sprintf("holder %q", h)
	})
	t.Logf("%s took the Lease over %s after %s stopped", other, time.Since(since).Round(time.Millisecond), leader)
}
