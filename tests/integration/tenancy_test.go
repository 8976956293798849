package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/odaflow/odaflow/oda"
)

// waitIdentityCondition waits until the IdentityConfig's condition has the
// reason and mentions want, with a Warning Event of that reason.
func waitIdentityCondition(t *testing.T, ns, name, reason, want string) {
	t.Helper()
	eventually(t, 60*time.Second, ns+"/"+name+" refused: "+reason, func() (bool, string) {
		got, err := get(oda.KindIdentityConfig, ns, name)
		if err != nil {
			return false, err.Error()
		}
		r, msg := condition(got)
		return r == reason && strings.Contains(msg, want) && containsAny(eventsFor(t, ns, name), "Warning/"+reason), r + ": " + msg + fmt.Sprint(eventsFor(t, ns, name))
	})
}

// TestTenantsCannotTakeEachOthersIdentity, on the real apiserver, Temporal
// and Keycloak: a second team's IdentityConfig of the
// same name is refused the first team's client (whose client, roles and
// secret stay byte for byte as they were), gets no Secret, and its deletion
// leaves the client; a credentials Secret the team made itself is neither
// overwritten nor deleted.
func TestTenantsCannotTakeEachOthersIdentity(t *testing.T) {
	needRealKeycloak(t)
	kc := realAdmin(t)
	ctx := context.Background()
	// it-r* is the real Keycloak's (realkeycloak_test.go).
	nsA, nsB := "it-rowner-a", "it-rowner-b"
	createNamespace(t, nsA)
	createNamespace(t, nsB)
	const name = "tenant-pc"
	spec := map[string]any{"canvasSystemRole": "Admin", "componentRole": []any{map[string]any{"name": "pcadmin"}}}
	create(t, oda.KindIdentityConfig, child(oda.KindIdentityConfig, nsA, name, spec))
	eventually(t, 60*time.Second, "team A's identity", func() (bool, string) {
		_, err := stack.core.CoreV1().Secrets(nsA).Get(ctx, name+"-secret", metav1.GetOptions{})
		if err == nil {
			return true, ""
		}
		u, gerr := get(oda.KindIdentityConfig, nsA, name)
		if gerr != nil {
			return false, fmt.Sprint(err, "; ", gerr)
		}
		reason, msg := condition(u)
		return false, fmt.Sprint(err, "; ", reason, ": ", msg)
	})
	before, ok := kc.ClientSnapshot(name)
	if !ok {
		t.Fatal("team A's client is missing")
	}
	secretA, err := stack.core.CoreV1().Secrets(nsA).Get(ctx, name+"-secret", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}

	hostile := child(oda.KindIdentityConfig, nsB, name, map[string]any{"canvasSystemRole": "Admin", "componentRole": []any{map[string]any{"name": "stolen"}}})
	hostile.SetAnnotations(map[string]string{oda.AnnotationAdopt: "true", oda.AnnotationRotateCredentials: "now"})
	create(t, oda.KindIdentityConfig, hostile)
	waitIdentityCondition(t, nsB, name, oda.ReasonOwnedElsewhere, "belongs to a resource in another namespace")
	// What team B reads (its status and its namespace's Events) does not
	// name team A's namespace.
	refused, err := get(oda.KindIdentityConfig, nsB, name)
	if err != nil {
		t.Fatal(err)
	}
	if _, msg := condition(refused); strings.Contains(msg, nsA) {
		t.Errorf("team B's condition names team A's namespace: %s", msg)
	}
	if events := eventsFor(t, nsB, name); containsAny(events, nsA) {
		t.Errorf("team B's Events name team A's namespace: %v", events)
	}
	if _, err := stack.core.CoreV1().Secrets(nsB).Get(ctx, name+"-secret", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("team B got a credentials Secret: %v", err)
	}
	if err := stack.dyn.Resource(oda.KindIdentityConfig.GVR()).Namespace(nsB).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "team B's IdentityConfig deleted", func() (bool, string) {
		_, err := get(oda.KindIdentityConfig, nsB, name)
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
	if after, ok := kc.ClientSnapshot(name); !ok || after != before {
		t.Errorf("team A's client changed (present %v):\nbefore %s\nafter  %s", ok, before, after)
	}
	if s, err := stack.core.CoreV1().Secrets(nsA).Get(ctx, name+"-secret", metav1.GetOptions{}); err != nil || s.ResourceVersion != secretA.ResourceVersion {
		t.Errorf("team A's Secret changed: %v", err)
	}

	// A Secret of the credentials' name that the team made itself.
	own := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "own-pc-secret", Namespace: nsA}, Data: map[string][]byte{"tls.key": []byte("the team's key")}}
	if _, err := stack.core.CoreV1().Secrets(nsA).Create(ctx, own, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	create(t, oda.KindIdentityConfig, child(oda.KindIdentityConfig, nsA, "own-pc", map[string]any{"canvasSystemRole": "Admin"}))
	waitIdentityCondition(t, nsA, "own-pc", oda.ReasonOwnedElsewhere, "Secret "+nsA+"/own-pc-secret")
	if err := stack.dyn.Resource(oda.KindIdentityConfig.GVR()).Namespace(nsA).Delete(ctx, "own-pc", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "own-pc deleted", func() (bool, string) {
		_, err := get(oda.KindIdentityConfig, nsA, "own-pc")
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
	got, err := stack.core.CoreV1().Secrets(nsA).Get(ctx, "own-pc-secret", metav1.GetOptions{})
	if err != nil || string(got.Data["tls.key"]) != "the team's key" || len(got.Data) != 1 {
		t.Errorf("the team's own Secret was changed or deleted: %v", err)
	}
}
