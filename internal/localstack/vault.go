package localstack

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"time"
)

// Vault is a running `vault server -dev`: in memory, on the loopback
// interface, with a random root token that reaches the server through its
// environment (never its command line) and is redacted from its output, so
// it is in no log. Tests use it for SecretsManagement (odaflow's worker
// reads the token from TokenFile, as from a mounted Secret).
type Vault struct {
	// Address is the server's URL, http://127.0.0.1:<port>.
	Address string
	// TokenFile holds the root token (mode 0600).
	TokenFile string
	// DataDir holds TokenFile and logs/vault.log.
	DataDir string

	rootToken string
	bin       string
	port      int
	opts      VaultOptions
	temp      bool
	sink      *logSink

	mu        sync.Mutex
	proc      *process
	unsealKey string
	stopped   bool
}

// VaultOptions configures StartVault.
type VaultOptions struct {
	// Binary is the vault executable; empty finds it with VaultBinary.
	Binary string
	// DataDir holds the token file and the log; empty = a temp dir removed
	// on Stop.
	DataDir string
	// Port is the listen port on 127.0.0.1; 0 = a free one.
	Port int
	// Logs receives the (redacted) output, each line prefixed with
	// "[vault] "; nil = DataDir/logs/vault.log.
	Logs io.Writer
	// StartTimeout bounds each start (and restart); default 2m.
	StartTimeout time.Duration
}

// VaultBinary finds the Vault dev server: $ODAFLOW_VAULT_BIN, or
// bin/vault/vault in the repository, or the tools cache's vault folder that
// `hack/tools.sh --path vault` names (built by `hack/tools.sh vault`; a new
// clone on the same machine has no bin/vault link yet).
func VaultBinary() (string, error) {
	p := os.Getenv("ODAFLOW_VAULT_BIN")
	if p == "" {
		root, err := RepoRoot()
		if err != nil {
			return "", err
		}
		p = filepath.Join(root, "bin", "vault", "vault")
		if _, err := os.Stat(p); err != nil {
			if out, err := exec.Command(filepath.Join(root, "hack", "tools.sh"), "--path", "vault").Output(); err == nil {
				if cached := filepath.Join(lastLine(out), "vault"); isExecutable(cached) {
					p = cached
				}
			}
		}
	}
	st, err := os.Stat(p)
	if err != nil {
		return "", fmt.Errorf("localstack: vault: %w (build it with hack/tools.sh vault)", err)
	}
	if st.IsDir() || st.Mode()&0o111 == 0 {
		return "", fmt.Errorf("localstack: vault: %s is not an executable file", p)
	}
	return p, nil
}

// StartVault starts the Vault dev server and waits until it answers
// /v1/sys/health as initialized, unsealed and active.
func StartVault(ctx context.Context, o VaultOptions) (v *Vault, err error) {
	bin := o.Binary
	if bin == "" {
		if bin, err = VaultBinary(); err != nil {
			return nil, err
		}
	}
	v = &Vault{bin: bin, opts: o}
	if o.DataDir == "" {
		if v.DataDir, err = os.MkdirTemp("", "odaflow-vault-"); err != nil {
			return nil, err
		}
		v.temp = true
	} else {
		if v.DataDir, err = filepath.Abs(o.DataDir); err != nil {
			return nil, err
		}
		if err := os.MkdirAll(v.DataDir, 0o755); err != nil {
			return nil, err
		}
	}
	defer func() {
		if err != nil {
			_ = v.Stop()
			v = nil
		}
	}()
	v.sink = newLogSink(o.Logs, filepath.Join(v.DataDir, "logs"))
	token := make([]byte, 24)
	if _, err := rand.Read(token); err != nil {
		return nil, err
	}
	// Not "hvs.": Vault refuses custom ids with its own token prefixes.
	v.rootToken = "it-root-" + hex.EncodeToString(token)
	v.TokenFile = filepath.Join(v.DataDir, "root-token")
	if err := os.WriteFile(v.TokenFile, []byte(v.rootToken+"\n"), 0o600); err != nil {
		return nil, err
	}
	if v.port = o.Port; v.port == 0 {
		if v.port, err = freePort(); err != nil {
			return nil, err
		}
	}
	v.Address = fmt.Sprintf("http://127.0.0.1:%d", v.port)
	return v, v.start(ctx)
}

// RootToken is the dev server's root token: for the test's own client
// only; never log it.
func (v *Vault) RootToken() string { return v.rootToken }

// UnsealKey is the key the dev server printed (to unseal it after a test
// seals it); "" until the server has printed it.
func (v *Vault) UnsealKey() string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.unsealKey
}

func (v *Vault) start(ctx context.Context) error {
	timeout := v.opts.StartTimeout
	if timeout == 0 {
		timeout = defaultStartTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	args := []string{"server", "-dev", "-dev-no-store-token", fmt.Sprintf("-dev-listen-address=127.0.0.1:%d", v.port)}
	// Only what the server needs: no VAULT_* of the caller's environment
	// (VAULT_ADDR, VAULT_TOKEN...) reaches it, and HOME is its own folder.
	env := []string{"HOME=" + v.DataDir, "PATH=" + os.Getenv("PATH"), "VAULT_DEV_ROOT_TOKEN_ID=" + v.rootToken}
	p, err := startProcessWith("vault", v.bin, args, env, v.redact, v.sink)
	if err != nil {
		return err
	}
	v.mu.Lock()
	v.proc, v.unsealKey = p, ""
	v.mu.Unlock()
	client := &http.Client{Timeout: 2 * time.Second}
	return pollUntil(ctx, "vault "+v.Address, 100*time.Millisecond, p, func(ctx context.Context) (bool, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, v.Address+"/v1/sys/health", nil)
		if err != nil {
			return false, err
		}
		resp, err := client.Do(req)
		if err != nil {
			return false, err
		}
		resp.Body.Close()
		// 200: initialized, unsealed and active.
		return resp.StatusCode == http.StatusOK, fmt.Errorf("health %d", resp.StatusCode)
	})
}

// Kill stops the server at once (SIGKILL), as a crash would; Start brings
// it back on the same address with the same root token and, a dev server
// keeping nothing, empty.
func (v *Vault) Kill() error {
	v.mu.Lock()
	p := v.proc
	v.mu.Unlock()
	return p.stop(0)
}

// Start starts a killed server again (see Kill).
func (v *Vault) Start(ctx context.Context) error {
	v.mu.Lock()
	stopped, p := v.stopped, v.proc
	v.mu.Unlock()
	if stopped {
		return errors.New("localstack: vault is stopped")
	}
	if p != nil && !p.exited() {
		return errors.New("localstack: vault is running")
	}
	return v.start(ctx)
}

// Stop stops the server (SIGTERM, then SIGKILL after a bounded wait) and
// removes a temporary DataDir.
func (v *Vault) Stop() error {
	v.mu.Lock()
	if v.stopped {
		v.mu.Unlock()
		return nil
	}
	v.stopped = true
	p := v.proc
	v.mu.Unlock()
	err := p.stop(stopGrace)
	if v.temp {
		err = errors.Join(err, os.RemoveAll(v.DataDir))
	}
	return err
}

var unsealKeyLine = regexp.MustCompile(`Unseal Key: (\S+)`)

// redact wraps the server's output: complete lines only, the unseal key
// remembered, the root token and the unseal key replaced.
func (v *Vault) redact(w io.Writer) io.Writer {
	return &redactor{v: v, w: w}
}

type redactor struct {
	v   *Vault
	w   io.Writer
	mu  sync.Mutex
	buf []byte
}

func (r *redactor) Write(b []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.buf = append(r.buf, b...)
	for {
		i := bytes.IndexByte(r.buf, '\n')
		if i < 0 {
			// A secret is printed on a line of its own; an unterminated
			// line is held until its end (bounded).
			if len(r.buf) > 64<<10 {
				i = len(r.buf) - 1
			} else {
				return len(b), nil
			}
		}
		line := r.buf[:i+1]
		if m := unsealKeyLine.FindSubmatch(line); m != nil {
			r.v.mu.Lock()
			r.v.unsealKey = string(m[1])
			r.v.mu.Unlock()
			line = bytes.ReplaceAll(line, m[1], []byte("[REDACTED]"))
		}
		line = bytes.ReplaceAll(line, []byte(r.v.rootToken), []byte("[REDACTED]"))
		r.buf = r.buf[i+1:]
		if _, err := r.w.Write(line); err != nil {
			return len(b), err
		}
	}
}

// OperatorPolicyHCL is the least Vault policy odaflow's own token needs
// (rather than a root token, which the Canvas used): manage the kv-sman-*
// mounts, the sman-* policies, and the kubernetes auth method at authPath
// with its sman-* roles. Nothing in it reads or writes a secret. Reading
// `<mount>/config` tells whether a new kv mount serves yet; Vault's `+`
// matches only a whole path segment, so the grant is `+/config` (a kv
// mount's config holds version settings, and the top-level `config` of
// other engines holds no credential on read).
func OperatorPolicyHCL(authPath string) string {
	return fmt.Sprintf(`# odaflow operator
path "sys/mounts" { capabilities = ["read"] }
path "sys/mounts/kv-sman-*" { capabilities = ["create", "read", "update", "delete"] }
path "+/config" { capabilities = ["read"] }
path "sys/policies/acl/sman-*" { capabilities = ["create", "read", "update", "delete"] }
path "sys/auth" { capabilities = ["read"] }
path "sys/auth/%[1]s" { capabilities = ["create", "read", "update", "sudo"] }
path "auth/%[1]s/config" { capabilities = ["create", "read", "update"] }
path "auth/%[1]s/role/sman-*" { capabilities = ["create", "read", "update", "delete"] }
`, authPath)
}
