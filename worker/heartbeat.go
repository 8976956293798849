package worker

import (
	"context"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/interceptor"
)

// livenessHeartbeats makes every remote activity that has a heartbeat
// timeout heartbeat while it runs, so the Temporal server learns within
// that timeout when no worker is running it any more, instead of waiting
// out the activity's whole start-to-close timeout.
//
// Why: an activity task can be lost between the server and a worker. A
// worker that is stopping cancels its long polls, and a poll the server had
// just answered with a task takes that task with it; the server has
// recorded the activity as started and nobody runs it (on servers without
// frontend.enableCancelWorkerPollsOnShutdown: the 1.29 dev server of the
// local stack, or a 1.32 server where it is left off, its default). A
// worker that crashes or loses its node leaves its running activities the
// same way. Our activities are mostly single HTTP calls whose own timeouts
// are tens of seconds, so their start-to-close timeouts are a minute; the
// heartbeat timeout, a few seconds, is what bounds the stall after a
// rollout or a crash. The activities themselves need not heartbeat: they
// are idempotent and hold no progress worth recording.
type livenessHeartbeats struct {
	interceptor.WorkerInterceptorBase
}

func (*livenessHeartbeats) InterceptActivity(ctx context.Context, next interceptor.ActivityInboundInterceptor) interceptor.ActivityInboundInterceptor {
	i := &heartbeatingActivity{}
	i.Next = next
	return i
}

type heartbeatingActivity struct {
	interceptor.ActivityInboundInterceptorBase
}

func (a *heartbeatingActivity) ExecuteActivity(ctx context.Context, in *interceptor.ExecuteActivityInput) (any, error) {
	info := activity.GetInfo(ctx)
	if info.IsLocalActivity || info.HeartbeatTimeout <= 0 {
		return a.Next.ExecuteActivity(ctx, in)
	}
	// The beats stop before the result is reported: none goes out for an
	// activity the server already holds as completed.
	done := make(chan struct{})
	var beating sync.WaitGroup
	beating.Go(func() { heartbeatUntil(ctx, done, heartbeatInterval(info.HeartbeatTimeout)) })
	defer beating.Wait()
	defer close(done)
	return a.Next.ExecuteActivity(ctx, in)
}

// heartbeatInterval leaves room for three missed beats within the timeout.
// The SDK sends the first beat at once and batches the later ones to at
// most one per 0.8 × timeout, so an activity shorter than the interval
// costs no heartbeat at all.
func heartbeatInterval(timeout time.Duration) time.Duration {
	return timeout / 4
}

func heartbeatUntil(ctx context.Context, done <-chan struct{}, every time.Duration) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-done:
			return
		case <-ctx.Done():
			return
		case <-tick.C:
			activity.RecordHeartbeat(ctx)
		}
	}
}
