package activities

import "testing"

func TestStatusFenceOrder(t *testing.T) {
	f := StatusFence{RunStart: 100, Seq: 20}
	tests := []struct {
		current string
		want    bool
	}{
		{"", true},
		{"garbage", true},
		{"100.x", true},
		{"100.19", true},
		{"100.20", false}, // the same step: its write is already there
		{"100.21", false},
		{"99.500", true}, // an earlier run, however long its history
		{"101.1", false}, // a later run
	}
	for _, tt := range tests {
		if got := f.after(tt.current); got != tt.want {
			t.Errorf("%s after %q = %v, want %v", f, tt.current, got, tt.want)
		}
	}
	if f.String() != "100.20" {
		t.Errorf("String() = %q", f.String())
	}
}
