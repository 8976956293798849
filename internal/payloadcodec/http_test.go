package payloadcodec

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	commonpb "go.temporal.io/api/common/v1"
)

const uiOrigin = "https://temporal.example.test"

func newTestServer(t *testing.T) (*httptest.Server, Codec, string) {
	t.Helper()
	dir := t.TempDir()
	writeKey(t, dir, "k1", true)
	k, err := NewKeyring(dir, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	tokenFile := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(tokenFile, []byte("test-token-a\ntest-token-b\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := Codec{Keys: k}
	h, err := NewHandler(c, ServerOptions{Origins: []string{uiOrigin}, TokenFile: tokenFile, Namespaces: []string{"default"}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv, c, tokenFile
}

func post(t *testing.T, url, token, ns string, body []byte) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Origin", uiOrigin)
	if ns != "" {
		req.Header.Set("X-Namespace", ns)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = resp.Body.Close() })
	return resp
}

func TestHandlerDecodesForTheUI(t *testing.T) {
	srv, c, _ := newTestServer(t)
	sealed, err := c.Encode([]*commonpb.Payload{plainPayload(t, secretSpec)})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(commonpb.Payloads{Payloads: sealed})
	resp := post(t, srv.URL+"/decode", "test-token-b", "default", body)
	out, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("decode: %d %s", resp.StatusCode, out)
	}
	if got := resp.Header.Get("Access-Control-Allow-Origin"); got != uiOrigin {
		t.Fatalf("Access-Control-Allow-Origin = %q", got)
	}
	var decoded commonpb.Payloads
	if err := json.Unmarshal(out, &decoded); err != nil {
		t.Fatal(err)
	}
	var s string
	if err := c.DataConverter().FromPayload(decoded.Payloads[0], &s); err != nil || s != secretSpec {
		t.Fatalf("decoded %q, %v", s, err)
	}

	// /encode gives payloads that /decode (and the codec) open.
	plain, _ := json.Marshal(commonpb.Payloads{Payloads: []*commonpb.Payload{plainPayload(t, "x")}})
	resp = post(t, srv.URL+"/encode", "test-token-a", "default", plain)
	out, _ = io.ReadAll(resp.Body)
	var enc commonpb.Payloads
	if resp.StatusCode != http.StatusOK || json.Unmarshal(out, &enc) != nil || string(enc.Payloads[0].Metadata[MetadataEncoding]) != EncodingEncrypted {
		t.Fatalf("encode: %d %s", resp.StatusCode, out)
	}
}

func TestHandlerPreflight(t *testing.T) {
	srv, _, _ := newTestServer(t)
	req, _ := http.NewRequest(http.MethodOptions, srv.URL+"/decode", nil)
	req.Header.Set("Origin", uiOrigin)
	req.Header.Set("Access-Control-Request-Method", "POST")
	req.Header.Set("Access-Control-Request-Headers", "content-type,x-namespace,authorization")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("preflight: %d", resp.StatusCode)
	}
	if got := resp.Header.Get("Access-Control-Allow-Origin"); got != uiOrigin {
		t.Fatalf("Access-Control-Allow-Origin = %q", got)
	}
	for _, h := range []string{"X-Namespace", "Authorization", "Content-Type"} {
		if !strings.Contains(resp.Header.Get("Access-Control-Allow-Headers"), h) {
			t.Fatalf("Access-Control-Allow-Headers %q lacks %s", resp.Header.Get("Access-Control-Allow-Headers"), h)
		}
	}

	// Another origin gets no CORS headers, so its browser refuses the answer.
	req.Header.Set("Origin", "https://evil.example.test")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if got := resp.Header.Get("Access-Control-Allow-Origin"); got != "" {
		t.Fatalf("a foreign origin was allowed: %q", got)
	}
}

func TestHandlerRefuses(t *testing.T) {
	srv, c, tokenFile := newTestServer(t)
	sealed, _ := c.Encode([]*commonpb.Payload{plainPayload(t, secretSpec)})
	body, _ := json.Marshal(commonpb.Payloads{Payloads: sealed})
	for _, tc := range []struct {
		name, token, ns string
		want            int
	}{
		{"no token", "", "default", http.StatusUnauthorized},
		{"wrong token", "test-token-c", "default", http.StatusUnauthorized},
		{"prefix of a token", "test-token", "default", http.StatusUnauthorized},
		{"other namespace", "test-token-a", "other", http.StatusForbidden},
		{"no namespace", "test-token-a", "", http.StatusForbidden},
	} {
		resp := post(t, srv.URL+"/decode", tc.token, tc.ns, body)
		out, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != tc.want {
			t.Errorf("%s: %d %s, want %d", tc.name, resp.StatusCode, out, tc.want)
		}
		if bytes.Contains(out, []byte("productCatalog")) {
			t.Errorf("%s: the refusal holds the plaintext", tc.name)
		}
	}

	// A rotated token file: the new token works, the removed one does not.
	if err := os.WriteFile(tokenFile, []byte("test-token-rotated-longer\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if resp := post(t, srv.URL+"/decode", "test-token-rotated-longer", "default", body); resp.StatusCode != http.StatusOK {
		t.Fatalf("rotated token: %d", resp.StatusCode)
	}
	if resp := post(t, srv.URL+"/decode", "test-token-a", "default", body); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("removed token: %d", resp.StatusCode)
	}

	// GET is not part of the protocol.
	resp, err := http.Get(srv.URL + "/decode")
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("GET /decode: %d", resp.StatusCode)
	}
}
