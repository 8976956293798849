package integration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/Nerzal/gocloak/v13"
	"go.uber.org/fx"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/odaflow/odaflow/internal/config"
	"github.com/odaflow/odaflow/internal/localstack"
	"github.com/odaflow/odaflow/watcher"
	"github.com/odaflow/odaflow/worker"
)

// The identity tests run on a real Keycloak (hack/tools.sh keycloak),
// started once by TestMain, through a worker and watcher of their own:
// they own the namespaces it-r*, their own task queue, and read the admin
// account from a Secret with the Canvas's keys. The rest of the package
// keeps the Keycloak stand-in, whose request log and outage switch the
// fault and load tests need.
const (
	realKeycloakNamespaces = "it-r*"
	realKeycloakQueue      = "odaflow-it-keycloak"
	realKeycloakSecret     = "keycloak-admin-canvas"
	// realDriftInterval is the real stack's drift check period: short, so
	// that a repair is seen within a test.
	realDriftInterval = 10 * time.Second
)

// realKC is the real Keycloak and its stack; kc is nil when the run was
// told to do without it (ODAFLOW_SKIP_KEYCLOAK, never under CI).
var realKC struct {
	kc      *localstack.Keycloak
	skipped string
	worker  *fx.App
	watcher *fx.App
}

// startRealKeycloak starts Keycloak; run calls it in a goroutine at its
// start, so the JVM's minute or two overlaps the apiserver's and Temporal's
// start-up. A missing distribution fails the run, as a missing apiserver
// does, unless ODAFLOW_SKIP_KEYCLOAK is set outside CI.
func startRealKeycloak(ctx context.Context, logDir string) error {
	home, err := localstack.KeycloakHome("")
	if err != nil {
		if os.Getenv("ODAFLOW_SKIP_KEYCLOAK") != "" && os.Getenv("CI") == "" {
			realKC.skipped = fmt.Sprintf("no real Keycloak (skipped on request, ODAFLOW_SKIP_KEYCLOAK): %v", err)
			fmt.Fprintf(os.Stderr, "integration: %s\n", realKC.skipped)
			return nil
		}
		return fmt.Errorf("the real Keycloak is missing (run make tools or hack/tools.sh keycloak, or set ODAFLOW_SKIP_KEYCLOAK outside CI to run without the identity tests): %w", err)
	}
	kc, err := localstack.StartKeycloak(ctx, localstack.KeycloakOptions{Home: home, DataDir: filepath.Join(logDir, "keycloak")})
	if err != nil {
		return err
	}
	realKC.kc = kc
	fmt.Fprintf(os.Stderr, "integration: Keycloak %s ready in %s at %s\n", kc.Version, kc.Started.Round(time.Millisecond), kc.URL)
	return nil
}

// startRealKeycloakStack puts the admin account in a Secret as the Canvas
// stores it and starts the worker and watcher of it-r*.
func startRealKeycloakStack(ctx context.Context) error {
	if realKC.kc == nil {
		return nil
	}
	if _, err := stack.core.CoreV1().Secrets(systemNamespace).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: realKeycloakSecret},
		Data:       realKC.kc.AdminSecretData(),
	}, metav1.CreateOptions{}); err != nil {
		return err
	}
	common := stack.common
	common.TaskQueue = realKeycloakQueue
	common.Namespaces = []string{realKeycloakNamespaces}
	common.HTTPAddress = "127.0.0.1:0"
	wcfg := stackWorker(common, "istio")
	wcfg.Keycloak = config.Keycloak{URL: realKC.kc.URL, Realm: realKC.kc.Realm, AdminRealm: "master",
		AdminSecret: systemNamespace + "/" + realKeycloakSecret, Timeout: 10 * time.Second}
	realKC.worker = worker.New(wcfg)
	if err := realKC.worker.Start(ctx); err != nil {
		return fmt.Errorf("worker: %w", err)
	}
	realKC.watcher = watcher.NewApp(config.Watcher{Common: common, IdentityCheckInterval: realDriftInterval, WorkflowTaskTimeout: config.DefaultWorkflowTaskTimeout})
	if err := realKC.watcher.Start(ctx); err != nil {
		return fmt.Errorf("watcher: %w", err)
	}
	return nil
}

func stopRealKeycloak() {
	if realKC.watcher != nil {
		stopApp(realKC.watcher)
	}
	if realKC.worker != nil {
		stopApp(realKC.worker)
	}
	if realKC.kc != nil {
		_ = realKC.kc.Stop()
	}
}

// needRealKeycloak skips a test only when the run was told to do without
// Keycloak; the skip says so (a skip is never a pass).
func needRealKeycloak(t *testing.T) {
	t.Helper()
	if realKC.kc == nil {
		t.Skip("SKIPPED, not passed: " + realKC.skipped)
	}
}

// kcAdmin is an admin session on the real Keycloak, through its admin API.
type kcAdmin struct {
	t     *testing.T
	kc    *gocloak.GoCloak
	tok   string
	at    time.Time
	realm string
}

func realAdmin(t *testing.T) *kcAdmin {
	t.Helper()
	a := &kcAdmin{t: t, realm: realKC.kc.Realm}
	a.token() // so that a.kc is set before any call reads it
	return a
}

// token logs in again before the last token's 60 s (the master realm's
// access token lifespan) are over: tests wait longer than that.
func (a *kcAdmin) token() string {
	a.t.Helper()
	if a.kc == nil || time.Since(a.at) > 40*time.Second {
		kc, token, err := realKC.kc.Admin(context.Background())
		if err != nil {
			a.t.Fatal(err)
		}
		a.kc, a.tok, a.at = kc, token, time.Now()
	}
	return a.tok
}

// client is the client with clientId id, nil when there is none.
func (a *kcAdmin) client(id string) *gocloak.Client {
	a.t.Helper()
	cs, err := a.kc.GetClients(context.Background(), a.token(), a.realm, gocloak.GetClientsParams{ClientID: gocloak.StringP(id)})
	if err != nil {
		a.t.Fatalf("client %s: %v", id, err)
	}
	for _, c := range cs {
		if gocloak.PString(c.ClientID) == id {
			return c
		}
	}
	return nil
}

// ClientSecret is the client's current secret, false when there is no
// such client.
func (a *kcAdmin) ClientSecret(id string) (string, bool) {
	a.t.Helper()
	c := a.client(id)
	if c == nil {
		return "", false
	}
	cred, err := a.kc.GetClientSecret(context.Background(), a.token(), a.realm, *c.ID)
	var apiErr *gocloak.APIError
	if errors.As(err, &apiErr) && apiErr.Code == http.StatusNotFound {
		return "", false // deleted since it was listed
	}
	if err != nil {
		a.t.Fatalf("secret of %s: %v", id, err)
	}
	return gocloak.PString(cred.Value), true
}

// ClientRoles are the names of the client's roles, sorted.
func (a *kcAdmin) ClientRoles(id string) ([]string, bool) {
	a.t.Helper()
	c := a.client(id)
	if c == nil {
		return nil, false
	}
	roles, err := a.kc.GetClientRoles(context.Background(), a.token(), a.realm, *c.ID, gocloak.GetRoleParams{})
	if err != nil {
		a.t.Fatalf("roles of %s: %v", id, err)
	}
	var out []string
	for _, r := range roles {
		out = append(out, gocloak.PString(r.Name))
	}
	slices.Sort(out)
	return out, true
}

// ClientSnapshot is everything Keycloak holds of a client, as JSON: its
// representation (attributes included), its secret, its roles with their
// attributes, and who holds those roles. Two equal snapshots prove it was
// left as it was.
func (a *kcAdmin) ClientSnapshot(id string) (string, bool) {
	a.t.Helper()
	ctx := context.Background()
	c := a.client(id)
	if c == nil {
		return "", false
	}
	secret, _ := a.ClientSecret(id)
	roles, err := a.kc.GetClientRoles(ctx, a.token(), a.realm, *c.ID, gocloak.GetRoleParams{BriefRepresentation: gocloak.BoolP(false)})
	if err != nil {
		a.t.Fatalf("roles of %s: %v", id, err)
	}
	holders := map[string][]string{}
	for _, r := range roles {
		users, err := a.kc.GetUsersByClientRoleName(ctx, a.token(), a.realm, *c.ID, gocloak.PString(r.Name), gocloak.GetUsersByRoleParams{})
		if err != nil {
			a.t.Fatalf("holders of %s/%s: %v", id, gocloak.PString(r.Name), err)
		}
		for _, u := range users {
			holders[gocloak.PString(r.Name)] = append(holders[gocloak.PString(r.Name)], gocloak.PString(u.Username))
		}
	}
	b, err := json.Marshal(map[string]any{"rep": c, "secret": secret, "roles": roles, "holders": holders})
	if err != nil {
		a.t.Fatal(err)
	}
	return string(b), true
}

// canvasGrants are the names of id's client roles the canvassystem
// service account holds.
func (a *kcAdmin) canvasGrants(id string) []string {
	a.t.Helper()
	ctx := context.Background()
	c, canvas := a.client(id), a.client(localstack.CanvasSystemClient)
	if c == nil || canvas == nil {
		return nil
	}
	sa, err := a.kc.GetClientServiceAccount(ctx, a.token(), a.realm, *canvas.ID)
	if err != nil {
		a.t.Fatal(err)
	}
	roles, err := a.kc.GetClientRolesByUserID(ctx, a.token(), a.realm, *c.ID, *sa.ID)
	if err != nil {
		a.t.Fatal(err)
	}
	var out []string
	for _, r := range roles {
		out = append(out, gocloak.PString(r.Name))
	}
	slices.Sort(out)
	return out
}

// waitRealIdentity waits for a component's client in the real Keycloak and
// its credentials Secret, and checks the Secret's client id.
func waitRealIdentity(t *testing.T, kc *kcAdmin, ns, name string) {
	t.Helper()
	eventually(t, 60*time.Second, fmt.Sprintf("identity of %s/%s", ns, name), func() (bool, string) {
		_, inKeycloak := kc.ClientSecret(name)
		sec, err := stack.core.CoreV1().Secrets(ns).Get(context.Background(), name+"-secret", metav1.GetOptions{})
		if !inKeycloak || err != nil {
			return false, fmt.Sprintf("Keycloak client present %v, Secret err %v", inKeycloak, err)
		}
		if got := string(sec.Data["client_id"]); got != name {
			t.Fatalf("Secret %s-secret client_id = %q, want %q", name, got, name)
		}
		return true, ""
	})
}
