// Command keycloak-double runs the Keycloak test double as a process, for
// test suites that cannot start it in-process (gocloak's own tests, see
// hack/gocloak-contract.sh). It prints its base URL on the first line of
// stdout and serves until interrupted.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/odaflow/odaflow/internal/doubles/keycloak"
)

func main() {
	password := flag.String("admin-password-env", "KEYCLOAK_DOUBLE_ADMIN_PASSWORD", "environment variable holding the master admin's password")
	var imports multiFlag
	flag.Var(&imports, "import", "realm export (JSON) to import; repeatable")
	canvas := flag.String("canvas-realm", keycloak.CanvasRealm, "realm seeded with the canvassystem client (empty: none)")
	lifetime := flag.Duration("token-lifetime", 5*time.Minute, "access token lifetime")
	flag.Parse()
	pw := os.Getenv(*password)
	if pw == "" {
		fmt.Fprintf(os.Stderr, "keycloak-double: %s is not set\n", *password)
		os.Exit(2)
	}
	s, err := keycloak.New(keycloak.Options{AdminPassword: pw, TokenLifetime: *lifetime})
	if err != nil {
		fmt.Fprintln(os.Stderr, "keycloak-double:", err)
		os.Exit(1)
	}
	defer s.Close()
	if *canvas != "" {
		if err := s.SeedCanvas(*canvas); err != nil {
			fmt.Fprintln(os.Stderr, "keycloak-double:", err)
			os.Exit(1)
		}
	}
	for _, f := range imports {
		b, err := os.ReadFile(f)
		if err == nil {
			err = s.ImportRealm(b)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "keycloak-double: import %s: %v\n", f, err)
			os.Exit(1)
		}
	}
	fmt.Println(s.URL())
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	<-sig
}

type multiFlag []string

func (m *multiFlag) String() string     { return fmt.Sprint(*m) }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }
