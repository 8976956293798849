package activities

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	kcdouble "github.com/odaflow/odaflow/internal/doubles/keycloak"
)

func TestAdminCredentialsReadsOdaflowsAndTheCanvassKeys(t *testing.T) {
	for _, tc := range []struct {
		name       string
		data       map[string][]byte
		user, pass string
		ok         bool
	}{
		{"odaflow's keys", map[string][]byte{"username": []byte("u"), "password": []byte("p")}, "u", "p", true},
		{"the Canvas's keys", map[string][]byte{"KEYCLOAK_USER": []byte("admin"), "KEYCLOAK_PASSWORD": []byte("adpass")}, "admin", "adpass", true},
		{"odaflow's first when both", map[string][]byte{"username": []byte("u"), "password": []byte("p"), "KEYCLOAK_USER": []byte("c"), "KEYCLOAK_PASSWORD": []byte("d")}, "u", "p", true},
		{"an incomplete pair falls to the other", map[string][]byte{"username": []byte("u"), "KEYCLOAK_USER": []byte("c"), "KEYCLOAK_PASSWORD": []byte("d")}, "c", "d", true},
		{"mixed halves are no pair", map[string][]byte{"username": []byte("u"), "KEYCLOAK_PASSWORD": []byte("d")}, "", "", false},
		{"empty", nil, "", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u, p, ok := AdminCredentials(tc.data)
			if u != tc.user || p != tc.pass || ok != tc.ok {
				t.Errorf("AdminCredentials = %q, %q, %v; want %q, %q, %v", u, p, ok, tc.user, tc.pass, tc.ok)
			}
		})
	}
}

func TestAlternateKeycloakBase(t *testing.T) {
	for in, want := range map[string]string{
		"http://kc:8083":        "http://kc:8083/auth",
		"http://kc:8083/":       "http://kc:8083/auth",
		"http://kc:8083/auth":   "http://kc:8083",
		"http://kc:8083/auth/":  "http://kc:8083",
		"https://h/iam":         "https://h/iam/auth",
		"https://h/iam/auth":    "https://h/iam",
		"https://h/authority":   "https://h/authority/auth",
		"https://h/x/auth/auth": "https://h/x/auth",
	} {
		if got := AlternateKeycloakBase(in); got != want {
			t.Errorf("AlternateKeycloakBase(%q) = %q, want %q", in, got, want)
		}
	}
}

// A Keycloak served under /auth (the Canvas's chart) reached with a URL
// without it, and the other way round: the identity activities find the
// right base and work, with the Canvas's Secret keys.
func TestIdentityFindsTheAuthBasePath(t *testing.T) {
	kc, err := kcdouble.New(kcdouble.Options{AdminPassword: identityAdminPassword})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(kc.Close)
	if err := kc.SeedCanvas("odari"); err != nil {
		t.Fatal(err)
	}
	target, _ := url.Parse(kc.URL())
	mux := http.NewServeMux()
	mux.Handle("/auth/", http.StripPrefix("/auth", httputil.NewSingleHostReverseProxy(target)))
	underAuth := httptest.NewServer(mux)
	t.Cleanup(underAuth.Close)

	for _, tc := range []struct{ name, configured string }{
		{"configured without /auth, served under it", underAuth.URL},
		{"configured with /auth, served at /", kc.URL() + "/auth"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			core := fake.NewClientset(&corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Name: "keycloak-admin", Namespace: "canvas"},
				Data:       map[string][]byte{"KEYCLOAK_USER": []byte("admin"), "KEYCLOAK_PASSWORD": []byte(identityAdminPassword)},
			})
			log := slog.New(slog.NewTextHandler(io.Discard, nil))
			a := NewIdentity(&Kube{Core: core, Log: log}, KeycloakConfig{
				URL: tc.configured, Realm: "odari", AdminSecretNamespace: "canvas", AdminSecretName: "keycloak-admin",
			}, log)
			name := "base-" + map[bool]string{true: "a", false: "b"}[tc.configured == underAuth.URL]
			res, err := a.EnsureIdentity(context.Background(), EnsureIdentityInput{Ref: icRef(name), Desired: desired(t, name, map[string]any{"canvasSystemRole": "Admin"})})
			if err != nil || !res.ClientCreated {
				t.Fatalf("EnsureIdentity = %+v, %v", res, err)
			}
		})
	}

	// A realm that does not exist is still reported as such, not hidden by
	// the second try.
	core := fake.NewClientset(&corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "keycloak-admin", Namespace: "canvas"},
		Data:       map[string][]byte{"username": []byte("admin"), "password": []byte(identityAdminPassword)},
	})
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	a := NewIdentity(&Kube{Core: core, Log: log}, KeycloakConfig{
		URL: kc.URL(), Realm: "odari", AdminRealm: "no-such-realm", AdminSecretNamespace: "canvas", AdminSecretName: "keycloak-admin",
	}, log)
	if _, err := a.EnsureIdentity(context.Background(), EnsureIdentityInput{Ref: icRef("base-c"), Desired: desired(t, "base-c", map[string]any{"canvasSystemRole": "Admin"})}); err == nil || !isErrType(err, ErrTypeKeycloakMisconfigured) {
		t.Fatalf("unknown admin realm: %v, want %s", err, ErrTypeKeycloakMisconfigured)
	}
}
