package main

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestComponentHubsAnswerAsAHubThroughTheProxy sends the worker's hub calls
// the way its HTTP client does with HTTP_PROXY set, and checks the answers
// and the counts the bench reports.
func TestComponentHubsAnswerAsAHubThroughTheProxy(t *testing.T) {
	hubs, err := startComponentHubs()
	if err != nil {
		t.Fatal(err)
	}
	defer hubs.close()
	proxy, err := url.Parse(hubs.proxyURL())
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(proxy)}}
	const hub = "http://pc-partyroleapi.bench.svc.cluster.local:8080/tmf-api/partyRoleManagement/v4/hub"
	call := func(method, target, body string) *http.Response {
		t.Helper()
		req, err := http.NewRequest(method, target, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}

	created := call(http.MethodPost, hub, `{"callback":"http://worker/listener/bench/pc?token=x"}`)
	var sub struct {
		ID string `json:"id"`
	}
	if err := json.NewDecoder(created.Body).Decode(&sub); err != nil {
		t.Fatal(err)
	}
	if created.StatusCode != http.StatusCreated || sub.ID == "" {
		t.Fatalf("subscribe: %d with id %q, want 201 with an id", created.StatusCode, sub.ID)
	}
	cases := []struct {
		method, target, body string
		want                 int
	}{
		{http.MethodPost, hub, `{}`, http.StatusBadRequest},
		{http.MethodPost, "http://example.com/hub", `{"callback":"c"}`, http.StatusBadGateway},
		{http.MethodGet, hub, "", http.StatusNotFound},
		{http.MethodDelete, hub + "/" + sub.ID, "", http.StatusNoContent},
	}
	for _, c := range cases {
		if got := call(c.method, c.target, c.body).StatusCode; got != c.want {
			t.Errorf("%s %s: %d, want %d", c.method, c.target, got, c.want)
		}
	}
	if s, u, r := hubs.counts(); s != 1 || u != 1 || r != 3 {
		t.Errorf("counts: %d subscribed, %d unsubscribed, %d refused; want 1, 1, 3", s, u, r)
	}
}
