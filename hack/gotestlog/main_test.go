package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestSummaryShowsPackagesAndOnlyFailedOutput(t *testing.T) {
	in := strings.Join([]string{
		`{"Action":"start","Package":"a"}`,
		`{"Action":"run","Package":"a","Test":"TestOK"}`,
		`{"Action":"output","Package":"a","Test":"TestOK","Output":"=== RUN   TestOK\n"}`,
		`{"Action":"output","Package":"a","Test":"TestOK","Output":"quiet detail\n"}`,
		`{"Action":"pass","Package":"a","Test":"TestOK"}`,
		`{"Action":"output","Package":"a","Output":"ok  \ta\t0.1s\n"}`,
		`{"Action":"pass","Package":"a"}`,
		`{"Action":"output","Package":"b","Test":"TestBad","Output":"    b_test.go:9: boom\n"}`,
		`{"Action":"fail","Package":"b","Test":"TestBad"}`,
		`{"Action":"output","Package":"b","Output":"FAIL\tb\t0.2s\n"}`,
		`{"Action":"fail","Package":"b"}`,
	}, "\n")
	var out, log bytes.Buffer
	failed := summarize(strings.NewReader(in), &out, &log)
	if !failed {
		t.Error("a failed package was not reported as a failure")
	}
	got := out.String()
	for _, want := range []string{"ok  \ta\t0.1s", "b_test.go:9: boom", "FAIL\tb"} {
		if !strings.Contains(got, want) {
			t.Errorf("summary lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "quiet detail") {
		t.Errorf("summary shows a passing test's output:\n%s", got)
	}
	if !strings.Contains(log.String(), "quiet detail") || !strings.Contains(log.String(), "boom") {
		t.Errorf("the log lacks some output:\n%s", log.String())
	}
}
