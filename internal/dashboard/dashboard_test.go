package dashboard

import (
	"reflect"
	"testing"
)

func TestMetricNames(t *testing.T) {
	for _, tc := range []struct {
		expr string
		want []string
	}{
		{`up`, []string{"up"}},
		{`rate(rest_client_requests_total{code=~"429|5..", host!="x"}[$__rate_interval])`, []string{"rest_client_requests_total"}},
		{`histogram_quantile(0.99, sum by (le, verb) (rate(rest_client_request_duration_seconds_bucket{namespace="$namespace"}[5m])))`,
			[]string{"rest_client_request_duration_seconds_bucket"}},
		{`sum(rate(a_total[1m])) by (kind) / ignoring(kind) group_left(job) sum(rate(b_total[1m]))`, []string{"a_total", "b_total"}},
		{`max without (pod) (leader_election_master_status) == bool 1`, []string{"leader_election_master_status"}},
		{`sum(increase(x_total[1h] offset 1d)) or vector(0)`, []string{"x_total"}},
		{`a_total and on (kind) b and c unless d`, []string{"a_total", "b", "c", "d"}},
		{`label_replace(m, "dst", "$1", "src", "(.*)")`, []string{"m"}},
		{`sum(rate(m{l="a}b", k='{'}[${__rate_interval}])) by (l)`, []string{"m"}},
		{`rate(ns:series:rate5m[5m]) * 1e3 + 0x1f - .5 # a comment with words`, []string{"ns:series:rate5m"}},
		{`sum by (workflow_type)(rate(temporal_workflow_completed_total[$__rate_interval])) > $threshold`, []string{"temporal_workflow_completed_total"}},
		{`m @ start() + m2 @ 1609746000`, []string{"m", "m2"}},
		{`sum(rate(m[5m:1m]))`, []string{"m"}},
	} {
		got, err := MetricNames(tc.expr)
		if err != nil {
			t.Errorf("%s: %v", tc.expr, err)
			continue
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.expr, got, tc.want)
		}
	}
}

func TestMetricNamesRefusesWhatItCannotCheck(t *testing.T) {
	for _, expr := range []string{`{__name__=~"temporal_.*"}`, `rate(m{l="x}[5m])`, `sum(rate(m[5m])`} {
		if got, err := MetricNames(expr); err == nil {
			t.Errorf("%s: got %v, want an error", expr, got)
		}
	}
}

func TestQueries(t *testing.T) {
	board := []byte(`{
	  "panels": [
	    {"type": "row", "title": "Row", "panels": [
	      {"title": "Nested", "targets": [{"refId": "A", "expr": "rate(a_total[5m])"}]}
	    ]},
	    {"title": "Top", "targets": [{"refId": "A", "expr": "b"}, {"refId": "B", "expr": " "}]}
	  ],
	  "templating": {"list": [
	    {"name": "ds", "type": "datasource", "query": "prometheus"},
	    {"name": "namespace", "type": "query", "query": {"query": "label_values(c{job=~\"a,b\"}, namespace)"}},
	    {"name": "job", "type": "query", "query": "label_values(d, job)"}
	  ]}
	}`)
	got, err := Queries(board)
	if err != nil {
		t.Fatal(err)
	}
	want := []Query{
		{Where: "Nested/A", Expr: "rate(a_total[5m])"},
		{Where: "Top/A", Expr: "b"},
		{Where: "variable namespace", Expr: `c{job=~"a,b"}`},
		{Where: "variable job", Expr: "d"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
	if _, err := Queries([]byte(`{"templating": {"list": [{"name": "x", "type": "query", "query": "query_result(up)"}]}}`)); err == nil {
		t.Error("a query variable other than label_values was accepted")
	}
}
