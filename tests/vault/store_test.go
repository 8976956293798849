package vault

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	vaultapi "github.com/hashicorp/vault/api"

	"github.com/odaflow/odaflow/activities"
	"github.com/odaflow/odaflow/internal/localstack"
	"github.com/odaflow/odaflow/secrets"
)

func ensureNamespace(t *testing.T, ns string) {
	t.Helper()
	_, err := env.core.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// podToken is what a pod running as ns/sa presents: a service-account
// token from the apiserver's TokenRequest API.
func podToken(t *testing.T, ns, sa string) string {
	t.Helper()
	ctx := context.Background()
	ensureNamespace(t, ns)
	_, err := env.core.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	tr, err := env.core.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(600))},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tr.Status.Token
}

// login logs in as the sidecar does: auth/<path>/login {jwt, role}, at
// the sidecars' auth path unless another is given.
func login(t *testing.T, role, jwt string, authPath ...string) (string, error) {
	t.Helper()
	path := env.cfg.AuthPath
	if len(authPath) > 0 {
		path = authPath[0]
	}
	c := vaultAs(t, "")
	sec, err := c.Logical().WriteWithContext(context.Background(), "auth/"+path+"/login", map[string]any{"role": role, "jwt": jwt})
	if err != nil {
		return "", err
	}
	return sec.Auth.ClientToken, nil
}

func spec(sa string) secrets.Spec {
	return secrets.Spec{Type: secrets.TypeSideCar, PodSelector: secrets.Selector{Namespace: "components", Name: "*", ServiceAccount: sa}, SidecarPort: 5000}
}

// TestStoresIsolateComponents configures the stores of two components and
// checks, through Vault's own kubernetes login, that each pod identity
// reaches its own secrets only.
func TestStoresIsolateComponents(t *testing.T) {
	ctx := context.Background()
	const ns = "components"
	a, b := secrets.NamesFor(ns, "demo-a"), secrets.NamesFor(ns, "demo-b")

	var total time.Duration
	var requests []int
	for _, c := range []struct{ name, sa string }{{"demo-a", "demo-a-sa"}, {"demo-b", "demo-b-*"}} {
		start := time.Now()
		res, err := env.vault.ConfigureStore(ctx, activities.StoreInput{Namespace: ns, Name: c.name, Spec: spec(c.sa)})
		d := time.Since(start)
		if err != nil {
			t.Fatalf("configure %s: %v", c.name, err)
		}
		if !res.MountCreated {
			t.Errorf("%s: mount not reported as created", c.name)
		}
		total += d
		requests = append(requests, res.Requests)
		t.Logf("FIGURE configure-store %s (first): %s, %d Vault requests", c.name, d.Round(time.Microsecond), res.Requests)
	}
	// Again: idempotent, nothing created, fewer requests.
	start := time.Now()
	res, err := env.vault.ConfigureStore(ctx, activities.StoreInput{Namespace: ns, Name: "demo-a", Spec: spec("demo-a-sa")})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("FIGURE configure-store demo-a (again, unchanged): %s, %d Vault requests", time.Since(start).Round(time.Microsecond), res.Requests)
	if res.MountCreated || res.Requests > 3 {
		t.Errorf("second configure: created=%v requests=%d, want no mount and at most 3 requests (list mounts, policy, role)", res.MountCreated, res.Requests)
	}

	jwtA := podToken(t, ns, "demo-a-sa")
	jwtB := podToken(t, ns, "demo-b-api")
	tokA, err := login(t, a.Role, jwtA)
	if err != nil {
		t.Fatalf("component A's pod cannot log in: %v", err)
	}
	tokB, err := login(t, b.Role, jwtB)
	if err != nil {
		t.Fatalf("component B's pod (service account matching the glob demo-b-*) cannot log in: %v", err)
	}
	va, vb := vaultAs(t, tokA), vaultAs(t, tokB)

	// A writes and reads its secret under the sidecar's base path.
	pathA := a.Mount + "/data/" + secrets.BasePath + "/db"
	if _, err := va.Logical().WriteWithContext(ctx, pathA, map[string]any{"data": map[string]any{"password": "s3cret"}}); err != nil {
		t.Fatalf("A writes its secret: %v", err)
	}
	sec, err := va.Logical().ReadWithContext(ctx, pathA)
	if err != nil || sec == nil {
		t.Fatalf("A reads its secret: %v", err)
	}
	if got := sec.Data["data"].(map[string]any)["password"]; got != "s3cret" {
		t.Fatalf("A read %v", got)
	}
	// No list (as in the Canvas), nothing outside the base path.
	if _, err := va.Logical().ListWithContext(ctx, a.Mount+"/metadata/"+secrets.BasePath); statusCode(err) != 403 {
		t.Errorf("A lists its secrets: err %v, want 403", err)
	}
	if _, err := va.Logical().WriteWithContext(ctx, a.Mount+"/data/other", map[string]any{"data": map[string]any{"x": "y"}}); statusCode(err) != 403 {
		t.Errorf("A writes outside the base path: err %v, want 403", err)
	}
	// B cannot read or overwrite A's secret.
	if _, err := vb.Logical().ReadWithContext(ctx, pathA); statusCode(err) != 403 {
		t.Errorf("B reads A's secret: err %v, want 403", err)
	}
	if _, err := vb.Logical().WriteWithContext(ctx, pathA, map[string]any{"data": map[string]any{"password": "x"}}); statusCode(err) != 403 {
		t.Errorf("B writes A's secret: err %v, want 403", err)
	}
	// B's identity cannot take A's role; nor can a same-named service
	// account in another namespace.
	if _, err := login(t, a.Role, jwtB); err == nil {
		t.Error("B's pod logged in with A's role")
	}
	if _, err := login(t, a.Role, podToken(t, "elsewhere", "demo-a-sa")); err == nil {
		t.Error("a service account demo-a-sa of another namespace logged in with A's role")
	}

	// A selector change reaches Vault: A's role now wants another account.
	if _, err := env.vault.ConfigureStore(ctx, activities.StoreInput{Namespace: ns, Name: "demo-a", Spec: spec("demo-a-v2")}); err != nil {
		t.Fatal(err)
	}
	if _, err := login(t, a.Role, jwtA); err == nil {
		t.Error("after the selector change, the old service account still logs in")
	}
	if _, err := login(t, a.Role, podToken(t, ns, "demo-a-v2")); err != nil {
		t.Errorf("after the selector change, the new service account cannot log in: %v", err)
	}

	// DeleteStore removes A's role, policy and mount (with its secret).
	start = time.Now()
	del, err := env.vault.DeleteStore(ctx, activities.DeleteStoreInput{Namespace: ns, Name: "demo-a"})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("FIGURE delete-store demo-a: %s, %d Vault requests", time.Since(start).Round(time.Microsecond), del.Requests)
	mounts, err := env.root.Sys().ListMountsWithContext(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := mounts[a.Mount+"/"]; ok {
		t.Error("A's mount survived DeleteStore")
	}
	if _, ok := mounts[b.Mount+"/"]; !ok {
		t.Error("B's mount went with A's")
	}
	if pol, err := env.root.Sys().GetPolicyWithContext(ctx, a.Policy); err != nil || pol != "" {
		t.Errorf("A's policy survived: %q %v", pol, err)
	}
	if r, err := env.root.Logical().ReadWithContext(ctx, "auth/"+env.cfg.AuthPath+"/role/"+a.Role); err != nil || r != nil {
		t.Errorf("A's role survived: %v %v", r, err)
	}
	// Idempotent: deleting again finds nothing and succeeds.
	if _, err := env.vault.DeleteStore(ctx, activities.DeleteStoreInput{Namespace: ns, Name: "demo-a"}); err != nil {
		t.Errorf("second DeleteStore: %v", err)
	}
	// Keep-data removes the access only.
	if _, err := env.vault.DeleteStore(ctx, activities.DeleteStoreInput{Namespace: ns, Name: "demo-b", KeepData: true}); err != nil {
		t.Fatal(err)
	}
	mounts, _ = env.root.Sys().ListMountsWithContext(ctx)
	if _, ok := mounts[b.Mount+"/"]; !ok {
		t.Error("keep-data removed B's mount")
	}
	if _, err := login(t, b.Role, jwtB); err == nil {
		t.Error("keep-data left B's role")
	}
	if err := env.root.Sys().UnmountWithContext(ctx, b.Mount); err != nil {
		t.Fatal(err)
	}
	t.Logf("FIGURE configure-store mean of first configures: %s; Vault requests per component: first %v, unchanged re-configure %d, delete %d",
		(total / 2).Round(time.Microsecond), requests, res.Requests, del.Requests)
}

// TestConfigureStoreLatency configures 20 components on the warm server.
func TestConfigureStoreLatency(t *testing.T) {
	ctx := context.Background()
	const n = 20
	var sum, worst time.Duration
	reqs := 0
	for i := range n {
		name := fmt.Sprintf("bench-%02d", i)
		start := time.Now()
		res, err := env.vault.ConfigureStore(ctx, activities.StoreInput{Namespace: "bench", Name: name, Spec: spec(name)})
		d := time.Since(start)
		if err != nil {
			t.Fatal(err)
		}
		sum += d
		worst = max(worst, d)
		reqs += res.Requests
	}
	for i := range n {
		if _, err := env.vault.DeleteStore(ctx, activities.DeleteStoreInput{Namespace: "bench", Name: fmt.Sprintf("bench-%02d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("FIGURE configure-store over %d new components: mean %s, max %s, %.1f Vault requests per component",
		n, (sum / n).Round(time.Microsecond), worst.Round(time.Microsecond), float64(reqs)/n)
}

func appErrType(t *testing.T, err error) (string, bool) {
	t.Helper()
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) {
		t.Fatalf("error %v (%T) is not an ApplicationError", err, err)
	}
	return appErr.Type(), appErr.NonRetryable()
}

// TestVaultErrors: a token without permission is a non-retryable
// VaultForbidden; a Vault that is down or sealed is retryable with a clear
// message; a missing token file is retryable.
func TestVaultErrors(t *testing.T) {
	ctx := context.Background()
	weak, err := env.root.Auth().Token().CreateWithContext(ctx, &vaultapiTokenCreate)
	if err != nil {
		t.Fatal(err)
	}
	weakFile := filepath.Join(t.TempDir(), "weak-token")
	if err := os.WriteFile(weakFile, []byte(weak.Auth.ClientToken), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := env.cfg
	cfg.TokenFile = weakFile
	v, err := activities.NewVault(cfg, env.log)
	if err != nil {
		t.Fatal(err)
	}
	_, err = v.ConfigureStore(ctx, activities.StoreInput{Namespace: "components", Name: "weak", Spec: spec("x")})
	if typ, nonRetryable := appErrType(t, err); typ != activities.ErrTypeVaultForbidden || !nonRetryable {
		t.Errorf("weak token: %s nonRetryable=%v (%v)", typ, nonRetryable, err)
	}

	down := env.cfg
	port, _ := freePort()
	down.Address = fmt.Sprintf("http://127.0.0.1:%d", port)
	v, _ = activities.NewVault(down, env.log)
	_, err = v.ConfigureStore(ctx, activities.StoreInput{Namespace: "components", Name: "down", Spec: spec("x")})
	if typ, nonRetryable := appErrType(t, err); typ != activities.ErrTypeVaultUnavailable || nonRetryable {
		t.Errorf("vault down: %s nonRetryable=%v (%v)", typ, nonRetryable, err)
	}
	t.Logf("vault down: %v", err)

	missing := env.cfg
	missing.TokenFile = filepath.Join(t.TempDir(), "absent")
	v, _ = activities.NewVault(missing, env.log)
	_, err = v.DeleteStore(ctx, activities.DeleteStoreInput{Namespace: "components", Name: "x"})
	if typ, nonRetryable := appErrType(t, err); typ != activities.ErrTypeVaultCredentials || nonRetryable {
		t.Errorf("missing token file: %s nonRetryable=%v (%v)", typ, nonRetryable, err)
	}
}

// TestVaultSealed seals the dev server: a retryable error that says so;
// unsealed again with the key the dev server printed.
func TestVaultSealed(t *testing.T) {
	ctx := context.Background()
	key := env.vaultSrv.UnsealKey()
	if key == "" {
		t.Fatal("no unseal key in the dev server's output")
	}
	if err := env.root.Sys().SealWithContext(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := env.root.Sys().UnsealWithContext(ctx, key); err != nil {
			t.Errorf("unseal: %v", err)
		}
		if !vaultUp() {
			t.Error("vault not healthy after unseal")
		}
	})
	_, err := env.vault.ConfigureStore(ctx, activities.StoreInput{Namespace: "components", Name: "sealed", Spec: spec("x")})
	typ, nonRetryable := appErrType(t, err)
	if typ != activities.ErrTypeVaultUnavailable || nonRetryable || !strings.Contains(err.Error(), "is sealed") {
		t.Errorf("sealed: %s nonRetryable=%v (%v)", typ, nonRetryable, err)
	}
	t.Logf("sealed: %v", err)
}

// TestOperatorLogsInWithKubernetesAuth runs odaflow as a pod would: no
// token file, a kubernetes login with its own service account, and only
// localstack.OperatorPolicyHCL, the least policy it needs.
func TestOperatorLogsInWithKubernetesAuth(t *testing.T) {
	ctx := context.Background()
	sys := env.root.Sys()
	mounts, err := sys.ListAuthWithContext(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := mounts["kubernetes-odaflow/"]; !ok {
		if err := sys.EnableAuthWithOptionsWithContext(ctx, "kubernetes-odaflow", &vaultapi.EnableAuthOptions{Type: "kubernetes"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := env.root.Logical().WriteWithContext(ctx, "auth/kubernetes-odaflow/config", map[string]any{
		"kubernetes_host": env.kube.Host, "kubernetes_ca_cert": string(env.kube.RESTConfig.CAData),
		"token_reviewer_jwt": env.kube.RESTConfig.BearerToken, "disable_local_ca_jwt": true,
	}); err != nil {
		t.Fatal(err)
	}
	if err := sys.PutPolicyWithContext(ctx, "odaflow-operator", localstack.OperatorPolicyHCL(env.cfg.AuthPath)); err != nil {
		t.Fatal(err)
	}
	if _, err := env.root.Logical().WriteWithContext(ctx, "auth/kubernetes-odaflow/role/odaflow", map[string]any{
		"bound_service_account_names": []string{"odaflow-worker"}, "bound_service_account_namespaces": []string{"odaflow-system"},
		"token_policies": []string{"odaflow-operator"}, "token_ttl": 600,
	}); err != nil {
		t.Fatal(err)
	}
	jwtFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(jwtFile, []byte(podToken(t, "odaflow-system", "odaflow-worker")), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := env.cfg
	cfg.TokenFile, cfg.LoginAuthPath, cfg.LoginRole, cfg.LoginJWTFile = "", "kubernetes-odaflow", "odaflow", jwtFile
	// A fresh auth path too, so that the operator policy must cover
	// enabling and configuring it.
	cfg.AuthPath = "kubernetes-sman-op"
	if err := sys.PutPolicyWithContext(ctx, "odaflow-operator", localstack.OperatorPolicyHCL(cfg.AuthPath)); err != nil {
		t.Fatal(err)
	}
	v, err := activities.NewVault(cfg, env.log)
	if err != nil {
		t.Fatal(err)
	}
	res, err := v.ConfigureStore(ctx, activities.StoreInput{Namespace: "components", Name: "op", Spec: spec("op-sa")})
	if err != nil {
		t.Fatalf("configure with the operator policy: %v", err)
	}
	t.Logf("FIGURE configure-store with kubernetes login and a fresh auth method: %d Vault requests (login included)", res.Requests)
	// The operator policy reads no secret.
	names := secrets.NamesFor("components", "op")
	if _, err := env.root.Logical().WriteWithContext(ctx, names.Mount+"/data/sidecar/k", map[string]any{"data": map[string]any{"v": "1"}}); err != nil {
		t.Fatal(err)
	}
	opTok, err := login(t, "odaflow", mustRead(t, jwtFile), "kubernetes-odaflow")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := vaultAs(t, opTok).Logical().ReadWithContext(ctx, names.Mount+"/data/sidecar/k"); statusCode(err) != 403 {
		t.Errorf("the operator reads a secret: %v", err)
	}
	if _, err := v.DeleteStore(ctx, activities.DeleteStoreInput{Namespace: "components", Name: "op"}); err != nil {
		t.Fatalf("delete with the operator policy: %v", err)
	}
}

func mustRead(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestStoreAfterTheAuthMethodVanished: odaflow caches that the sidecars'
// auth method exists; when it is gone (a dev or restored Vault that came
// back empty, an operator's disable) the next configure finds out, enables
// and configures it again, and succeeds in the same attempt.
func TestStoreAfterTheAuthMethodVanished(t *testing.T) {
	ctx := context.Background()
	in := activities.StoreInput{Namespace: "components", Name: "vanished", Spec: spec("vanished-*")}
	if _, err := env.vault.ConfigureStore(ctx, in); err != nil {
		t.Fatal(err)
	}
	if err := env.root.Sys().DisableAuthWithContext(ctx, env.cfg.AuthPath); err != nil {
		t.Fatal(err)
	}
	if _, err := env.vault.ConfigureStore(ctx, in); err != nil {
		t.Fatalf("configure after the auth method was disabled: %v", err)
	}
	names := secrets.NamesFor(in.Namespace, in.Name)
	r, err := env.root.Logical().ReadWithContext(ctx, "auth/"+env.cfg.AuthPath+"/role/"+names.Role)
	if err != nil || r == nil {
		t.Fatalf("login role after repair: %v, %v", r, err)
	}
	cfg, err := env.root.Logical().ReadWithContext(ctx, "auth/"+env.cfg.AuthPath+"/config")
	if err != nil || cfg == nil || cfg.Data["kubernetes_host"] != env.cfg.KubernetesHost {
		t.Fatalf("auth config after repair: %v, %v", cfg, err)
	}
	if _, err := env.vault.DeleteStore(ctx, activities.DeleteStoreInput{Namespace: in.Namespace, Name: in.Name}); err != nil {
		t.Fatal(err)
	}
}
