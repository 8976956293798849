package integration

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/testsuite"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/odaflow/odaflow/internal/localstack"
	"github.com/odaflow/odaflow/internal/payloadcodec"
	"github.com/odaflow/odaflow/internal/testartifacts"
	"github.com/odaflow/odaflow/oda"
	"github.com/odaflow/odaflow/tests/fixtures"
)

// specText is spec content of the product-catalog Component (an API path)
// that the workflows carry in their inputs and results, and that no
// identifier (workflow ID, search attribute) holds.
const specText = "tmf-api/productCatalogManagement/v4"

// TestHistoryAtRestIsEncrypted runs a Component through a worker and a
// watcher with the payload codec on (namespaces it-x*, which the main
// watcher ignores), reads its workflows' histories raw from Temporal and
// finds no spec in any payload, then decodes the same payloads through the
// codec server as the Web UI does and finds the spec.
func TestHistoryAtRestIsEncrypted(t *testing.T) {
	keysDir := t.TempDir()
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(keysDir, "2026-12-01"), []byte(base64.StdEncoding.EncodeToString(key)), 0o600); err != nil {
		t.Fatal(err)
	}
	// The secrets scan checks the key never reaches a log or a history.
	if err := testartifacts.RegisterSecret("payload encryption key", base64.StdEncoding.EncodeToString(key)); err != nil {
		t.Fatal(err)
	}

	common := stack.common
	common.TaskQueue = "odaflow-it-codec"
	common.Namespaces = []string{"it-x*"}
	common.PayloadKeysDir = keysDir
	common.HTTPAddress = freeAddress(t)
	startIstioStack(t, common, "encrypting")

	// A name of its own: Keycloak client IDs are the IdentityConfig's bare
	// name, and odaflow refuses a client another namespace owns, so the
	// suite's usual component name here would block the tests after it
	// until this one's client is gone.
	const component = "xcodec-productcatalog"
	ns := "it-xcodec"
	createNamespace(t, ns)
	create(t, oda.KindComponent, fixtures.WithoutDependentAPIs(fixtures.ProductCatalog(ns, component)))
	// Registered after the encrypting stack, so it runs before the stack
	// stops: the lifecycle ends and cleans up as every other test's does.
	t.Cleanup(func() { deleteComponent(t, ns, component) })
	ensureIngress(t)
	setIngressAddress(t, "34.159.217.74")
	for _, svc := range []string{"ctk-prodcatapi", "ctk-promgmtapi", "ctk-productcatalogmanagement-sm", "ctk-partyroleapi"} {
		setEndpoints(t, ns, svc, true)
	}
	waitIdentity(t, ns, component)
	waitPhase(t, ns, component, oda.StatusComplete, 60*time.Second)

	// Every payload in the histories, read raw (no data converter).
	var payloads []*commonpb.Payload
	for _, id := range []string{
		oda.WorkflowID("Component", ns, component),
		oda.WorkflowID("ExposedAPI", ns, component+"-productcatalogmanagement-v4"),
	} {
		events := rawHistory(t, id)
		ps := historyPayloads(events)
		if len(ps) == 0 {
			t.Fatalf("%s: no payload in %d events", id, len(events))
		}
		for _, p := range ps {
			if enc := string(p.GetMetadata()[payloadcodec.MetadataEncoding]); enc != payloadcodec.EncodingEncrypted {
				t.Errorf("%s: a payload is stored as %q, not encrypted", id, enc)
			}
			if bytes.Contains(p.GetData(), []byte(specText)) {
				t.Errorf("%s: a payload holds %q in plain text", id, specText)
			}
		}
		// Failure messages too (the encoded-attributes failure converter).
		for _, e := range events {
			if b, _ := proto.Marshal(e); bytes.Contains(b, []byte(specText)) {
				t.Errorf("%s: event %d (%s) holds %q in plain text", id, e.GetEventId(), e.GetEventType(), specText)
			}
		}
		payloads = append(payloads, ps...)
	}
	t.Logf("%d encrypted payloads, none holding the spec", len(payloads))

	// The Web UI's call: POST /decode from the browser, with its origin,
	// the namespace and the user's token.
	tokenFile := filepath.Join(t.TempDir(), "tokens")
	tokenBytes := make([]byte, 24)
	if _, err := rand.Read(tokenBytes); err != nil {
		t.Fatal(err)
	}
	token := base64.RawURLEncoding.EncodeToString(tokenBytes)
	if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := testartifacts.RegisterSecret("codec server token", token); err != nil {
		t.Fatal(err)
	}
	keys, err := payloadcodec.NewKeyring(keysDir, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	h, err := payloadcodec.NewHandler(payloadcodec.Codec{Keys: keys}, payloadcodec.ServerOptions{
		Origins: []string{"http://127.0.0.1:8233"}, TokenFile: tokenFile, Namespaces: []string{stack.common.TemporalNamespace},
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	body, err := json.Marshal(commonpb.Payloads{Payloads: payloads})
	if err != nil {
		t.Fatal(err)
	}
	decode := func(auth string) (int, []byte) {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/decode", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Origin", "http://127.0.0.1:8233")
		req.Header.Set("X-Namespace", stack.common.TemporalNamespace)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, out
	}
	if code, _ := decode(""); code != http.StatusUnauthorized {
		t.Errorf("decode without a token: %d, want 401", code)
	}
	code, out := decode("Bearer " + token)
	if code != http.StatusOK {
		t.Fatalf("decode: %d %s", code, out)
	}
	var decoded commonpb.Payloads
	if err := json.Unmarshal(out, &decoded); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, p := range decoded.Payloads {
		if string(p.GetMetadata()[payloadcodec.MetadataEncoding]) == payloadcodec.EncodingEncrypted {
			t.Errorf("a payload came back still encrypted")
		}
		found = found || bytes.Contains(p.GetData(), []byte(specText))
	}
	if !found {
		t.Errorf("no decoded payload holds %q", specText)
	}
}

// rawHistory reads a workflow's whole history through the gRPC API, as
// Temporal stores it.
func rawHistory(t *testing.T, workflowID string) []*historypb.HistoryEvent {
	t.Helper()
	var events []*historypb.HistoryEvent
	var token []byte
	for {
		resp, err := stack.tc.WorkflowService().GetWorkflowExecutionHistory(context.Background(), &workflowservice.GetWorkflowExecutionHistoryRequest{
			Namespace:     stack.common.TemporalNamespace,
			Execution:     &commonpb.WorkflowExecution{WorkflowId: workflowID},
			NextPageToken: token,
		})
		if err != nil {
			t.Fatalf("history of %s: %v", workflowID, err)
		}
		events = append(events, resp.GetHistory().GetEvents()...)
		if token = resp.GetNextPageToken(); len(token) == 0 {
			return events
		}
	}
}

// historyPayloads finds every Payload in the events, except those of
// search attributes, which Temporal indexes and no codec may touch.
func historyPayloads(events []*historypb.HistoryEvent) []*commonpb.Payload {
	var out []*commonpb.Payload
	var walk func(m protoreflect.Message)
	walk = func(m protoreflect.Message) {
		switch m.Descriptor().FullName() {
		case "temporal.api.common.v1.SearchAttributes":
			return
		case "temporal.api.common.v1.Payload":
			out = append(out, m.Interface().(*commonpb.Payload))
			return
		}
		m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
			switch {
			case fd.IsMap():
				if fd.MapValue().Message() != nil {
					v.Map().Range(func(_ protoreflect.MapKey, mv protoreflect.Value) bool { walk(mv.Message()); return true })
				}
			case fd.IsList():
				if fd.Message() != nil {
					for i := 0; i < v.List().Len(); i++ {
						walk(v.List().Get(i).Message())
					}
				}
			case fd.Message() != nil:
				walk(v.Message())
			}
			return true
		})
	}
	for _, e := range events {
		walk(e.ProtoReflect())
	}
	return out
}

// TestWebUIIsGivenTheCodecEndpoint: a Temporal Web UI started with the codec
// endpoint (the dev server's --ui-codec-endpoint, TEMPORAL_CODEC_ENDPOINT on
// a UI server) tells the browser to decode through it.
func TestWebUIIsGivenTheCodecEndpoint(t *testing.T) {
	tools, err := localstack.LookupTools()
	if err != nil {
		t.Fatal(err)
	}
	endpoint := "https://odaflow-codec.example.test"
	uiAddr := freeAddress(t)
	_, uiPort, _ := net.SplitHostPort(uiAddr)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv, err := testsuite.StartDevServer(ctx, testsuite.DevServerOptions{
		ExistingPath:  filepath.Join(tools, "temporal"),
		LogLevel:      "error",
		EnableUI:      true,
		UIPort:        uiPort,
		ExtraArgs:     []string{"--ui-codec-endpoint", endpoint},
		ClientOptions: &client.Options{Namespace: "default", Logger: quietLogger{}},
	})
	if err != nil {
		t.Fatalf("start a dev server with the Web UI: %v", err)
	}
	t.Cleanup(func() { _ = srv.Stop() })
	var settings struct {
		Codec struct{ Endpoint string }
	}
	eventually(t, 30*time.Second, "the Web UI's settings", func() (bool, string) {
		resp, err := http.Get("http://" + uiAddr + "/api/v1/settings")
		if err != nil {
			return false, err.Error()
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			return false, fmt.Sprintf("%d %s", resp.StatusCode, body)
		}
		return json.Unmarshal(body, &settings) == nil, string(body)
	})
	if settings.Codec.Endpoint != endpoint {
		t.Errorf("the Web UI's codec endpoint is %q, want %q", settings.Codec.Endpoint, endpoint)
	}
}
