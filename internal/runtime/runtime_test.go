package runtime

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/odaflow/odaflow/internal/config"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/stats"
	"google.golang.org/grpc/status"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// closedAddress is a local address nothing listens on.
func closedAddress(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
}

func TestReadinessFollowsTheApiserverAndTemporal(t *testing.T) {
	apiserver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/readyz" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte("ok"))
	}))
	core := kubernetes.NewForConfigOrDie(&rest.Config{Host: apiserver.URL})

	h := NewHealth()
	h.maxAge = 0 // every call checks again
	h.Add("kubernetes", KubeCheck(core))
	if err := h.Ready(context.Background()); err != nil {
		t.Fatalf("ready with the apiserver up: %v", err)
	}
	apiserver.Close()
	err := h.Ready(context.Background())
	if err == nil || !strings.Contains(err.Error(), "kubernetes") {
		t.Fatalf("apiserver gone: Ready() = %v, want a kubernetes error", err)
	}

	tc, err := client.NewLazyClient(client.Options{HostPort: closedAddress(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer tc.Close()
	h = NewHealth()
	h.Add("temporal", TemporalCheck(tc))
	if err := h.Ready(context.Background()); err == nil || !strings.Contains(err.Error(), "temporal") {
		t.Fatalf("Temporal unreachable: Ready() = %v, want a temporal error", err)
	}
}

// fakeOperator answers the two calls EnsureSearchAttributes makes.
type fakeOperator struct {
	operatorservice.OperatorServiceClient
	have    map[string]enumspb.IndexedValueType
	listErr []error
	addErr  error
	added   []map[string]enumspb.IndexedValueType
}

func (f *fakeOperator) ListSearchAttributes(context.Context, *operatorservice.ListSearchAttributesRequest, ...grpc.CallOption) (*operatorservice.ListSearchAttributesResponse, error) {
	if len(f.listErr) > 0 {
		err := f.listErr[0]
		f.listErr = f.listErr[1:]
		return nil, err
	}
	return &operatorservice.ListSearchAttributesResponse{CustomAttributes: f.have}, nil
}

func (f *fakeOperator) AddSearchAttributes(_ context.Context, in *operatorservice.AddSearchAttributesRequest, _ ...grpc.CallOption) (*operatorservice.AddSearchAttributesResponse, error) {
	f.added = append(f.added, in.GetSearchAttributes())
	if f.addErr != nil {
		return nil, f.addErr
	}
	return &operatorservice.AddSearchAttributesResponse{}, nil
}

var names = []string{"OdaComponent", "K8sNamespace", "OdaKind", "DeploymentStatus"}

func TestEnsureSearchAttributesAddsOnlyWhatIsMissing(t *testing.T) {
	op := &fakeOperator{have: map[string]enumspb.IndexedValueType{"OdaComponent": enumspb.INDEXED_VALUE_TYPE_KEYWORD, "K8sNamespace": enumspb.INDEXED_VALUE_TYPE_KEYWORD}}
	if err := EnsureSearchAttributes(context.Background(), op, "default", names, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	if len(op.added) != 1 || len(op.added[0]) != 2 || op.added[0]["OdaKind"] != enumspb.INDEXED_VALUE_TYPE_KEYWORD || op.added[0]["DeploymentStatus"] != enumspb.INDEXED_VALUE_TYPE_KEYWORD {
		t.Fatalf("added %v, want OdaKind and DeploymentStatus as Keyword", op.added)
	}
	// All there: nothing to do (a second process, a restart).
	op = &fakeOperator{have: map[string]enumspb.IndexedValueType{}}
	for _, n := range names {
		op.have[n] = enumspb.INDEXED_VALUE_TYPE_KEYWORD
	}
	if err := EnsureSearchAttributes(context.Background(), op, "default", names, slog.New(slog.DiscardHandler)); err != nil || len(op.added) != 0 {
		t.Fatalf("err %v, added %v; want nothing added", err, op.added)
	}
	// Another process registered them between our list and our add.
	op = &fakeOperator{addErr: serviceerror.NewAlreadyExists("already exists")}
	if err := EnsureSearchAttributes(context.Background(), op, "default", names, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatalf("a lost race is fine: %v", err)
	}
}

func TestEnsureSearchAttributesDeniedSaysWhatToRun(t *testing.T) {
	var logs bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&logs, nil))
	op := &fakeOperator{addErr: serviceerror.NewPermissionDenied("not an admin", "")}
	if ok := EnsureSearchAttributesWithRetry(context.Background(), op, "prod", names, log); ok {
		t.Fatal("denied and missing: the attributes must not be used")
	}
	want := "temporal operator search-attribute create --namespace prod --name OdaComponent --type Keyword --name K8sNamespace --type Keyword --name OdaKind --type Keyword --name DeploymentStatus --type Keyword"
	if n := strings.Count(logs.String(), `"level":"ERROR"`); n != 1 || !strings.Contains(logs.String(), want) {
		t.Errorf("%d error lines, want one naming %q:\n%s", n, want, logs.String())
	}
}

func TestEnsureSearchAttributesWaitsForTemporal(t *testing.T) {
	op := &fakeOperator{listErr: []error{serviceerror.NewUnavailable("connection refused")}}
	if ok := EnsureSearchAttributesWithRetry(context.Background(), op, "default", names, slog.New(slog.DiscardHandler)); !ok {
		t.Fatal("Temporal came back: the attributes are registered and usable")
	}
	if len(op.added) != 1 {
		t.Errorf("added %v, want one registration after the retry", op.added)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	op = &fakeOperator{listErr: []error{errors.New("x"), serviceerror.NewUnavailable("down")}}
	if ok := EnsureSearchAttributesWithRetry(ctx, op, "default", names, slog.New(slog.DiscardHandler)); ok {
		t.Error("stopped before an answer: not usable")
	}
}

// compressionSeen records the compression each incoming RPC declared.
type compressionSeen struct{ got chan string }

func (c compressionSeen) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context { return ctx }
func (c compressionSeen) HandleRPC(_ context.Context, s stats.RPCStats) {
	if h, ok := s.(*stats.InHeader); ok {
		select {
		case c.got <- h.Compression:
		default:
		}
	}
}
func (c compressionSeen) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context {
	return ctx
}
func (c compressionSeen) HandleConn(context.Context, stats.ConnStats) {}

// Requests to Temporal go uncompressed unless gzip is asked for: the SDK
// compresses by default, which costs CPU on both ends inside a cluster.
func TestTemporalRequestsAreCompressedOnlyWhenAskedTo(t *testing.T) {
	for _, tc := range []struct{ setting, want string }{{"none", ""}, {"gzip", "gzip"}} {
		t.Run(tc.setting, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			seen := compressionSeen{got: make(chan string, 1)}
			srv := grpc.NewServer(grpc.StatsHandler(seen), grpc.UnknownServiceHandler(func(any, grpc.ServerStream) error {
				return status.Error(codes.Unimplemented, "test server")
			}))
			go func() { _ = srv.Serve(ln) }()
			defer srv.Stop()

			opts, err := TemporalOptions(config.Common{TemporalAddress: ln.Addr().String(), TemporalNamespace: "default", TemporalCompression: tc.setting}, slog.New(slog.DiscardHandler), nil)
			if err != nil {
				t.Fatal(err)
			}
			cl, err := client.NewLazyClient(opts)
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_, _ = cl.WorkflowService().DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: "default"})
			select {
			case got := <-seen.got:
				if got != tc.want {
					t.Errorf("request compression = %q, want %q", got, tc.want)
				}
			case <-ctx.Done():
				t.Fatal("the test server saw no request")
			}
		})
	}
}

// odaflow's apiserver requests ask for no compression (RESTConfig). Over
// TLS, as every apiserver serves: without a TLS configuration client-go
// uses Go's default transport, which ignores the setting.
func TestKubeRequestsAskForNoCompression(t *testing.T) {
	encodings := make(chan string, 1)
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case encodings <- r.Header.Get("Accept-Encoding"):
		default:
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"kind":"Namespace","apiVersion":"v1","metadata":{"name":"x"}}`))
	}))
	defer srv.Close()
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "`+srv.URL+`", certificate-authority-data: "`+
		base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}))+`"}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
users: [{name: u, user: {}}]
current-context: c
`), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := RESTConfig(config.Common{Kubeconfig: kubeconfig})
	if err != nil {
		t.Fatal(err)
	}
	core, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := core.CoreV1().Namespaces().Get(context.Background(), "x", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := <-encodings; strings.Contains(got, "gzip") {
		t.Errorf("Accept-Encoding = %q: the apiserver would compress", got)
	}
}
