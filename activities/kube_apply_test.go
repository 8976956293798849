package activities

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path"
	"slices"
	"strings"
	"sync"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/odaflow/odaflow/oda"
)

// applyServer is an apiserver that answers every apply with the object
// named in it (uid "uid-<name>"), and an apply of a name in refuse with a
// 422; it records the names applied, in order.
type applyServer struct {
	mu      sync.Mutex
	applied []string
}

func (a *applyServer) names() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.applied)
}

func applyFixture(t *testing.T, refuse ...string) (*Kube, *applyServer) {
	t.Helper()
	a := &applyServer{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := path.Base(r.URL.Path)
		if r.Method != http.MethodPatch || r.Header.Get("Content-Type") != string(types.ApplyPatchType) {
			http.Error(w, "want an apply", http.StatusMethodNotAllowed)
			return
		}
		a.mu.Lock()
		a.applied = append(a.applied, name)
		a.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if slices.Contains(refuse, name) {
			w.WriteHeader(http.StatusUnprocessableEntity)
			_ = json.NewEncoder(w).Encode(apierrors.NewInvalid(schema.GroupKind{Group: "oda.tmforum.org", Kind: "ExposedAPI"}, name, nil).Status())
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{
			"apiVersion": "oda.tmforum.org/v1", "kind": "ExposedAPI",
			"metadata": map[string]any{"name": name, "namespace": "components", "uid": "uid-" + name},
		})
	}))
	t.Cleanup(srv.Close)
	dyn, err := dynamic.NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	return &Kube{Dynamic: dyn, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}, a
}

func applyInput(names ...string) ApplyChildrenInput {
	in := ApplyChildrenInput{Owner: oda.Owner{Name: "ctk", Namespace: "components", UID: "ctk-uid"}}
	for _, n := range names {
		in.Children = append(in.Children, oda.Child{Kind: oda.KindExposedAPI.Name, Name: n, Spec: map[string]any{"path": "/" + n}})
	}
	return in
}

// A Component's children are applied in the order asked for, and the result
// lists each with the uid the apiserver gave it.
func TestApplyChildrenAppliesInOrder(t *testing.T) {
	names := []string{"ctk-a", "ctk-b", "ctk-c", "ctk-d"}
	k, srv := applyFixture(t)
	res, err := k.ApplyChildren(context.Background(), applyInput(names...))
	if err != nil {
		t.Fatal(err)
	}
	if got := srv.names(); !slices.Equal(got, names) {
		t.Errorf("applied %v, want %v", got, names)
	}
	if len(res.Children) != len(names) {
		t.Fatalf("children = %+v, want %d", res.Children, len(names))
	}
	for i, c := range res.Children {
		if c.Name != names[i] || c.UID != "uid-"+names[i] || c.Kind != oda.KindExposedAPI.Name {
			t.Errorf("child %d = %+v, want %s with uid-%s", i, c, names[i], names[i])
		}
	}
}

// A refused child stops the apply there, and the error names it.
func TestApplyChildrenStopsAtARefusedChild(t *testing.T) {
	k, srv := applyFixture(t, "ctk-b")
	_, err := k.ApplyChildren(context.Background(), applyInput("ctk-a", "ctk-b", "ctk-c"))
	if err == nil {
		t.Fatal("no error, want the apply of ctk-b refused")
	}
	if got, want := err.Error(), "apply ExposedAPI components/ctk-b"; !strings.HasPrefix(got, want) {
		t.Errorf("error = %q, want it to start with %q", got, want)
	}
	if got := srv.names(); !slices.Equal(got, []string{"ctk-a", "ctk-b"}) {
		t.Errorf("applied %v, want ctk-a and ctk-b only", got)
	}
}

// An unknown kind is refused before anything is applied.
func TestApplyChildrenRefusesAnUnknownKindBeforeApplying(t *testing.T) {
	k, srv := applyFixture(t)
	in := applyInput("ctk-a")
	in.Children = append(in.Children, oda.Child{Kind: "Gizmo", Name: "ctk-g"})
	if _, err := k.ApplyChildren(context.Background(), in); err == nil {
		t.Fatal("no error for an unknown kind")
	}
	if got := srv.names(); len(got) != 0 {
		t.Errorf("applied %v, want nothing before the kinds are known", got)
	}
}
