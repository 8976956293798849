// Command cmd serves the Kong Admin API double (package kongadmin) on a TCP
// address, for clients that run in another process: go-kong's own tests
// (hack/go-kong-contract.sh) and manual poking. It prints
// "KONG_ADMIN_URL=http://<addr>" once it listens, writes the same URL to
// -url-file when given, and stops on SIGINT or SIGTERM.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/odaflow/odaflow/internal/doubles/kongadmin"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "address to listen on (port 0 picks a free one)")
	urlFile := flag.String("url-file", "", "file to write the base URL to once listening")
	flag.Parse()
	if err := run(*addr, *urlFile); err != nil {
		fmt.Fprintln(os.Stderr, "kongadmin double:", err)
		os.Exit(1)
	}
}

func run(addr, urlFile string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", addr, err)
	}
	url := "http://" + ln.Addr().String()
	srv := &http.Server{Handler: kongadmin.New(), ReadHeaderTimeout: 10 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	fmt.Println("KONG_ADMIN_URL=" + url)
	if urlFile != "" {
		// Written after Serve started, so a reader of the file can connect.
		if err := os.WriteFile(urlFile, []byte(url+"\n"), 0o600); err != nil {
			return fmt.Errorf("write %s: %w", urlFile, err)
		}
	}
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("shutdown: %w", err)
	}
	return nil
}
