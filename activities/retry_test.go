package activities

import (
	"context"
	"errors"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestRetryTransient(t *testing.T) {
	gr := schema.GroupResource{Group: "oda.tmforum.org", Resource: "exposedapis"}
	conflict := apierrors.NewConflict(gr, "x", errors.New("the object has been modified"))
	internal := apierrors.NewInternalError(errors.New("etcdserver: leader changed"))
	unavailable := apierrors.NewServiceUnavailable("try again")
	invalid := apierrors.NewInvalid(schema.GroupKind{Group: gr.Group, Kind: "ExposedAPI"}, "x", nil)
	notFound := apierrors.NewNotFound(gr, "x")
	refused := errors.New("dial tcp 127.0.0.1:6443: connect: connection refused")
	tests := []struct {
		name      string
		answers   []error // one per request; the last repeats
		wantCalls int
		wantErr   error
	}{
		{"success at once", []error{nil}, 1, nil},
		{"a conflict, then success", []error{conflict, nil}, 2, nil},
		{"500 and 503, then success", []error{internal, unavailable, nil}, 3, nil},
		{"always transient: the last answer after four requests", []error{internal, internal, internal, conflict}, 4, conflict},
		{"invalid is final", []error{invalid, nil}, 1, invalid},
		{"not found is final", []error{notFound, nil}, 1, notFound},
		{"an unreachable apiserver is left to the activity's retry policy", []error{refused, nil}, 1, refused},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls := 0
			err := retryTransient(context.Background(), func() error {
				answer := tt.answers[min(calls, len(tt.answers)-1)]
				calls++
				return answer
			})
			if calls != tt.wantCalls {
				t.Errorf("%d requests, want %d", calls, tt.wantCalls)
			}
			if !errors.Is(err, tt.wantErr) && err != tt.wantErr {
				t.Errorf("error %v, want %v", err, tt.wantErr)
			}
		})
	}
	t.Run("a cancelled context stops the repeats", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		calls := 0
		err := retryTransient(ctx, func() error {
			calls++
			cancel()
			return internal
		})
		if calls != 1 || err == nil {
			t.Errorf("%d requests, error %v; want 1 request and an error", calls, err)
		}
	})
}
