package main

import (
	"bufio"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// metrics is one scrape of a process's /metrics: each series (the metric
// name with its labels, as printed) and its value.
type metrics map[string]float64

func scrape(addr string) (metrics, error) {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", addr, err)
	}
	defer resp.Body.Close()
	m := metrics{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndex(line, " ")
		if i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err == nil {
			m[line[:i]] = v
		}
	}
	return m, sc.Err()
}

func seriesName(series string) string {
	if i := strings.IndexByte(series, '{'); i >= 0 {
		return series[:i]
	}
	return series
}

// sum adds the series of metric name whose labels contain every one of
// with (each written as in the exposition, e.g. `code="409"`).
func (m metrics) sum(name string, with ...string) float64 {
	total := 0.0
	for s, v := range m {
		if seriesName(s) != name || !containsAll(s, with) {
			continue
		}
		total += v
	}
	return total
}

// by adds the series of metric name per value of label.
func (m metrics) by(name, label string) map[string]float64 {
	out := map[string]float64{}
	for s, v := range m {
		if seriesName(s) != name {
			continue
		}
		out[labelValue(s, label)] += v
	}
	return out
}

func containsAll(s string, with []string) bool {
	for _, w := range with {
		if !strings.Contains(s, w) {
			return false
		}
	}
	return true
}

func labelValue(series, label string) string {
	i := strings.Index(series, label+`="`)
	if i < 0 {
		return ""
	}
	rest := series[i+len(label)+2:]
	return rest[:strings.IndexByte(rest, '"')]
}

// minus is m - base per series (a series missing from base counts from 0,
// as in a restarted process).
func (m metrics) minus(base metrics) metrics {
	out := metrics{}
	for s, v := range m {
		out[s] = v - base[s]
	}
	return out
}

// retriesOf picks, from the change in a worker's metrics over a size, what
// was done again or refused: apiserver answers other than 2xx as the caller
// saw them, the transport's quick repeats (by the answer that caused each),
// and local activity attempts that failed, by activity type, beside the
// attempts made. A write made twice shows up here as a failed attempt of
// its activity, or as a repeat of its request.
func retriesOf(delta metrics) map[string]float64 {
	out := map[string]float64{}
	for s, v := range delta {
		if v <= 0 {
			continue
		}
		switch seriesName(s) {
		case kubeRequestsTotal:
			if code := labelValue(s, "code"); !strings.HasPrefix(code, "2") {
				out[fmt.Sprintf("answered %s to %s", code, labelValue(s, "method"))] += v
			}
		case "odaflow_kube_request_repeats_total":
			out[fmt.Sprintf("repeated %s %s after %s", labelValue(s, "method"), labelValue(s, "resource"), labelValue(s, "code"))] += v
		case "temporal_local_activity_execution_failed_total":
			out["local activity attempts failed: "+labelValue(s, "activity_type")] += v
		case "temporal_local_activity_total":
			out["local activity attempts: "+labelValue(s, "activity_type")] += v
		}
	}
	return out
}
