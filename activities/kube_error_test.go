package activities

import (
	"errors"
	"testing"

	"go.temporal.io/sdk/temporal"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestKubeErrorRetriesOnlyWhatCanPass: a content error and a write into a
// namespace being deleted stop at once with their type; a conflict, a 503
// or a Forbidden for any other reason (RBAC being granted) retry.
func TestKubeErrorRetriesOnlyWhatCanPass(t *testing.T) {
	gr := schema.GroupResource{Group: "networking.istio.io", Resource: "virtualservices"}
	terminating := apierrors.NewForbidden(gr, "vs", errors.New("unable to create new content in namespace it-x because it is being terminated"))
	terminating.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: corev1.NamespaceTerminatingCause, Message: "namespace it-x is being terminated", Field: "metadata.namespace"}}
	for name, tc := range map[string]struct {
		err      error
		wantType string // "" = retryable
	}{
		"invalid":               {apierrors.NewInvalid(schema.GroupKind{Kind: "VirtualService"}, "vs", nil), ErrTypeInvalid},
		"bad request":           {apierrors.NewBadRequest("no"), ErrTypeInvalid},
		"namespace terminating": {terminating, ErrTypeNamespaceTerminating},
		"forbidden by RBAC":     {apierrors.NewForbidden(gr, "vs", errors.New("no RBAC yet")), ""},
		"conflict":              {apierrors.NewConflict(gr, "vs", errors.New("changed")), ""},
		"unavailable":           {apierrors.NewServiceUnavailable("later"), ""},
	} {
		t.Run(name, func(t *testing.T) {
			err := kubeError("apply VirtualService it-x/vs", tc.err)
			var appErr *temporal.ApplicationError
			isApp := errors.As(err, &appErr)
			switch {
			case tc.wantType == "" && isApp:
				t.Fatalf("%v: non-retryable %s, want a retryable error", err, appErr.Type())
			case tc.wantType != "" && (!isApp || !appErr.NonRetryable() || appErr.Type() != tc.wantType):
				t.Fatalf("%v: want a non-retryable %s", err, tc.wantType)
			}
			if !errors.Is(err, tc.err) && !isApp {
				t.Fatalf("%v does not wrap %v", err, tc.err)
			}
		})
	}
}
