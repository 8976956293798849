package worker

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// TestLivenessHeartbeatsKeepASilentActivityAlive runs an activity that
// never heartbeats itself under a heartbeat timeout shorter than its run:
// with the worker's interceptor the server (here the SDK's test
// environment, which enforces heartbeat timeouts on the wall clock) hears
// from it and it completes; without, it times out. An activity shorter
// than the beat interval sends none.
func TestLivenessHeartbeatsKeepASilentActivityAlive(t *testing.T) {
	const heartbeatTimeout = 200 * time.Millisecond
	for _, tc := range []struct {
		name        string
		interceptor bool
		runFor      time.Duration
		wantTimeout bool
		wantBeats   func(int64) bool
	}{
		{"long activity with the interceptor completes", true, 5 * heartbeatTimeout, false, func(n int64) bool { return n >= 3 }},
		{"long activity without it times out", false, 5 * heartbeatTimeout, true, func(n int64) bool { return n == 0 }},
		{"short activity sends no beat", true, heartbeatTimeout / 10, false, func(n int64) bool { return n == 0 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var suite testsuite.WorkflowTestSuite
			env := suite.NewTestWorkflowEnvironment()
			if tc.interceptor {
				env.SetWorkerOptions(worker.Options{Interceptors: []interceptor.WorkerInterceptor{&livenessHeartbeats{}}})
			}
			var beats atomic.Int64
			env.SetOnActivityHeartbeatListener(func(*activity.Info, converter.EncodedValues) { beats.Add(1) })
			silent := func(ctx context.Context) error {
				select {
				case <-time.After(tc.runFor):
					return nil
				case <-ctx.Done():
					return ctx.Err()
				}
			}
			env.RegisterActivityWithOptions(silent, activity.RegisterOptions{Name: "silent"})
			env.ExecuteWorkflow(func(ctx workflow.Context) error {
				ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
					StartToCloseTimeout: time.Minute,
					HeartbeatTimeout:    heartbeatTimeout,
					RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 1},
				})
				return workflow.ExecuteActivity(ctx, "silent").Get(ctx, nil)
			})
			err := env.GetWorkflowError()
			var timeout *temporal.TimeoutError
			gotTimeout := errors.As(err, &timeout) && timeout.TimeoutType() == enumspb.TIMEOUT_TYPE_HEARTBEAT
			if gotTimeout != tc.wantTimeout {
				t.Fatalf("workflow error %v: heartbeat timeout %v, want %v", err, gotTimeout, tc.wantTimeout)
			}
			if !tc.wantTimeout && err != nil {
				t.Fatalf("workflow error %v", err)
			}
			if n := beats.Load(); !tc.wantBeats(n) {
				t.Errorf("%d heartbeats", n)
			}
		})
	}
}
