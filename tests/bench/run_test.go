package main

import (
	"testing"
	"time"
)

// TestCPUReadingsFollowWorkDone burns CPU in the test process and checks
// that its own reading grew by about that much and the machine's busy time
// by at least as much.
func TestCPUReadingsFollowWorkDone(t *testing.T) {
	self0 := selfCPUSeconds()
	busy0, all0 := machineCPUSeconds()
	if all0 <= 0 || busy0 <= 0 || busy0 > all0 {
		t.Fatalf("machine CPU: busy %.2f of %.2f s", busy0, all0)
	}
	x := 0
	for until := time.Now().Add(400 * time.Millisecond); time.Now().Before(until); {
		x++
	}
	self := selfCPUSeconds() - self0
	busy1, all1 := machineCPUSeconds()
	if self < 0.25 || self > 2 {
		t.Errorf("own CPU grew by %.2f s over a 0.4 s busy loop (%d rounds)", self, x)
	}
	if busy := busy1 - busy0; busy < self*0.9 || busy > all1-all0 {
		t.Errorf("machine busy grew by %.2f s (of %.2f s), own CPU by %.2f s", busy, all1-all0, self)
	}
}
