package kit

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/odaflow/odaflow/oda"
)

// WriteHistory writes a workflow's events (its latest run) with the time
// since its start: signals with their payload, markers, timers and
// activities with their summary, activity failures with their message.
// Pending activities and the pending workflow task come last, with their
// attempt and last failure: a stalled lifecycle shows where it waits.
func WriteHistory(ctx context.Context, w io.Writer, tc client.Client, id string) {
	it := tc.GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	fmt.Fprintln(w, "history of", id)
	var start time.Time
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			fmt.Fprintln(w, "  (history:", err, ")")
			return
		}
		at := ev.GetEventTime().AsTime()
		if start.IsZero() {
			start = at
			fmt.Fprintf(w, "  started %s\n", at.Format("15:04:05.000"))
		}
		detail := string(ev.GetUserMetadata().GetSummary().GetData())
		if a := ev.GetWorkflowExecutionSignaledEventAttributes(); a != nil {
			detail = a.GetSignalName() + " " + string(a.GetInput().GetPayloads()[0].GetData())
		}
		if a := ev.GetActivityTaskScheduledEventAttributes(); a != nil {
			detail = a.GetActivityType().GetName() + " " + detail
		}
		if a := ev.GetActivityTaskFailedEventAttributes(); a != nil {
			detail = a.GetFailure().GetMessage()
		}
		if len(detail) > 160 {
			detail = detail[:160] + "..."
		}
		fmt.Fprintf(w, "  %3d %7.3fs %s %s\n", ev.GetEventId(), at.Sub(start).Seconds(), strings.TrimPrefix(ev.GetEventType().String(), "EVENT_TYPE_"), detail)
	}
	described, err := tc.DescribeWorkflow(ctx, id, "")
	if err != nil {
		fmt.Fprintln(w, "  (describe:", err, ")")
		return
	}
	desc := described.RawResponse
	for _, pa := range desc.GetPendingActivities() {
		fmt.Fprintf(w, "  pending activity %s %s: %s, attempt %d, last started %s, last failure %q\n",
			pa.GetActivityId(), pa.GetActivityType().GetName(), pa.GetState(), pa.GetAttempt(),
			pa.GetLastStartedTime().AsTime().Format("15:04:05.000"), pa.GetLastFailure().GetMessage())
	}
	if wt := desc.GetPendingWorkflowTask(); wt != nil {
		fmt.Fprintf(w, "  pending workflow task: %s, attempt %d, scheduled %s\n", wt.GetState(), wt.GetAttempt(), wt.GetScheduledTime().AsTime().Format("15:04:05.000"))
	}
}

// LogLifecycle logs, at the end of the test, the histories of a Component's
// workflow and of its IdentityConfig's: when the test fails, or always with
// ODAFLOW_LOG_LIFECYCLES set.
func (c *Cluster) LogLifecycle(t *testing.T, ns, name string) {
	t.Helper()
	t.Cleanup(func() {
		if !t.Failed() && os.Getenv("ODAFLOW_LOG_LIFECYCLES") == "" {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var b strings.Builder
		for _, kind := range []oda.Kind{oda.KindComponent, oda.KindIdentityConfig} {
			WriteHistory(ctx, &b, c.Temporal, oda.WorkflowID(kind.Name, ns, name))
		}
		t.Logf("at %s:\n%s", time.Now().Format("15:04:05.000"), b.String())
	})
}
