package activities

import (
	"context"
	"io"
	"log/slog"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/odaflow/odaflow/oda"
)

// A write that only carries an Event records it without a patch of the
// object: an empty status merge would be an apiserver request for nothing.
func TestAnEventOnlyWriteSendsNoPatch(t *testing.T) {
	dyn := dynamicfake.NewSimpleDynamicClient(runtime.NewScheme())
	core := fake.NewClientset()
	k := &Kube{Dynamic: dyn, Core: core, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	err := k.WriteStatus(context.Background(), WriteStatusInput{
		Ref: icRef("ctk"), UID: "ic-uid", Status: map[string]any{},
		Event: &Event{Type: "Normal", Reason: "CredentialsRotated", Message: "new secret"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(dyn.Actions()); n != 0 {
		t.Errorf("requests on the IdentityConfig = %d (%v), want none", n, dyn.Actions())
	}
	evs, err := core.CoreV1().Events("components").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs.Items) != 1 || evs.Items[0].Reason != "CredentialsRotated" || evs.Items[0].InvolvedObject.Kind != oda.KindIdentityConfig.Name {
		t.Errorf("events = %+v, want the one CredentialsRotated", evs.Items)
	}
}
