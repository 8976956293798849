package main

import (
	"os"
	"testing"
	"time"
)

// TestCPUReadingsFollowWorkDone burns CPU in the test process until its own
// reading has grown by 0.3 s (a reading that does not grow times the loop
// out), then checks that the machine's busy time and the process tree's
// CPU grew by at least as much.
func TestCPUReadingsFollowWorkDone(t *testing.T) {
	self0, tree0 := selfCPUSeconds(), treeCPUSeconds(os.Getpid())
	busy0, all0 := machineCPUSeconds()
	if all0 <= 0 || busy0 <= 0 || busy0 > all0 {
		t.Fatalf("machine CPU: busy %.2f of %.2f s", busy0, all0)
	}
	const burn = 0.3
	deadline := time.Now().Add(10 * time.Second)
	x := 0
	for selfCPUSeconds()-self0 < burn {
		if time.Now().After(deadline) {
			t.Fatalf("own CPU grew by %.2f s in 10 s of a busy loop (%d rounds)", selfCPUSeconds()-self0, x)
		}
		for range 1_000_000 {
			x++
		}
	}
	self := selfCPUSeconds() - self0
	tree := treeCPUSeconds(os.Getpid()) - tree0
	busy1, all1 := machineCPUSeconds()
	// USER_HZ ticks: readings are 10 ms apart at best.
	if tree < self-0.02 {
		t.Errorf("the process tree's CPU grew by %.2f s, the process's own by %.2f s", tree, self)
	}
	if busy := busy1 - busy0; busy < self-0.02 || busy > all1-all0+0.01 {
		t.Errorf("machine busy grew by %.2f s (of %.2f s), own CPU by %.2f s", busy, all1-all0, self)
	}
}
