package localstack

import "testing"

// TestFreePortsStayBelowTheEphemeralRange: the ports a server is started
// on must not be ones the kernel hands out to outgoing connections.
func TestFreePortsStayBelowTheEphemeralRange(t *testing.T) {
	if ports, err := freePorts(0); err != nil || len(ports) != 0 {
		t.Fatalf("freePorts(0) = %v, %v", ports, err)
	}
	ports, err := freePorts(5)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, p := range ports {
		if p < 20000 || p > 32767 || seen[p] {
			t.Errorf("port %d: outside 20000-32767 or repeated (%v)", p, ports)
		}
		seen[p] = true
		if err := portFree(p); err != nil {
			t.Errorf("port %d not bindable: %v", p, err)
		}
	}
}
