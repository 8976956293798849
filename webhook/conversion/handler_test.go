package conversion

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func newTestServer(t *testing.T) *httptest.Server {
	t.Helper()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	srv := httptest.NewServer(NewHandler(logger))
	t.Cleanup(srv.Close)
	return srv
}

func post(t *testing.T, url string, body []byte) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, data
}

func decodeResponse(t *testing.T, data []byte) ConversionReview {
	t.Helper()
	var review ConversionReview
	if err := json.Unmarshal(data, &review); err != nil {
		t.Fatalf("response is not a ConversionReview: %v\n%s", err, data)
	}
	if review.Response == nil {
		t.Fatalf("ConversionReview without response: %s", data)
	}
	return review
}

// The review in testdata is what the API server sends when a client reads
// two Components, stored at v1beta3 and v1beta4, at v1.
func TestHandlerConvertsReview(t *testing.T) {
	body, err := os.ReadFile(filepath.Join(testdata, "conversionreview-to-v1.json"))
	if err != nil {
		t.Fatal(err)
	}
	var sent ConversionReview
	if err := json.Unmarshal(body, &sent); err != nil {
		t.Fatal(err)
	}
	srv := newTestServer(t)

	for _, path := range []string{"/convert", "/"} {
		t.Run(path, func(t *testing.T) {
			resp, data := post(t, srv.URL+path, body)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d: %s", resp.StatusCode, data)
			}
			if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type = %q", ct)
			}
			review := decodeResponse(t, data)
			wantHeader := ConversionReview{APIVersion: ReviewAPIVersionV1, Kind: ConversionReviewKind}
			if diff := cmp.Diff(wantHeader, ConversionReview{APIVersion: review.APIVersion, Kind: review.Kind}); diff != "" {
				t.Errorf("review type (-want +got):\n%s", diff)
			}
			if review.Response.UID != sent.Request.UID {
				t.Errorf("uid = %q, want %q", review.Response.UID, sent.Request.UID)
			}
			if diff := cmp.Diff(Status{Status: StatusSuccess}, review.Response.Result); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
			if got, want := len(review.Response.ConvertedObjects), len(sent.Request.Objects); got != want {
				t.Fatalf("%d converted objects, want %d", got, want)
			}
			for i, raw := range review.Response.ConvertedObjects {
				var in, got map[string]any
				if err := json.Unmarshal(sent.Request.Objects[i], &in); err != nil {
					t.Fatal(err)
				}
				if err := json.Unmarshal(raw, &got); err != nil {
					t.Fatal(err)
				}
				want, err := Convert(in, V1)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(canonical(t, want), got); diff != "" {
					t.Errorf("object %d differs from Convert (-want +got):\n%s", i, diff)
				}
				// The API server rejects a response that changes these.
				for _, f := range []string{"name", "namespace", "uid", "resourceVersion"} {
					if g, w := lookup(t, got, "metadata", f), lookup(t, in, "metadata", f); g != w {
						t.Errorf("object %d metadata.%s = %v, want %v", i, f, g, w)
					}
				}
				if got["apiVersion"] != V1 {
					t.Errorf("object %d apiVersion = %v", i, got["apiVersion"])
				}
			}
			// Numbers go through untouched (no float formatting).
			if !bytes.Contains(data, []byte(`"port":8080`)) {
				t.Errorf("response does not contain the port as an integer: %s", data)
			}
			if !bytes.Contains(data, []byte(`"summary/status":{"deployment_status":"Complete"}`)) {
				t.Errorf("status was not kept: %s", data)
			}
		})
	}
}

func TestHandlerFailures(t *testing.T) {
	good := fixture(t, V1beta4)
	bad := fromYAML(t, `{apiVersion: oda.tmforum.org/v1beta3, kind: Component, metadata: {name: broken, namespace: components}, spec: {coreFunction: {exposedAPIs: [{name: a, specification: 5}]}}}`)
	review := func(apiVersion, desired string, objects ...any) []byte {
		raw := make([]json.RawMessage, len(objects))
		for i, o := range objects {
			data, err := json.Marshal(o)
			if err != nil {
				t.Fatal(err)
			}
			raw[i] = data
		}
		data, err := json.Marshal(ConversionReview{
			APIVersion: apiVersion, Kind: ConversionReviewKind,
			Request: &ConversionRequest{UID: "uid-1", DesiredAPIVersion: desired, Objects: raw},
		})
		if err != nil {
			t.Fatal(err)
		}
		return data
	}

	tests := map[string]struct {
		body        []byte
		wantMessage []string // substrings of the Failure message
	}{
		"an object that cannot be converted fails the review": {
			body:        review(ReviewAPIVersionV1, V1, good, bad),
			wantMessage: []string{"objects[1]", `"components/broken"`, "spec.coreFunction.exposedAPIs[0].specification", "expected string or array, got number"},
		},
		"unsupported desired version": {
			body:        review(ReviewAPIVersionV1, "oda.tmforum.org/v1alpha4", good),
			wantMessage: []string{`desired apiVersion "oda.tmforum.org/v1alpha4" is not supported`},
		},
		"object that is not a JSON object": {
			body:        review(ReviewAPIVersionV1, V1, good, []int{1}),
			wantMessage: []string{"objects[1]: not a JSON object"},
		},
		"null object": {
			body:        review(ReviewAPIVersionV1, V1, nil),
			wantMessage: []string{"objects[0]", "object is null"},
		},
	}
	srv := newTestServer(t)
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			resp, data := post(t, srv.URL+"/convert", tc.body)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d, want 200 with a Failure review: %s", resp.StatusCode, data)
			}
			got := decodeResponse(t, data)
			if got.Response.UID != "uid-1" {
				t.Errorf("uid = %q", got.Response.UID)
			}
			if got.Response.Result.Status != StatusFailure {
				t.Errorf("result status = %q, want Failure", got.Response.Result.Status)
			}
			if len(got.Response.ConvertedObjects) != 0 {
				t.Errorf("a failed review carries %d objects", len(got.Response.ConvertedObjects))
			}
			for _, want := range tc.wantMessage {
				if !strings.Contains(got.Response.Result.Message, want) {
					t.Errorf("message %q does not contain %q", got.Response.Result.Message, want)
				}
			}
		})
	}

	t.Run("v1beta1 review is answered as v1beta1", func(t *testing.T) {
		resp, data := post(t, srv.URL+"/", review(ReviewAPIVersionV1beta1, V1beta3, good))
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d: %s", resp.StatusCode, data)
		}
		if got := decodeResponse(t, data); got.APIVersion != ReviewAPIVersionV1beta1 || got.Response.Result.Status != StatusSuccess {
			t.Errorf("got apiVersion %q result %+v", got.APIVersion, got.Response.Result)
		}
	})
}

func TestHandlerRejectsBadRequests(t *testing.T) {
	srv := newTestServer(t)
	tests := map[string]struct {
		method, path string
		body         []byte
		wantStatus   int
		wantBody     string
	}{
		"GET":                     {method: http.MethodGet, path: "/convert", wantStatus: http.StatusMethodNotAllowed, wantBody: "POST a ConversionReview"},
		"PUT on /":                {method: http.MethodPut, path: "/", body: []byte(`{}`), wantStatus: http.StatusMethodNotAllowed},
		"unknown path":            {method: http.MethodPost, path: "/other", body: []byte(`{}`), wantStatus: http.StatusNotFound},
		"not JSON":                {method: http.MethodPost, path: "/convert", body: []byte(`<xml/>`), wantStatus: http.StatusBadRequest, wantBody: "decoding ConversionReview"},
		"trailing data":           {method: http.MethodPost, path: "/convert", body: []byte(`{"request":{"uid":"u"}} {}`), wantStatus: http.StatusBadRequest, wantBody: "unexpected data"},
		"no request":              {method: http.MethodPost, path: "/convert", body: []byte(`{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview"}`), wantStatus: http.StatusBadRequest, wantBody: "no request"},
		"wrong kind":              {method: http.MethodPost, path: "/convert", body: []byte(`{"kind":"AdmissionReview","request":{}}`), wantStatus: http.StatusBadRequest, wantBody: "expected kind ConversionReview"},
		"unknown review version":  {method: http.MethodPost, path: "/convert", body: []byte(`{"apiVersion":"apiextensions.k8s.io/v2","request":{}}`), wantStatus: http.StatusBadRequest, wantBody: "unsupported ConversionReview apiVersion"},
		"body larger than 10 MiB": {method: http.MethodPost, path: "/convert", body: bytes.Repeat([]byte(" "), MaxRequestBytes+1), wantStatus: http.StatusRequestEntityTooLarge, wantBody: "larger than"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			req, err := http.NewRequest(tc.method, srv.URL+tc.path, bytes.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			data, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.wantStatus {
				t.Errorf("status = %d, want %d (%s)", resp.StatusCode, tc.wantStatus, data)
			}
			if len(bytes.TrimSpace(data)) == 0 {
				t.Error("empty response body")
			}
			if !strings.Contains(string(data), tc.wantBody) {
				t.Errorf("body %q does not contain %q", data, tc.wantBody)
			}
			if tc.wantStatus == http.StatusMethodNotAllowed && resp.Header.Get("Allow") != http.MethodPost {
				t.Errorf("Allow = %q, want POST", resp.Header.Get("Allow"))
			}
		})
	}
}
