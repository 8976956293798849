package activities

import (
	"reflect"
	"testing"
)

func TestMissingAnnotations(t *testing.T) {
	want := map[string]string{"prometheus.io/scrape": "true", "prometheus.io/port": "8080"}
	for name, tc := range map[string]struct {
		have, want, patch map[string]string
	}{
		"pod without annotations":      {nil, want, want},
		"already annotated: no write":  {map[string]string{"prometheus.io/scrape": "true", "prometheus.io/port": "8080", "other": "x"}, want, nil},
		"one missing":                  {map[string]string{"prometheus.io/scrape": "true"}, want, map[string]string{"prometheus.io/port": "8080"}},
		"a stale value is overwritten": {map[string]string{"prometheus.io/scrape": "false", "prometheus.io/port": "8080"}, want, map[string]string{"prometheus.io/scrape": "true"}},
		"nothing wanted":               {map[string]string{"a": "b"}, nil, nil},
	} {
		if got := missingAnnotations(tc.have, tc.want); !reflect.DeepEqual(got, tc.patch) {
			t.Errorf("%s: missingAnnotations = %v, want %v", name, got, tc.patch)
		}
	}
}
