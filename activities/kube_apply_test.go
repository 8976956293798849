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
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/odaflow/odaflow/oda"
)

// applyFixture is an apiserver that answers every apply with the object
// named in it (uid "uid-<name>") once `together` applies are in flight at
// the same time, so a sequential ApplyChildren never gets an answer; an
// apply of a name in refuse is answered with a 422. (A fake clientset runs
// its reactors one at a time, so it cannot show requests in parallel.)
func applyFixture(t *testing.T, together int, refuse ...string) (*Kube, *atomic.Int32) {
	t.Helper()
	var mu sync.Mutex
	inFlight := 0
	all := make(chan struct{})
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		name := path.Base(r.URL.Path)
		if r.Method != http.MethodPatch || r.Header.Get("Content-Type") != string(types.ApplyPatchType) {
			http.Error(w, "want an apply", http.StatusMethodNotAllowed)
			return
		}
		mu.Lock()
		inFlight++
		if inFlight == together {
			close(all)
		}
		mu.Unlock()
		select {
		case <-all:
		case <-time.After(5 * time.Second):
			http.Error(w, "the other applies never came: the children were applied one at a time", http.StatusServiceUnavailable)
			return
		}
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
	return &Kube{Dynamic: dyn, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}, &requests
}

func applyInput(names ...string) ApplyChildrenInput {
	in := ApplyChildrenInput{Owner: oda.Owner{Name: "ctk", Namespace: "components", UID: "ctk-uid"}}
	for _, n := range names {
		in.Children = append(in.Children, oda.Child{Kind: oda.KindExposedAPI.Name, Name: n, Spec: map[string]any{"path": "/" + n}})
	}
	return in
}

// A Component's children are applied together, and the result lists them
// in the order asked for, whatever order the answers came in.
func TestApplyChildrenAppliesSiblingsTogether(t *testing.T) {
	names := []string{"ctk-a", "ctk-b", "ctk-c", "ctk-d"}
	k, _ := applyFixture(t, len(names))
	res, err := k.ApplyChildren(context.Background(), applyInput(names...))
	if err != nil {
		t.Fatal(err)
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

// When children fail, the error names the first failing one in input
// order, not whichever answer came first.
func TestApplyChildrenReportsTheFirstFailingChild(t *testing.T) {
	k, _ := applyFixture(t, 3, "ctk-c", "ctk-b")
	_, err := k.ApplyChildren(context.Background(), applyInput("ctk-a", "ctk-b", "ctk-c"))
	if err == nil {
		t.Fatal("no error, want the apply of ctk-b refused")
	}
	if got, want := err.Error(), "apply ExposedAPI components/ctk-b"; !strings.HasPrefix(got, want) {
		t.Errorf("error = %q, want it to start with %q", got, want)
	}
}

// An unknown kind is refused before anything is applied.
func TestApplyChildrenRefusesAnUnknownKindBeforeApplying(t *testing.T) {
	k, requests := applyFixture(t, 1)
	in := applyInput("ctk-a")
	in.Children = append(in.Children, oda.Child{Kind: "Gizmo", Name: "ctk-g"})
	if _, err := k.ApplyChildren(context.Background(), in); err == nil {
		t.Fatal("no error for an unknown kind")
	}
	if n := requests.Load(); n != 0 {
		t.Errorf("requests = %d, want none before the kinds are known", n)
	}
}
