package activities

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	vault "github.com/hashicorp/vault/api"
	"go.temporal.io/sdk/temporal"

	"github.com/odaflow/odaflow/oda"
	"github.com/odaflow/odaflow/secrets"
)

// Application error types of the Vault activities. The workflow retries
// none of the non-retryable ones until the spec or Vault's configuration
// changes; a retryable failure keeps the activity retrying.
const (
	// ErrTypeVaultForbidden: Vault refused odaflow's token (401/403). More
	// attempts cannot help until an operator fixes the token or its policy.
	ErrTypeVaultForbidden = "VaultForbidden"
	// ErrTypeVaultRejected: Vault refused a request for its content (4xx).
	ErrTypeVaultRejected = "VaultRejected"
	// ErrTypeVaultConflict: the mount or auth path exists with another type.
	ErrTypeVaultConflict = "VaultConflict"
	// ErrTypeVaultUnavailable: sealed, down, unreachable or 5xx (retryable).
	ErrTypeVaultUnavailable = "VaultUnavailable"
	// ErrTypeVaultCredentials: odaflow's own credentials cannot be read
	// (retryable: a mounted Secret may appear or be fixed).
	ErrTypeVaultCredentials = "VaultCredentials"
	// ErrTypeVaultNotConfigured: the worker runs without a Vault.
	ErrTypeVaultNotConfigured = "VaultNotConfigured"
	// ErrTypeVaultOwnedElsewhere: the store's mount exists and records
	// another SecretsManagement, or none (not retried).
	ErrTypeVaultOwnedElsewhere = oda.ReasonOwnedElsewhere
)

// DefaultVaultAuthPath is the kubernetes auth mount the sidecars log in
// through. It differs from the Canvas's `jwt-k8s-sman` (a jwt method) so
// that odaflow never reconfigures a Canvas Vault's jwt method as
// kubernetes.
const DefaultVaultAuthPath = "kubernetes-sman"

// DefaultServiceAccountTokenFile is the pod's own service-account token.
const DefaultServiceAccountTokenFile = "/var/run/secrets/kubernetes.io/serviceaccount/token"

// VaultConfig configures the Vault activities. It holds file paths, never
// secret values: tokens are read from files when needed and never logged.
type VaultConfig struct {
	// Address is Vault's URL, e.g. https://vault.vault.svc:8200.
	Address string
	// CACertFile is a PEM bundle to verify Vault's certificate; empty uses
	// the system roots.
	CACertFile string
	// SkipVerify turns TLS verification off (development only).
	SkipVerify bool
	// TokenFile is a file holding a Vault token (a mounted Secret); it is
	// re-read on every activity, so a rotated token is used at once.
	TokenFile string
	// LoginAuthPath and LoginRole, when TokenFile is empty, log odaflow in
	// with Vault's kubernetes auth using the service-account token in
	// LoginJWTFile (DefaultServiceAccountTokenFile when empty).
	LoginAuthPath, LoginRole, LoginJWTFile string

	// AuthPath is the kubernetes auth mount the sidecars log in through
	// (DefaultVaultAuthPath when empty); odaflow enables it if absent.
	AuthPath string
	// KubernetesHost, when set, is written to the auth method's config
	// (`kubernetes_host`) with KubernetesCACertFile and the reviewer token
	// in TokenReviewerJWTFile; empty leaves the config to the platform
	// (when odaflow enables the method it then points it at the in-cluster
	// apiserver, https://kubernetes.default.svc).
	KubernetesHost       string
	KubernetesCACertFile string
	TokenReviewerJWTFile string
	// Audience, when set, is required in the sidecars' service-account
	// tokens.
	Audience string
	// TokenTTL is the lifetime of a sidecar's Vault token; 1h when zero.
	TokenTTL time.Duration
	// RequestTimeout bounds each Vault request; 10s when zero.
	RequestTimeout time.Duration
}

// DisabledVault is the Vault activities of a worker started without a
// Vault address: every call fails, non-retryably, saying so, and the
// SecretsManagement's status shows it (rather than an activity type no
// worker serves, which would time out without a reason).
func DisabledVault() *Vault { return &Vault{log: slog.New(slog.DiscardHandler)} }

func (v *Vault) enabled() error {
	if v.cfg.Address == "" {
		return temporal.NewNonRetryableApplicationError("odaflow's worker has no Vault configured (--vault-address)", ErrTypeVaultNotConfigured, nil)
	}
	return nil
}

// Vault performs the Vault side effects of secrets management. Every
// exported method is a Temporal activity (the worker registers the struct).
type Vault struct {
	cfg  VaultConfig
	base http.RoundTripper
	log  *slog.Logger

	mu         sync.Mutex
	loginToken string
	loginUntil time.Time

	// authChecked caches that the sidecar auth method exists and is
	// configured, so that each further store costs no auth requests.
	authChecked atomic.Bool
	// requests counts every Vault request (metrics and tests).
	requests atomic.Int64
}

// NewVault checks the configuration and builds the Vault activities. It
// makes no request: Vault may be down while the worker starts.
func NewVault(cfg VaultConfig, log *slog.Logger) (*Vault, error) {
	if cfg.Address == "" {
		return nil, errors.New("vault: no address")
	}
	if cfg.TokenFile == "" && (cfg.LoginAuthPath == "" || cfg.LoginRole == "") {
		return nil, errors.New("vault: give a token file, or a kubernetes auth path and role to log in with")
	}
	if cfg.AuthPath == "" {
		cfg.AuthPath = DefaultVaultAuthPath
	}
	if cfg.LoginJWTFile == "" {
		cfg.LoginJWTFile = DefaultServiceAccountTokenFile
	}
	if cfg.RequestTimeout == 0 {
		cfg.RequestTimeout = 10 * time.Second
	}
	if cfg.TokenTTL == 0 {
		cfg.TokenTTL = time.Hour
	}
	tlsCfg := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: cfg.SkipVerify} //nolint:gosec // opt-in, development only
	if cfg.CACertFile != "" {
		pem, err := os.ReadFile(cfg.CACertFile)
		if err != nil {
			return nil, fmt.Errorf("vault: CA bundle: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("vault: CA bundle %s holds no PEM certificate", cfg.CACertFile)
		}
		tlsCfg.RootCAs = pool
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = tlsCfg
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Vault{cfg: cfg, base: tr, log: log}, nil
}

type countingTransport struct {
	base http.RoundTripper
	n    *atomic.Int64
	all  *atomic.Int64
}

func (c countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	c.all.Add(1)
	return c.base.RoundTrip(r)
}

// client returns a Vault client for one activity, authenticated, counting
// its requests into n.
func (v *Vault) client(ctx context.Context, n *atomic.Int64) (*vault.Client, error) {
	cfg := vault.DefaultConfig()
	cfg.Address = v.cfg.Address
	cfg.HttpClient = &http.Client{Transport: countingTransport{base: v.base, n: n, all: &v.requests}}
	cfg.Timeout = v.cfg.RequestTimeout
	// Temporal retries with backoff and records each attempt; hidden
	// retries inside the client would only blur that.
	cfg.MaxRetries = 0
	c, err := vault.NewClient(cfg)
	if err != nil {
		return nil, temporal.NewNonRetryableApplicationError("vault client: "+err.Error(), ErrTypeVaultRejected, err)
	}
	// NewClient takes VAULT_TOKEN and VAULT_NAMESPACE from the environment;
	// odaflow's token comes only from a file or a login.
	c.ClearToken()
	c.ClearNamespace()
	token, err := v.token(ctx, c)
	if err != nil {
		return nil, err
	}
	c.SetToken(token)
	return c, nil
}

func (v *Vault) token(ctx context.Context, c *vault.Client) (string, error) {
	if v.cfg.TokenFile != "" {
		b, err := os.ReadFile(v.cfg.TokenFile)
		if err != nil {
			return "", temporal.NewApplicationErrorWithCause("read the Vault token file: "+err.Error(), ErrTypeVaultCredentials, err)
		}
		t := strings.TrimSpace(string(b))
		if t == "" {
			return "", temporal.NewApplicationError("the Vault token file "+v.cfg.TokenFile+" is empty", ErrTypeVaultCredentials)
		}
		return t, nil
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.loginToken != "" && time.Now().Before(v.loginUntil) {
		return v.loginToken, nil
	}
	jwt, err := os.ReadFile(v.cfg.LoginJWTFile)
	if err != nil {
		return "", temporal.NewApplicationErrorWithCause("read the service-account token to log in to Vault: "+err.Error(), ErrTypeVaultCredentials, err)
	}
	sec, err := c.Logical().WriteWithContext(ctx, "auth/"+v.cfg.LoginAuthPath+"/login", map[string]any{
		"role": v.cfg.LoginRole, "jwt": strings.TrimSpace(string(jwt)),
	})
	if err != nil {
		return "", v.classify("log in to Vault with kubernetes auth at auth/"+v.cfg.LoginAuthPath, err)
	}
	if sec == nil || sec.Auth == nil || sec.Auth.ClientToken == "" {
		return "", temporal.NewApplicationError("Vault's kubernetes login returned no token", ErrTypeVaultCredentials)
	}
	ttl := time.Duration(sec.Auth.LeaseDuration) * time.Second
	v.loginToken = sec.Auth.ClientToken
	// Renew by logging in again well before expiry.
	v.loginUntil = time.Now().Add(ttl * 3 / 4)
	return v.loginToken, nil
}

// dropLogin forgets a login token Vault refused (revoked or expired early).
func (v *Vault) dropLogin() {
	v.mu.Lock()
	v.loginToken = ""
	v.mu.Unlock()
}

// classify turns a Vault error into a Temporal error: a permission refusal
// does not retry (type VaultForbidden), nor does a refusal of the request's
// content; sealed, unreachable, 5xx and the kv "upgrading" answer retry.
func (v *Vault) classify(what string, err error) error {
	var re *vault.ResponseError
	if errors.As(err, &re) {
		msg := strings.Join(re.Errors, "; ")
		switch {
		case re.StatusCode == http.StatusUnauthorized || re.StatusCode == http.StatusForbidden:
			if v.cfg.TokenFile == "" {
				v.dropLogin()
			}
			return temporal.NewNonRetryableApplicationError(fmt.Sprintf("%s: Vault refused odaflow's token (%d %s): check the token and its policy", what, re.StatusCode, msg), ErrTypeVaultForbidden, err)
		case re.StatusCode == http.StatusServiceUnavailable && strings.Contains(strings.ToLower(msg), "sealed"):
			return temporal.NewApplicationErrorWithCause(fmt.Sprintf("%s: Vault at %s is sealed", what, v.cfg.Address), ErrTypeVaultUnavailable, err)
		case re.StatusCode >= 500:
			return temporal.NewApplicationErrorWithCause(fmt.Sprintf("%s: Vault at %s answered %d: %s", what, v.cfg.Address, re.StatusCode, msg), ErrTypeVaultUnavailable, err)
		case isUpgrading(err):
			return temporal.NewApplicationErrorWithCause(fmt.Sprintf("%s: the kv mount is still upgrading", what), ErrTypeVaultUnavailable, err)
		default:
			return temporal.NewNonRetryableApplicationError(fmt.Sprintf("%s: Vault refused the request (%d): %s", what, re.StatusCode, msg), ErrTypeVaultRejected, err)
		}
	}
	if errors.Is(err, context.Canceled) {
		return err
	}
	return temporal.NewApplicationErrorWithCause(fmt.Sprintf("%s: Vault at %s is unreachable: %v", what, v.cfg.Address, err), ErrTypeVaultUnavailable, err)
}

func isUpgrading(err error) bool {
	return err != nil && strings.Contains(strings.ToLower(err.Error()), "upgrading")
}

// statusOf is the HTTP status of a Vault error, 0 for other errors.
func statusOf(err error) int {
	var re *vault.ResponseError
	if errors.As(err, &re) {
		return re.StatusCode
	}
	return 0
}

// StoreInput names one SecretsManagement's store.
type StoreInput struct {
	Namespace string       `json:"namespace"`
	Name      string       `json:"name"`
	Spec      secrets.Spec `json:"spec"`
	// UID is the SecretsManagement's, recorded on the mount.
	UID string `json:"uid,omitempty"`
}

// StoreResult says what a store activity did (never a secret).
type StoreResult struct {
	Names secrets.Names `json:"names"`
	// MountCreated is true when the kv mount was created by this call.
	MountCreated bool `json:"mountCreated,omitempty"`
	// Kept, on deletion, says why the store was left alone: its mount
	// belongs to another SecretsManagement or records no owner.
	Kept string `json:"kept,omitempty"`
	// Requests is the number of Vault requests the activity made.
	Requests int `json:"requests"`
}

// ConfigureStore makes Vault match a SecretsManagement, idempotently: the
// kv-v2 mount is enabled if absent (an existing one is kept with its data),
// the policy and the login role are written every time, so a changed
// podSelector reaches Vault (the Canvas never updated them, §5.5.3), and the
// sidecars' kubernetes auth method is enabled and configured if needed.
func (v *Vault) ConfigureStore(ctx context.Context, in StoreInput) (StoreResult, error) {
	if err := v.enabled(); err != nil {
		return StoreResult{}, err
	}
	var n atomic.Int64
	names := secrets.NamesFor(in.Namespace, in.Name)
	res := StoreResult{Names: names}
	defer func() { res.Requests = int(n.Load()) }()
	c, err := v.client(ctx, &n)
	if err != nil {
		return res, err
	}
	created, err := v.ensureMount(ctx, c, names, in)
	if err != nil {
		return res, err
	}
	res.MountCreated = created
	if err := c.Sys().PutPolicyWithContext(ctx, names.Policy, secrets.PolicyHCL(names)); err != nil {
		return res, v.classify("write policy "+names.Policy, err)
	}
	if err := v.ensureAuth(ctx, c); err != nil {
		return res, err
	}
	role := secrets.RoleBody(names, in.Spec, secrets.RoleInput{Namespace: in.Namespace, Audience: v.cfg.Audience, TTLSeconds: int(v.cfg.TokenTTL / time.Second)})
	rolePath := "auth/" + v.cfg.AuthPath + "/role/" + names.Role
	_, err = c.Logical().WriteWithContext(ctx, rolePath, role)
	if err != nil && gone(err) && v.authChecked.Load() {
		// The cached check is stale: the auth method is gone (a Vault that
		// restarted empty, or an operator disabled it). Without this the
		// attempt would fail as VaultRejected, not retried by the activity,
		// and the store would wait out a backoff for nothing.
		v.authChecked.Store(false)
		if err := v.ensureAuth(ctx, c); err != nil {
			return res, err
		}
		_, err = c.Logical().WriteWithContext(ctx, rolePath, role)
	}
	if err != nil {
		v.authChecked.Store(false) // the auth method may have been disabled meanwhile
		return res, v.classify("write login role "+names.Role, err)
	}
	if created {
		if err := v.waitKV(ctx, c, names.Mount); err != nil {
			return res, err
		}
	}
	res.Requests = int(n.Load())
	v.log.Info("vault store configured", "secretsManagement", in.Namespace+"/"+in.Name, "mount", names.Mount, "mountCreated", created, "requests", res.Requests)
	return res, nil
}

func (v *Vault) ensureMount(ctx context.Context, c *vault.Client, names secrets.Names, in StoreInput) (bool, error) {
	mounts, err := c.Sys().ListMountsWithContext(ctx)
	if err != nil {
		return false, v.classify("list secrets engines", err)
	}
	if m, ok := mounts[names.Mount+"/"]; ok {
		// The owner first: the type of another's mount is none of this
		// SecretsManagement's business.
		if err := mountClaim(names.Mount, m.Description, in.Namespace, in.Name); err != nil {
			return false, err
		}
		if m.Type != "kv" || (m.Options["version"] != "2") {
			return false, temporal.NewNonRetryableApplicationError(fmt.Sprintf("Vault mount %s exists as %s (version %q), not kv version 2: remove or rename it", names.Mount, m.Type, m.Options["version"]), ErrTypeVaultConflict, nil)
		}
		if want := secrets.MountDescription(in.Namespace, in.Name, in.UID); in.UID != "" && m.Description != want {
			// The same SecretsManagement re-created: record its uid.
			if err := c.Sys().TuneMountAllowNilWithContext(ctx, names.Mount, vault.TuneMountConfigInput{Description: &want}); err != nil {
				return false, v.classify("record the owner on mount "+names.Mount, err)
			}
		}
		return false, nil
	}
	err = c.Sys().MountWithContext(ctx, names.Mount, &vault.MountInput{
		Type: "kv", Options: map[string]string{"version": "2"},
		Description: secrets.MountDescription(in.Namespace, in.Name, in.UID),
	})
	if err != nil && strings.Contains(err.Error(), "path is already in use") {
		// Mounted meanwhile: by another run of this store, or not.
		mounts, lerr := c.Sys().ListMountsWithContext(ctx)
		if lerr != nil {
			return false, v.classify("list secrets engines", lerr)
		}
		m, ok := mounts[names.Mount+"/"]
		if !ok {
			return false, v.classify("enable kv-v2 at "+names.Mount, err)
		}
		return false, mountClaim(names.Mount, m.Description, in.Namespace, in.Name)
	}
	if err != nil {
		return false, v.classify("enable kv-v2 at "+names.Mount, err)
	}
	return true, nil
}

// mountClaim refuses a mount whose description records another
// SecretsManagement, or none: its policy and login role (same CIID) are
// then that owner's too, and none of the three is written or deleted.
func mountClaim(mount, description, namespace, name string) error {
	me := oda.OwnerRecord{Namespace: namespace, Name: name}
	var recorded *oda.OwnerRecord
	if ns, n, uid, ok := secrets.MountOwner(description); ok {
		recorded = &oda.OwnerRecord{Namespace: ns, Name: n, UID: uid}
	}
	claim := oda.ClaimOf(recorded, me, false)
	if claim == oda.ClaimOwned {
		return nil
	}
	return temporal.NewNonRetryableApplicationError(oda.Refusal("Vault mount "+mount, claim, recorded, me), ErrTypeVaultOwnedElsewhere, nil)
}

// ensureAuth enables the sidecars' kubernetes auth method if absent and
// configures it when odaflow manages its configuration.
func (v *Vault) ensureAuth(ctx context.Context, c *vault.Client) error {
	if v.authChecked.Load() {
		return nil
	}
	auths, err := c.Sys().ListAuthWithContext(ctx)
	if err != nil {
		return v.classify("list auth methods", err)
	}
	enabled := false
	if a, ok := auths[v.cfg.AuthPath+"/"]; ok {
		if a.Type != "kubernetes" {
			return temporal.NewNonRetryableApplicationError(fmt.Sprintf("Vault auth path %s is a %s method, not kubernetes: choose another --vault-auth-path", v.cfg.AuthPath, a.Type), ErrTypeVaultConflict, nil)
		}
	} else {
		err := c.Sys().EnableAuthWithOptionsWithContext(ctx, v.cfg.AuthPath, &vault.EnableAuthOptions{
			Type: "kubernetes", Description: "odaflow: ODA secrets-management sidecars",
		})
		if err != nil && !strings.Contains(err.Error(), "path is already in use") {
			return v.classify("enable kubernetes auth at "+v.cfg.AuthPath, err)
		}
		enabled = true
	}
	if v.cfg.KubernetesHost != "" || enabled {
		if err := v.configureAuth(ctx, c, enabled); err != nil {
			return err
		}
	}
	v.authChecked.Store(true)
	return nil
}

func (v *Vault) configureAuth(ctx context.Context, c *vault.Client, fresh bool) error {
	path := "auth/" + v.cfg.AuthPath + "/config"
	host := v.cfg.KubernetesHost
	if host == "" {
		host = "https://kubernetes.default.svc"
	}
	if !fresh {
		cur, err := c.Logical().ReadWithContext(ctx, path)
		if err != nil {
			return v.classify("read "+path, err)
		}
		if cur != nil && cur.Data["kubernetes_host"] == host {
			return nil
		}
	}
	body := map[string]any{"kubernetes_host": host}
	if v.cfg.KubernetesCACertFile != "" {
		ca, err := os.ReadFile(v.cfg.KubernetesCACertFile)
		if err != nil {
			return temporal.NewApplicationErrorWithCause("read the Kubernetes CA for Vault: "+err.Error(), ErrTypeVaultCredentials, err)
		}
		body["kubernetes_ca_cert"] = string(ca)
	}
	if v.cfg.TokenReviewerJWTFile != "" {
		jwt, err := os.ReadFile(v.cfg.TokenReviewerJWTFile)
		if err != nil {
			return temporal.NewApplicationErrorWithCause("read the token-reviewer token for Vault: "+err.Error(), ErrTypeVaultCredentials, err)
		}
		body["token_reviewer_jwt"] = strings.TrimSpace(string(jwt))
		// Vault outside the cluster has no local service account to use.
		body["disable_local_ca_jwt"] = true
	}
	if _, err := c.Logical().WriteWithContext(ctx, path, body); err != nil {
		return v.classify("configure "+path, err)
	}
	return nil
}

// waitKV waits until a new kv-v2 mount serves requests: right after it is
// enabled it answers "upgrading" for a moment.
func (v *Vault) waitKV(ctx context.Context, c *vault.Client, mount string) error {
	deadline := time.Now().Add(15 * time.Second)
	delay := 50 * time.Millisecond
	for {
		_, err := c.Logical().ReadWithContext(ctx, mount+"/config")
		if err == nil {
			return nil
		}
		if !isUpgrading(err) || time.Now().After(deadline) {
			return v.classify("check the kv mount "+mount, err)
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		if delay < time.Second {
			delay *= 2
		}
	}
}

// DeleteStoreInput names the store to remove.
type DeleteStoreInput struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// KeepData keeps the kv mount (and so the secrets) and removes only
	// the access to it.
	KeepData bool `json:"keepData,omitempty"`
}

// DeleteStore removes the login role, the policy and (unless KeepData) the
// kv mount with its secrets. Each step tolerates what is already gone, and
// every step runs (unlike the Canvas, §5.5.5), access first, so that a
// failure never leaves a role granting a deleted mount's successor.
func (v *Vault) DeleteStore(ctx context.Context, in DeleteStoreInput) (StoreResult, error) {
	if err := v.enabled(); err != nil {
		return StoreResult{}, err
	}
	var n atomic.Int64
	names := secrets.NamesFor(in.Namespace, in.Name)
	res := StoreResult{Names: names}
	c, err := v.client(ctx, &n)
	if err != nil {
		return res, err
	}
	mounts, err := c.Sys().ListMountsWithContext(ctx)
	if err != nil {
		return res, v.classify("list secrets engines", err)
	}
	m, mounted := mounts[names.Mount+"/"]
	if mounted {
		if err := mountClaim(names.Mount, m.Description, in.Namespace, in.Name); err != nil {
			// Not this SecretsManagement's store: nothing of it is
			// touched, and the deletion goes ahead.
			res.Kept = messageOfErr(err)
			res.Requests = int(n.Load())
			v.log.Warn("left a Vault store that is not this SecretsManagement's", "secretsManagement", in.Namespace+"/"+in.Name, "mount", names.Mount)
			return res, nil
		}
	}
	_, err = c.Logical().DeleteWithContext(ctx, "auth/"+v.cfg.AuthPath+"/role/"+names.Role)
	if err != nil && !gone(err) {
		return res, v.classify("delete login role "+names.Role, err)
	}
	if err := c.Sys().DeletePolicyWithContext(ctx, names.Policy); err != nil && !gone(err) {
		return res, v.classify("delete policy "+names.Policy, err)
	}
	if !in.KeepData && mounted {
		if err := c.Sys().UnmountWithContext(ctx, names.Mount); err != nil && !gone(err) {
			return res, v.classify("disable the kv mount "+names.Mount, err)
		}
	}
	res.Requests = int(n.Load())
	v.log.Info("vault store deleted", "secretsManagement", in.Namespace+"/"+in.Name, "keepData", in.KeepData, "requests", res.Requests)
	return res, nil
}

// gone reports an error that means "already deleted": 404, or a route
// that no longer exists because its auth method is disabled.
func gone(err error) bool {
	if statusOf(err) == http.StatusNotFound {
		return true
	}
	msg := err.Error()
	return statusOf(err) == http.StatusBadRequest && (strings.Contains(msg, "no handler for route") || strings.Contains(msg, "no matching mount"))
}
