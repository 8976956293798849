package runtime

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"
)

// SearchAttributeCommand is the command an operator with admin rights runs
// to register the attributes by hand.
func SearchAttributeCommand(namespace string, names []string) string {
	var b strings.Builder
	b.WriteString("temporal operator search-attribute create --namespace " + namespace)
	for _, n := range names {
		b.WriteString(" --name " + n + " --type Keyword")
	}
	return b.String()
}

// ErrSearchAttributesMissing says the attributes are not registered and this
// process may not register them.
var ErrSearchAttributesMissing = errors.New("search attributes not registered")

// EnsureSearchAttributes registers the Keyword search attributes missing on
// the namespace. It is idempotent: attributes already there (also of
// another process that got there first) are fine. A denied registration of
// attributes that are missing gives ErrSearchAttributesMissing, with one
// clear error line naming the command that fixes it.
func EnsureSearchAttributes(ctx context.Context, op operatorservice.OperatorServiceClient, namespace string, names []string, log *slog.Logger) error {
	have, err := op.ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: namespace})
	if err != nil && !denied(err) {
		return fmt.Errorf("list search attributes: %w", err)
	}
	missing := map[string]enumspb.IndexedValueType{}
	for _, n := range names {
		if _, ok := have.GetCustomAttributes()[n]; !ok {
			missing[n] = enumspb.INDEXED_VALUE_TYPE_KEYWORD
		}
	}
	if len(missing) == 0 {
		return nil
	}
	_, err = op.AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{Namespace: namespace, SearchAttributes: missing})
	var exists *serviceerror.AlreadyExists
	switch {
	case err == nil || errors.As(err, &exists):
		log.Info("search attributes registered", "namespace", namespace, "names", sortedNames(missing))
		return nil
	case denied(err):
		log.Error("the Temporal search attributes odaflow sets are not registered and this process may not register them: "+
			"workflows start without them (run the command, then restart odaflow, to have them)",
			"namespace", namespace, "missing", sortedNames(missing), "command", SearchAttributeCommand(namespace, names), "err", err)
		return fmt.Errorf("%w: %v", ErrSearchAttributesMissing, err)
	default:
		return fmt.Errorf("add search attributes: %w", err)
	}
}

// denied is an answer retrying cannot change: no permission, or a server
// (such as Temporal Cloud through the SDK) that does not offer the call.
func denied(err error) bool {
	var pd *serviceerror.PermissionDenied
	var un *serviceerror.Unimplemented
	return errors.As(err, &pd) || errors.As(err, &un)
}

// transient is an error of an unreachable or overloaded server.
func transient(err error) bool {
	var un *serviceerror.Unavailable
	var de *serviceerror.DeadlineExceeded
	var re *serviceerror.ResourceExhausted
	return errors.As(err, &un) || errors.As(err, &de) || errors.As(err, &re) || errors.Is(err, context.DeadlineExceeded)
}

// EnsureSearchAttributesWithRetry calls EnsureSearchAttributes until it gets
// an answer, with capped exponential backoff while Temporal is unreachable.
// It reports whether the attributes may be used.
func EnsureSearchAttributesWithRetry(ctx context.Context, op operatorservice.OperatorServiceClient, namespace string, names []string, log *slog.Logger) bool {
	delay := time.Second
	for {
		attempt, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := EnsureSearchAttributes(attempt, op, namespace, names, log)
		cancel()
		switch {
		case err == nil:
			return true
		case errors.Is(err, ErrSearchAttributesMissing), ctx.Err() != nil:
			return false
		case !transient(err):
			log.Error("the Temporal search attributes could not be registered: workflows start without them", "namespace", namespace,
				"command", SearchAttributeCommand(namespace, names), "err", err)
			return false
		}
		log.Warn("could not check the search attributes; retrying", "retryIn", delay.String(), "err", err)
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return false
		case <-t.C:
		}
		delay = min(delay*2, 30*time.Second)
	}
}

func sortedNames(m map[string]enumspb.IndexedValueType) []string {
	out := make([]string, 0, len(m))
	for n := range m {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
