package localstack

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/Nerzal/gocloak/v13"
)

// Keycloak is a running Keycloak server distribution (`kc.sh start-dev`,
// fetched by `hack/tools.sh keycloak`): in memory (H2 dev-mem, nothing kept
// between starts), on the loopback interface, with a random admin password
// that reaches the server through its environment only and is redacted
// from its output. StartKeycloak sets up the Canvas's realm on it the way
// the Canvas's keycloak-config-cli job does.
type Keycloak struct {
	// URL is the base URL to give gocloak and odaflow's --keycloak-url:
	// http://127.0.0.1:<port>, with the relative path (/auth) when the
	// server is started under one.
	URL string
	// Version is the distribution's version (its version.txt).
	Version string
	// Realm is the Canvas realm set up on it (odari).
	Realm string
	// AdminUser is the master realm's admin (AdminPassword is its password).
	AdminUser string
	// DataDir holds logs/keycloak.log.
	DataDir string
	// Started is how long the start took, from the command to a ready
	// realm set-up.
	Started time.Duration

	password string
	opts     KeycloakOptions
	temp     bool
	sink     *logSink

	mu      sync.Mutex
	proc    *process
	stopped bool
}

// KeycloakOptions configures StartKeycloak.
type KeycloakOptions struct {
	// Home is the folder `hack/tools.sh keycloak` fills (dist/ and
	// java-home); empty finds it with KeycloakHome.
	Home string
	// DataDir holds the log; empty = a temp dir removed on Stop.
	DataDir string
	// Port is the HTTP port on 127.0.0.1; 0 = a free one.
	Port int
	// RelativePath is the path Keycloak serves under ("" or "/auth");
	// "default" picks DefaultRelativePath of the version.
	RelativePath string
	// Realm is the Canvas realm to set up; default CanvasRealm.
	Realm string
	// Logs receives the (redacted) output, each line prefixed with
	// "[keycloak] "; nil = DataDir/logs/keycloak.log.
	Logs io.Writer
	// StartTimeout bounds the start; default 8 minutes (a cold JVM on two
	// busy cores).
	StartTimeout time.Duration
}

// The Canvas's Keycloak set-up (the canvas-oda chart's keycloakConfigCli
// values): the realm components' clients live in, the Canvas's own client
// and the credentials operator's, each with its service account granted a
// realm-management role.
const (
	CanvasRealm             = "odari"
	CanvasSystemClient      = "canvassystem"
	CredentialsOperatorName = "credentialsmanagement-operator"
	KeycloakAdminUser       = "admin"
)

// KeycloakAdminSecretKeys are the keys under which the Canvas stores the
// Keycloak admin account in a Secret (the identity operator's
// environment): the user, then the password.
var KeycloakAdminSecretKeys = [2]string{"KEYCLOAK_USER", "KEYCLOAK_PASSWORD"}

// CanvasKeycloakVersion is the Keycloak the Canvas's umbrella chart
// installs (bitnamilegacy/keycloak 20.0.5, under /auth); `make tools`
// fetches it beside the current release for the contract suite.
const CanvasKeycloakVersion = "20.0.5"

// KeycloakHome finds the folder of a Keycloak distribution that
// `hack/tools.sh keycloak [version]` filled. For version "" (the newest one
// this machine's JDKs run): $ODAFLOW_KEYCLOAK_HOME, or bin/keycloak in the
// repository, or the cache folder `hack/tools.sh --path keycloak` names (a
// new clone on the same machine has no bin/keycloak link yet); for a
// version, the cache folder only.
func KeycloakHome(version string) (string, error) {
	p := ""
	if version == "" {
		p = os.Getenv("ODAFLOW_KEYCLOAK_HOME")
	}
	if p == "" {
		root, err := RepoRoot()
		if err != nil {
			return "", err
		}
		if version == "" {
			p = filepath.Join(root, "bin", "keycloak")
		}
		if !isExecutable(filepath.Join(p, "dist", "bin", "kc.sh")) {
			args := []string{"--path", "keycloak"}
			if version != "" {
				args = append(args, version)
			}
			out, err := exec.Command(filepath.Join(root, "hack", "tools.sh"), args...).Output()
			if err != nil {
				return "", fmt.Errorf("localstack: keycloak %s: hack/tools.sh --path: %w", version, err)
			}
			p = lastLine(out)
		}
	}
	if !isExecutable(filepath.Join(p, "dist", "bin", "kc.sh")) {
		return "", fmt.Errorf("localstack: keycloak: no %s (fetch it with hack/tools.sh keycloak %s)", filepath.Join(p, "dist", "bin", "kc.sh"), version)
	}
	return p, nil
}

// DefaultRelativePath is where a Keycloak of this version is served in the
// set-up odaflow is tested on: the Canvas's chart serves its Keycloak 20
// under /auth (httpRelativePath), and Keycloak 17 and later serve at / by
// default, as the current release is run here.
func DefaultRelativePath(version string) string {
	major, _ := strconv.Atoi(strings.SplitN(version, ".", 2)[0])
	if major > 0 && major < 21 {
		return "/auth"
	}
	return ""
}

// keycloakArgs are kc.sh's arguments: dev mode, in-memory database (so a
// start never finds an earlier run's realm or admin), loopback only.
func keycloakArgs(port int, relativePath string) []string {
	args := []string{"start-dev", "--db=dev-mem", "--http-host=127.0.0.1", "--http-port=" + strconv.Itoa(port)}
	if relativePath != "" {
		args = append(args, "--http-relative-path="+relativePath)
	}
	return args
}

// keycloakEnv is the server's whole environment: the JDK, a HOME of its
// own, and the first admin under both the Keycloak 26 names and the older
// ones (each version reads its own and ignores the other).
func keycloakEnv(javaHome, home, user, password string) []string {
	return []string{
		"JAVA_HOME=" + javaHome, "HOME=" + home, "PATH=" + filepath.Join(javaHome, "bin") + ":" + os.Getenv("PATH"),
		"KC_BOOTSTRAP_ADMIN_USERNAME=" + user, "KC_BOOTSTRAP_ADMIN_PASSWORD=" + password,
		"KEYCLOAK_ADMIN=" + user, "KEYCLOAK_ADMIN_PASSWORD=" + password,
	}
}

// StartKeycloak starts Keycloak, waits until the admin can log in, and sets
// up the Canvas realm.
func StartKeycloak(ctx context.Context, o KeycloakOptions) (k *Keycloak, err error) {
	begin := time.Now()
	if o.Home == "" {
		if o.Home, err = KeycloakHome(""); err != nil {
			return nil, err
		}
	}
	javaHome, err := os.ReadFile(filepath.Join(o.Home, "java-home"))
	if err != nil {
		return nil, fmt.Errorf("localstack: keycloak: the JDK it runs on: %w (run hack/tools.sh keycloak)", err)
	}
	version, err := os.ReadFile(filepath.Join(o.Home, "dist", "version.txt"))
	if err != nil {
		return nil, fmt.Errorf("localstack: keycloak: %w", err)
	}
	k = &Keycloak{Version: versionOf(string(version)), Realm: o.Realm, AdminUser: KeycloakAdminUser, opts: o}
	if k.Realm == "" {
		k.Realm = CanvasRealm
	}
	if o.RelativePath == "default" {
		o.RelativePath = DefaultRelativePath(k.Version)
	}
	if k.DataDir, k.temp, err = (Options{ToolsDir: o.Home, DataDir: o.DataDir}).prepareDir("odaflow-keycloak-"); err != nil {
		return nil, err
	}
	// started, not k: a failing return has set k to nil by the time this
	// runs.
	started := k
	defer func() {
		if err != nil {
			_ = started.Stop()
		}
	}()
	k.sink = newLogSink(o.Logs, filepath.Join(k.DataDir, "logs"))
	pw := make([]byte, 18)
	if _, err := rand.Read(pw); err != nil {
		return nil, err
	}
	k.password = "kc-" + hex.EncodeToString(pw)
	port := o.Port
	if port == 0 {
		if port, err = freePort(); err != nil {
			return nil, err
		}
	}
	k.URL = fmt.Sprintf("http://127.0.0.1:%d%s", port, o.RelativePath)
	timeout := o.StartTimeout
	if timeout == 0 {
		timeout = 8 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	env := keycloakEnv(strings.TrimSpace(string(javaHome)), k.DataDir, k.AdminUser, k.password)
	p, err := startProcessWith("keycloak", filepath.Join(o.Home, "dist", "bin", "kc.sh"), keycloakArgs(port, o.RelativePath), env, k.redact, k.sink)
	if err != nil {
		return nil, err
	}
	k.mu.Lock()
	k.proc = p
	k.mu.Unlock()
	kc := gocloak.NewClient(k.URL)
	// Generous: creating a realm took tens of seconds on two busy cores.
	kc.RestyClient().SetTimeout(2 * time.Minute)
	login := func(ctx context.Context) (string, error) {
		tok, err := kc.LoginAdmin(ctx, k.AdminUser, k.password, "master")
		if err != nil {
			return "", errors.New(messageOfKeycloak(err))
		}
		return tok.AccessToken, nil
	}
	err = pollUntil(ctx, "keycloak "+k.URL, 500*time.Millisecond, p, func(ctx context.Context) (bool, error) {
		_, err := login(ctx)
		return err == nil, err
	})
	if err != nil {
		return nil, err
	}
	if err := SetUpCanvasRealm(ctx, kc, login, k.Realm); err != nil {
		return nil, fmt.Errorf("localstack: keycloak %s: the Canvas realm: %w", k.Version, err)
	}
	k.Started = time.Since(begin)
	return k, nil
}

// AdminPassword is the master realm admin's password: for the tests' own
// client and the admin Secret only; never log it.
func (k *Keycloak) AdminPassword() string { return k.password }

// AdminSecretData is the admin account as the Canvas stores it in a
// Secret (KeycloakAdminSecretKeys).
func (k *Keycloak) AdminSecretData() map[string][]byte {
	return map[string][]byte{KeycloakAdminSecretKeys[0]: []byte(k.AdminUser), KeycloakAdminSecretKeys[1]: []byte(k.password)}
}

// Admin logs the admin in and returns a client and its token, for tests
// that look at the server's state through its admin API.
func (k *Keycloak) Admin(ctx context.Context) (*gocloak.GoCloak, string, error) {
	kc := gocloak.NewClient(k.URL)
	kc.RestyClient().SetTimeout(10 * time.Second)
	tok, err := kc.LoginAdmin(ctx, k.AdminUser, k.password, "master")
	if err != nil {
		return nil, "", fmt.Errorf("keycloak admin login: %s", messageOfKeycloak(err))
	}
	return kc, tok.AccessToken, nil
}

// Stop stops the server (SIGTERM, then SIGKILL after a bounded wait) and
// removes a temporary DataDir.
func (k *Keycloak) Stop() error {
	k.mu.Lock()
	if k.stopped {
		k.mu.Unlock()
		return nil
	}
	k.stopped = true
	p := k.proc
	k.mu.Unlock()
	err := p.stop(stopGrace)
	if k.temp {
		err = errors.Join(err, os.RemoveAll(k.DataDir))
	}
	return err
}

// redact replaces the admin password in the server's output (Keycloak does
// not print it; this keeps it so if a version ever does).
func (k *Keycloak) redact(w io.Writer) io.Writer {
	return &replacer{w: w, secret: []byte(k.password)}
}

// SetUpCanvasRealm creates what the Canvas's keycloak-config-cli job
// creates: realm realm with the canvassystem client (service accounts on,
// standard flow off) whose service account may manage clients, and the
// credentials operator's client whose service account may view them.
// login gives an admin token; each step asks for a new one, because on two
// busy cores creating a realm alone can outlast a token's 60 seconds.
func SetUpCanvasRealm(ctx context.Context, kc *gocloak.GoCloak, login func(context.Context) (string, error), realm string) error {
	token, err := login(ctx)
	if err != nil {
		return err
	}
	if _, err := kc.CreateRealm(ctx, token, gocloak.RealmRepresentation{Realm: gocloak.StringP(realm), Enabled: gocloak.BoolP(true)}); err != nil {
		return fmt.Errorf("create realm %s: %s", realm, messageOfKeycloak(err))
	}
	for _, c := range []struct{ clientID, name, role string }{
		{CanvasSystemClient, "Canvas System", "manage-clients"},
		{CredentialsOperatorName, "Credentials Management Operator", "view-clients"},
	} {
		if token, err = login(ctx); err != nil {
			return err
		}
		id, err := kc.CreateClient(ctx, token, realm, gocloak.Client{
			ClientID: gocloak.StringP(c.clientID), Name: gocloak.StringP(c.name), Enabled: gocloak.BoolP(true),
			StandardFlowEnabled: gocloak.BoolP(false), ServiceAccountsEnabled: gocloak.BoolP(true),
		})
		if err != nil {
			return fmt.Errorf("create client %s: %s", c.clientID, messageOfKeycloak(err))
		}
		sa, err := kc.GetClientServiceAccount(ctx, token, realm, id)
		if err != nil {
			return fmt.Errorf("service account of %s: %s", c.clientID, messageOfKeycloak(err))
		}
		rm, err := kc.GetClients(ctx, token, realm, gocloak.GetClientsParams{ClientID: gocloak.StringP("realm-management")})
		if err != nil || len(rm) != 1 {
			return fmt.Errorf("client realm-management: %d found, %v", len(rm), err)
		}
		role, err := kc.GetClientRole(ctx, token, realm, *rm[0].ID, c.role)
		if err != nil {
			return fmt.Errorf("role %s: %s", c.role, messageOfKeycloak(err))
		}
		if err := kc.AddClientRolesToUser(ctx, token, realm, *rm[0].ID, *sa.ID, []gocloak.Role{*role}); err != nil {
			return fmt.Errorf("grant %s to %s: %s", c.role, gocloak.PString(sa.Username), messageOfKeycloak(err))
		}
	}
	return nil
}

// versionOf reads "Keycloak - Version 26.7.3" (version.txt).
func versionOf(s string) string {
	f := strings.Fields(s)
	if len(f) == 0 {
		return ""
	}
	return f[len(f)-1]
}

// messageOfKeycloak is gocloak's error without the request: the status and
// Keycloak's answer.
func messageOfKeycloak(err error) string {
	var e *gocloak.APIError
	if errors.As(err, &e) {
		return fmt.Sprintf("%d %s", e.Code, e.Message)
	}
	return err.Error()
}

// replacer writes through w with every occurrence of secret replaced,
// holding back an unterminated line so a secret split across writes is
// still found.
type replacer struct {
	w      io.Writer
	secret []byte
	mu     sync.Mutex
	buf    []byte
}

func (r *replacer) Write(b []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.buf = append(r.buf, b...)
	i := lastNewline(r.buf)
	if i < 0 && len(r.buf) <= 64<<10 {
		return len(b), nil
	}
	if i < 0 {
		i = len(r.buf) - 1
	}
	out := r.buf[:i+1]
	if len(r.secret) > 0 {
		out = []byte(strings.ReplaceAll(string(out), string(r.secret), "[REDACTED]"))
	}
	r.buf = append([]byte(nil), r.buf[i+1:]...)
	if _, err := r.w.Write(out); err != nil {
		return len(b), err
	}
	return len(b), nil
}

func lastNewline(b []byte) int {
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] == '\n' {
			return i
		}
	}
	return -1
}
