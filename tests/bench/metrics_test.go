package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// The storm's verdicts (0 activities, 0 writes) rest on reading the
// counters right: a parse that drops series would report a false zero.
func TestScrapeSumsAndSplitsSeries(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`# HELP odaflow_kube_requests_total x
# TYPE odaflow_kube_requests_total counter
odaflow_kube_requests_total{code="200",method="GET"} 7
odaflow_kube_requests_total{code="200",method="PATCH"} 20
odaflow_kube_requests_total{code="409",method="PATCH"} 2
temporal_local_activity_total{activity_type="WriteStatus",namespace="default"} 3
temporal_activity_execution_latency_seconds_count{activity_type="ApplyChildren"} 4
`))
	}))
	defer srv.Close()
	m, err := scrape(strings.TrimPrefix(srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	if got := m.sum(kubeRequestsTotal); got != 29 {
		t.Errorf("total = %v, want 29", got)
	}
	if got := m.sum(kubeRequestsTotal, `code="409"`); got != 2 {
		t.Errorf("409s = %v, want 2", got)
	}
	writes, reads := mutating(m)
	if writes != 22 || reads != 7 {
		t.Errorf("writes/reads = %v/%v, want 22/7", writes, reads)
	}
	if got := m.by("temporal_local_activity_total", "activity_type"); got["WriteStatus"] != 3 {
		t.Errorf("by type = %v", got)
	}
	// A restarted process counts from zero: nothing is subtracted.
	if got := m.minus(metrics{})["temporal_activity_execution_latency_seconds_count{activity_type=\"ApplyChildren\"}"]; got != 4 {
		t.Errorf("minus empty = %v, want 4", got)
	}
}

func TestRetriesOfKeepsOnlyWhatWasDoneAgainOrRefused(t *testing.T) {
	before := metrics{
		`odaflow_kube_requests_total{code="200",method="PATCH"}`:                                    10,
		`odaflow_kube_requests_total{code="409",method="PATCH"}`:                                    1,
		`temporal_local_activity_total{activity_type="Expose",namespace="default"}`:                 2,
		`temporal_local_activity_execution_failed_total{activity_type="Expose",failure_reason="x"}`: 0,
		`odaflow_kube_request_repeats_total{code="503",method="PATCH",resource="virtualservices"}`:  4,
	}
	after := metrics{
		`odaflow_kube_requests_total{code="200",method="PATCH"}`:                                    30,
		`odaflow_kube_requests_total{code="409",method="PATCH"}`:                                    3,
		`odaflow_kube_requests_total{code="500",method="GET"}`:                                      1,
		`temporal_local_activity_total{activity_type="Expose",namespace="default"}`:                 7,
		`temporal_local_activity_execution_failed_total{activity_type="Expose",failure_reason="x"}`: 2,
		`odaflow_kube_request_repeats_total{code="503",method="PATCH",resource="virtualservices"}`:  4,
		`odaflow_kube_request_repeats_total{code="429",method="GET",resource="exposedapis"}`:        1,
	}
	got := retriesOf(after.minus(before))
	want := map[string]float64{
		"answered 409 to PATCH":                  2,
		"answered 500 to GET":                    1,
		"local activity attempts: Expose":        5,
		"local activity attempts failed: Expose": 2,
		"repeated GET exposedapis after 429":     1,
	}
	if len(got) != len(want) {
		t.Errorf("retriesOf = %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v (all: %v)", k, got[k], v, got)
		}
	}
}
