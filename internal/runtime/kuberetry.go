package runtime

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// transientRepeats spaces the quick repeats of one apiserver request: 20,
// 40 and 80 ms, a blip's length. A longer outage is left to the caller: an
// activity's retry policy backs off for minutes, an informer's reflector
// relists.
var transientRepeats = []time.Duration{20 * time.Millisecond, 40 * time.Millisecond, 80 * time.Millisecond}

// retryTransient repeats an idempotent apiserver request (GET, PUT, PATCH,
// DELETE) when the apiserver answers with a transient failure: a conflict,
// throttling, an internal error, a bad gateway, unavailability or a
// timeout.
//
// Why at the transport: an activity writes several objects, and without
// repeats one failed request in ten fails the whole attempt, so every write
// is made again on the next one; at a few percent of failed requests a
// lifecycle could spend its whole retry budget and park as Failed. Here
// every apiserver call of every process gets the repeats, and a new write
// cannot forget them.
//
// POST is never repeated: a create is not idempotent (an Event would be
// recorded twice). A conflict is repeated because the unguarded writes
// (server-side applies, merge patches) can succeed on a second try; a write
// guarded by a resourceVersion cannot, and its caller marks its context
// with GuardedWrite so that a conflict goes straight back to it to re-read
// (activities.Kube.WriteStatus: a lifecycle's first status write, and
// fencedMerge).
type retryTransient struct {
	next http.RoundTripper
}

// kubeRequestRepeats counts the repeats: client-go's request metrics see
// only the answer the caller gets, so without this a run of 409s or 5xx
// absorbed here would leave no trace, and a write repeated after its first
// try had committed could not be told from one made twice by its caller.
var kubeRequestRepeats = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "odaflow_kube_request_repeats_total",
	Help: "Apiserver requests repeated by the transport after a transient answer, by method, resource and the answer's status code.",
}, []string{"method", "resource", "code"})

// RetryTransient wraps an apiserver transport with quick repeats of
// idempotent requests; for rest.Config.Wrap.
func RetryTransient(next http.RoundTripper) http.RoundTripper {
	return retryTransient{next: next}
}

type guardedWriteKey struct{}

// GuardedWrite marks a context whose apiserver writes carry a
// resourceVersion: a 409 answer is final for them (the object changed, and
// only a fresh read helps), so the transport does not repeat it.
func GuardedWrite(ctx context.Context) context.Context {
	return context.WithValue(ctx, guardedWriteKey{}, true)
}

func (t retryTransient) RoundTrip(req *http.Request) (*http.Response, error) {
	if !repeatable(req) {
		return t.next.RoundTrip(req)
	}
	guarded, _ := req.Context().Value(guardedWriteKey{}).(bool)
	for attempt := 0; ; attempt++ {
		resp, err := t.next.RoundTrip(req)
		if err != nil || !transientStatus(resp.StatusCode) || attempt == len(transientRepeats) ||
			guarded && resp.StatusCode == http.StatusConflict {
			return resp, err
		}
		kubeRequestRepeats.WithLabelValues(req.Method, resourceOf(req.URL.Path), strconv.Itoa(resp.StatusCode)).Inc()
		// Drain and close, so that the connection is reused for the repeat.
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
		_ = resp.Body.Close()
		if req.GetBody != nil {
			body, err := req.GetBody()
			if err != nil {
				return nil, err
			}
			req = req.Clone(req.Context())
			req.Body = body
		}
		timer := time.NewTimer(transientRepeats[attempt])
		select {
		case <-req.Context().Done():
			timer.Stop()
			return nil, req.Context().Err()
		case <-timer.C:
		}
	}
}

// repeatable: an idempotent verb whose body, if any, can be sent again.
// Watches are excluded: they are streams that the reflector restarts.
func repeatable(req *http.Request) bool {
	switch req.Method {
	case http.MethodGet, http.MethodPut, http.MethodPatch, http.MethodDelete:
	default:
		return false
	}
	if req.URL.Query().Get("watch") == "true" || req.URL.Query().Get("watch") == "1" {
		return false
	}
	return req.Body == nil || req.Body == http.NoBody || req.GetBody != nil
}

func transientStatus(code int) bool {
	switch code {
	case http.StatusConflict, http.StatusTooManyRequests, http.StatusInternalServerError,
		http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}
