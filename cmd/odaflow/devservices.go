package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/odaflow/odaflow/activities"
	"github.com/odaflow/odaflow/internal/config"
	"github.com/odaflow/odaflow/internal/doubles/keycloak"
	"github.com/odaflow/odaflow/internal/localstack"
	"github.com/odaflow/odaflow/listener/hubtest"
)

// Where `odaflow dev` keeps the Keycloak admin credentials, as a Canvas
// install does: a Secret the worker reads when it needs a token.
const (
	devSystemNamespace     = "odaflow-system"
	devKeycloakAdminSecret = "keycloak-admin"
)

// devIdentity is the identity platform of the dev stack.
type devIdentity struct {
	Config config.Keycloak
	// Banner says what it is, for the console.
	Banner string
	stop   func()
}

func (d *devIdentity) Stop() {
	if d.stop != nil {
		d.stop()
	}
}

// devKeycloak is the real Keycloak of the dev stack, started when `make
// tools` (or `hack/tools.sh keycloak`) has fetched it; kc is nil and why
// says why otherwise.
type devKeycloak struct {
	kc  *localstack.Keycloak
	why string
}

// startDevKeycloak starts the real Keycloak (in memory, with the Canvas
// realm set up) when it is in the tools cache.
func startDevKeycloak(ctx context.Context, dataDir, realm string) (*devKeycloak, error) {
	home, err := localstack.KeycloakHome("")
	if err != nil {
		return &devKeycloak{why: "no real Keycloak fetched (`make tools` or `hack/tools.sh keycloak` fetches one; it then starts in 1-3 min)"}, nil
	}
	kc, err := localstack.StartKeycloak(ctx, localstack.KeycloakOptions{Home: home, DataDir: dataDir, Realm: realm})
	if err != nil {
		return nil, fmt.Errorf("start Keycloak (from %s): %w", home, err)
	}
	return &devKeycloak{kc: kc}, nil
}

// startIdentity uses the real Keycloak (real) when it runs, else starts
// odaflow's Keycloak stand-in; with url set, it uses that Keycloak with the
// admin credentials in KEYCLOAK_ADMIN and KEYCLOAK_ADMIN_PASSWORD (the
// variables Keycloak's own image reads). Either way the credentials go
// into a Secret in the cluster for the worker.
func startIdentity(ctx context.Context, cfg *rest.Config, url, realm string, real *devKeycloak) (*devIdentity, error) {
	d := &devIdentity{Config: config.Keycloak{
		URL: url, Realm: realm, AdminRealm: keycloak.AdminRealm,
		AdminSecret: devSystemNamespace + "/" + devKeycloakAdminSecret, Timeout: 20 * time.Second,
	}}
	user, password := os.Getenv("KEYCLOAK_ADMIN"), os.Getenv("KEYCLOAK_ADMIN_PASSWORD")
	if url != "" {
		if user == "" {
			user = keycloak.AdminUser
		}
		if password == "" {
			return nil, errors.New("--keycloak-url needs the admin password in KEYCLOAK_ADMIN_PASSWORD (and the user in KEYCLOAK_ADMIN, default admin)")
		}
		d.Banner = fmt.Sprintf("%s, realm %s (--keycloak-url)", url, realm)
	} else if real != nil && real.kc != nil {
		k := real.kc
		user, password = k.AdminUser, k.AdminPassword()
		d.Config.URL = k.URL
		d.Banner = fmt.Sprintf("real Keycloak %s at %s, realm %s (started in %s; in memory: it starts empty each time, and the drift check recreates the clients within its interval)",
			k.Version, k.URL, realm, k.Started.Round(time.Second))
	} else {
		user, password = keycloak.AdminUser, "dev-"+randomHex(16)
		kc, err := keycloak.New(keycloak.Options{AdminPassword: password})
		if err != nil {
			return nil, fmt.Errorf("start the Keycloak stand-in: %w", err)
		}
		d.stop = kc.Close
		if err := kc.SeedCanvas(realm); err != nil {
			kc.Close()
			return nil, fmt.Errorf("seed the Keycloak stand-in: %w", err)
		}
		d.Config.URL = kc.URL()
		why := ""
		if real != nil {
			why = "\n                    " + real.why
		}
		d.Banner = fmt.Sprintf("odaflow's stand-in at %s, realm %s: an in-memory imitation of the Keycloak %s admin API\n"+
			"                    odaflow calls (tests/contract checks it against gocloak); --keycloak-url URL uses a real Keycloak%s", kc.URL(), realm, keycloak.KeycloakVersion, why)
	}
	data := map[string][]byte{"username": []byte(user), "password": []byte(password)}
	if real != nil && real.kc != nil && url == "" {
		// As the Canvas stores it, which the worker reads too.
		data = real.kc.AdminSecretData()
	}
	if err := putSecret(ctx, cfg, devSystemNamespace, devKeycloakAdminSecret, data); err != nil {
		d.Stop()
		return nil, fmt.Errorf("store the Keycloak admin credentials: %w", err)
	}
	return d, nil
}

// putSecret creates or replaces a Secret (and its namespace).
func putSecret(ctx context.Context, cfg *rest.Config, namespace, name string, data map[string][]byte) error {
	core, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	_, err = core.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}, Data: data}
	_, err = core.CoreV1().Secrets(namespace).Create(ctx, secret, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		_, err = core.CoreV1().Secrets(namespace).Update(ctx, secret, metav1.UpdateOptions{})
	}
	return err
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return hex.EncodeToString(b)
}

// devVault is the Vault dev server of the dev stack, when its binary is
// built; Config is empty without it (SecretsManagements then fail with the
// reason).
type devVault struct {
	Config config.Vault
	Banner string
	vault  *localstack.Vault
}

func (d *devVault) Stop() error {
	if d.vault == nil {
		return nil
	}
	return d.vault.Stop()
}

// startVault starts the Vault dev server (in memory) when `make tools` or
// `hack/tools.sh vault` has built it; configure then gives odaflow its
// credentials.
func startVault(ctx context.Context, dataDir string, port int) (*devVault, error) {
	bin, err := localstack.VaultBinary()
	if err != nil {
		return &devVault{Banner: "not built, so SecretsManagements fail; `make tools` or `hack/tools.sh vault` builds it (10-20 min)"}, nil
	}
	v, err := localstack.StartVault(ctx, localstack.VaultOptions{Binary: bin, DataDir: dataDir, Port: port})
	if err != nil {
		return nil, fmt.Errorf("start the Vault dev server: %w", err)
	}
	return &devVault{vault: v, Banner: v.Address + " (dev server, in memory; root token in " + v.TokenFile + ")"}, nil
}

// configure gives odaflow its credentials in files, as in a cluster: the
// root token, and the apiserver's CA and a token for Vault's kubernetes
// auth. Without a Vault it does nothing.
func (d *devVault) configure(cfg *rest.Config) error {
	v := d.vault
	if v == nil {
		return nil
	}
	d.Config = config.Vault{Address: v.Address, TokenFile: v.TokenFile, AuthPath: activities.DefaultVaultAuthPath, KubernetesHost: cfg.Host}
	if len(cfg.CAData) > 0 {
		p := filepath.Join(v.DataDir, "kube-ca.crt")
		if err := os.WriteFile(p, cfg.CAData, 0o600); err != nil {
			return fmt.Errorf("the Vault's kubernetes CA: %w", err)
		}
		d.Config.KubernetesCAFile = p
	}
	if cfg.BearerToken != "" {
		// Vault's TokenReview calls authenticate with the dev cluster's admin token.
		p := filepath.Join(v.DataDir, "token-reviewer.jwt")
		if err := os.WriteFile(p, []byte(cfg.BearerToken), 0o600); err != nil {
			return fmt.Errorf("the Vault's token reviewer token: %w", err)
		}
		d.Config.TokenReviewerJWTFile = p
	}
	return nil
}

// devHubs is the identity listener's setup in the dev stack: the worker
// serves the listener on its own HTTP address with a key kept in the data
// folder, and the components' TMF630 hubs it subscribes to are answered by
// a stand-in in this process. The dev cluster runs no component pods, so
// HTTP is the client the worker calls a hub with: it takes a hub's
// cluster-local Service name to the stand-in, as a cluster's DNS and
// Service routing would take it to the component's pod, and refuses any
// other host.
type devHubs struct {
	ListenerBaseURL, KeyFile string
	HTTP                     *http.Client
	Banner                   string
	hub                      *hubtest.Hub
}

func (d *devHubs) Stop() { d.hub.Close() }

// startHubs starts the hub stand-in; workerAddr is the worker's HTTP
// address, where its /listener/ route is served. The key is made on the
// first run and kept: the subscriptions recorded in the workflows were made
// with it.
func startHubs(dataDir, workerAddr string) (*devHubs, error) {
	keyFile := filepath.Join(dataDir, "listener", "key")
	if _, err := os.Stat(keyFile); errors.Is(err, os.ErrNotExist) {
		if err := os.MkdirAll(filepath.Dir(keyFile), 0o700); err != nil {
			return nil, fmt.Errorf("the identity listener's key: %w", err)
		}
		if err := os.WriteFile(keyFile, []byte(randomHex(32)+"\n"), 0o600); err != nil {
			return nil, fmt.Errorf("the identity listener's key: %w", err)
		}
	} else if err != nil {
		return nil, fmt.Errorf("the identity listener's key: %w", err)
	}
	hub := hubtest.New()
	hubAddr := strings.TrimPrefix(hub.URL(), "http://")
	d := &devHubs{ListenerBaseURL: "http://" + workerAddr, KeyFile: keyFile, hub: hub}
	d.HTTP = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, network, address string) (net.Conn, error) {
			host, _, err := net.SplitHostPort(address)
			if err != nil || !strings.HasSuffix(host, ".svc.cluster.local") {
				return nil, fmt.Errorf("%s is not a Service of the dev cluster", address)
			}
			var dialer net.Dialer
			return dialer.DialContext(ctx, network, hubAddr)
		},
	}}
	d.Banner = fmt.Sprintf("listener %s/listener/ (key in %s); the components' hubs are odaflow's\n"+
		"                    TMF630 stand-in at %s, reached by their Service names", d.ListenerBaseURL, keyFile, hub.URL())
	return d, nil
}
