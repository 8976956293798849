package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/odaflow/odaflow/oda"
)

// stages splits the path from a Component's apply to one of its APIs
// exposed into the hops between processes, from the workflow histories and
// the bench's own observations: where the time goes under load.
var stages = []string{
	"apply → Component workflow started",
	"Component started → its first task started",
	"first task started → API seen",
	"API seen → ExposedAPI workflow started",
	"ExposedAPI started → its first task started",
	"task started → task completed (expose)",
	"task completed → bench sees exposed",
}

// firstTask is when a workflow started and when its first workflow task
// started and completed.
type firstTask struct{ started, taskStarted, taskCompleted time.Time }

func readFirstTask(ctx context.Context, tc client.Client, id string) (firstTask, error) {
	var f firstTask
	it := tc.GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			return f, err
		}
		at := ev.GetEventTime().AsTime()
		switch ev.GetEventType() {
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
			f.started = at
		case enumspb.EVENT_TYPE_WORKFLOW_TASK_STARTED:
			if f.taskStarted.IsZero() {
				f.taskStarted = at
			}
		case enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
			f.taskCompleted = at
			return f, nil
		}
	}
	return f, nil
}

// writeTimeline prints, per stage, the p50/p95/max over every API of up to
// 100 Components (BENCH_TIMELINE=1).
func writeTimeline(ctx context.Context, w io.Writer, tc client.Client, ns string, times map[string]*compTimes) {
	per := make([][]float64, len(stages))
	names := make([]string, 0, len(times))
	for name, t := range times {
		if !t.applied.IsZero() {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	if len(names) > 100 {
		names = names[:100]
	}
	for _, name := range names {
		t := times[name]
		comp, err := readFirstTask(ctx, tc, oda.WorkflowID("Component", ns, name))
		if err != nil {
			fmt.Fprintln(w, "timeline:", err)
			return
		}
		for api, seen := range t.seenAt {
			exp, err := readFirstTask(ctx, tc, oda.WorkflowID("ExposedAPI", ns, api))
			if err != nil {
				fmt.Fprintln(w, "timeline:", err)
				return
			}
			points := []time.Time{t.applied, comp.started, comp.taskStarted, seen, exp.started, exp.taskStarted, exp.taskCompleted, t.exposedAt[api]}
			for i := range stages {
				per[i] = append(per[i], points[i+1].Sub(points[i]).Seconds())
			}
		}
	}
	fmt.Fprintf(w, "timeline over %d APIs (p50/p95/max, s):\n", len(per[0]))
	for i, s := range stages {
		p := percentiles(per[i])
		fmt.Fprintf(w, "  %-46s %6.3f %6.3f %6.3f\n", s, p.P50, p.P95, p.Max)
	}
}
