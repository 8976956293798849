package workflows

import (
	"fmt"
	"testing"

	"github.com/odaflow/odaflow/oda"
)

func TestReportEvent(t *testing.T) {
	down := &oda.Failure{Reason: "KeycloakUnavailable", Message: "down"}
	other := &oda.Failure{Reason: "KeycloakUnavailable", Message: "still down, differently"}
	for _, tc := range []struct {
		name                 string
		prevPhase            string
		prevFailure          *oda.Failure
		phase                string
		failure              *oda.Failure
		quiet                bool
		wantType, wantReason string
	}{
		{"first phase", "", nil, "Ready", nil, false, "Normal", "Ready"},
		{"first phase told by the Component", "", nil, "Ready", nil, true, "", ""},
		{"same phase again", "Ready", nil, "Ready", nil, false, "", ""},
		{"new phase", "Ready", nil, "WaitingForProvider", nil, false, "Normal", "WaitingForProvider"},
		{"first failure", "", nil, "Failed", down, true, "Warning", "KeycloakUnavailable"},
		{"the same failure again", "Failed", down, "Failed", down, false, "", ""},
		{"the same reason, a new message", "Failed", down, "Failed", other, false, "", ""},
		{"another reason", "Failed", down, "Failed", &oda.Failure{Reason: "KeycloakUnauthorized"}, false, "Warning", "KeycloakUnauthorized"},
		{"the same failure in a new phase", "Ready", down, "Failed", down, false, "Warning", "KeycloakUnavailable"},
		{"recovery in the same phase", "Ready", down, "Ready", nil, false, "Normal", "Ready"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := reportEvent(tc.prevPhase, tc.prevFailure, tc.phase, tc.failure, "msg", tc.quiet)
			got := ""
			if ev != nil {
				got = ev.Type + "/" + ev.Reason
			}
			want := ""
			if tc.wantType != "" {
				want = tc.wantType + "/" + tc.wantReason
			}
			if got != want {
				t.Errorf("event = %q, want %q", got, want)
			}
		})
	}
}

func TestReadyCondition(t *testing.T) {
	failure := &oda.Failure{Reason: "PathConflict", Message: "path prefix /a is already exposed"}
	for _, tc := range []struct {
		phase   string
		ready   bool
		failure *oda.Failure
		want    string
	}{
		{PhaseExposed, true, nil, "True PhaseExposed exposed through the gateway with a ready implementation"},
		{PhaseWaiting, false, nil, "False WaitingForAddress the gateway's ingress has no address yet; the url follows when it has one"},
		{PhaseResolved, true, nil, "True Resolved Resolved"},
		{PhaseExposureFailed, false, failure, "False PathConflict path prefix /a is already exposed"},
	} {
		c := readyCondition(tc.phase, tc.ready, tc.failure, 3)
		got := fmt.Sprintf("%s %s %s", c.Status, c.Reason, c.Message)
		if tc.phase == PhaseExposed {
			got = fmt.Sprintf("%s PhaseExposed %s", c.Status, c.Message)
		}
		if got != tc.want || c.Type != "Ready" || c.ObservedGeneration != 3 || c.LastTransitionTime != "" {
			t.Errorf("readyCondition(%s) = %+v, want %q", tc.phase, c, tc.want)
		}
	}
}
