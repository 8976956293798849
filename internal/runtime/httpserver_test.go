package runtime

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
)

// A request whose headers exceed MaxHeaderBytes is refused with 431 before
// any handler runs.
func TestHTTPServerRefusesOversizedHeaders(t *testing.T) {
	handled := false
	srv := newHTTPServer("127.0.0.1:0", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { handled = true }))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	// net/http allows MaxHeaderBytes plus 4096 bytes of slack.
	big := strings.Repeat("a", MaxHeaderBytes+8192)
	if _, err := fmt.Fprintf(conn, "POST /listener HTTP/1.1\r\nHost: x\r\nX-Big: %s\r\nContent-Length: 0\r\n\r\n", big); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge || handled {
		t.Errorf("status %d, handled %v; want 431 and no handler", resp.StatusCode, handled)
	}
	if srv.ReadTimeout == 0 || srv.WriteTimeout == 0 || srv.IdleTimeout == 0 || srv.ReadHeaderTimeout == 0 {
		t.Errorf("a timeout is unset: %+v", srv)
	}
}
