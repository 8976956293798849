package keycloak

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Nerzal/gocloak/v13"
)

const testPassword = "double-admin-pw"

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) { c.mu.Lock(); defer c.mu.Unlock(); c.t = c.t.Add(d) }

func start(t *testing.T) (*Server, *gocloak.GoCloak, *clock) {
	t.Helper()
	clk := &clock{t: time.Unix(1_700_000_000, 0)}
	s, err := New(Options{AdminPassword: testPassword, Now: clk.now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	if err := s.SeedCanvas(CanvasRealm); err != nil {
		t.Fatal(err)
	}
	return s, gocloak.NewClient(s.URL()), clk
}

func apiCode(err error) int {
	var e *gocloak.APIError
	if errors.As(err, &e) {
		return e.Code
	}
	return -1
}

func TestTokenGrantsAndExpiry(t *testing.T) {
	s, kc, clk := start(t)
	ctx := context.Background()
	if _, err := kc.LoginAdmin(ctx, AdminUser, "wrong", AdminRealm); apiCode(err) != 400 || !strings.Contains(err.Error(), "invalid_grant: Invalid user credentials") {
		t.Fatalf("wrong password: %v", err)
	}
	if _, err := kc.LoginAdmin(ctx, AdminUser, testPassword, "nope"); err == nil || err.Error() != "404 Not Found: Realm does not exist" {
		t.Fatalf("unknown realm: %v", err)
	}
	tok, err := kc.LoginAdmin(ctx, AdminUser, testPassword, AdminRealm)
	if err != nil {
		t.Fatal(err)
	}
	if tok.ExpiresIn != 60 || tok.TokenType != "Bearer" {
		t.Errorf("token = %+v", tok)
	}
	if _, err := kc.GetClients(ctx, tok.AccessToken, CanvasRealm, gocloak.GetClientsParams{}); err != nil {
		t.Fatal(err)
	}
	if _, err := kc.GetClients(ctx, "", CanvasRealm, gocloak.GetClientsParams{}); apiCode(err) != 401 {
		t.Fatalf("no token: %v", err)
	}
	clk.add(61 * time.Second)
	if _, err := kc.GetClients(ctx, tok.AccessToken, CanvasRealm, gocloak.GetClientsParams{}); apiCode(err) != 401 {
		t.Fatalf("expired token: %v", err)
	}

	// client_credentials: the canvassystem service account may manage its
	// own realm but not another one.
	secret, _ := s.ClientSecret(CanvasRealm, CanvasSystemClient)
	if _, err := kc.LoginClient(ctx, CanvasSystemClient, "bad", CanvasRealm); apiCode(err) != 401 {
		t.Fatalf("bad client secret: %v", err)
	}
	sa, err := kc.LoginClient(ctx, CanvasSystemClient, secret, CanvasRealm)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kc.GetClients(ctx, sa.AccessToken, CanvasRealm, gocloak.GetClientsParams{}); err != nil {
		t.Fatal(err)
	}
	if _, err := kc.GetClients(ctx, sa.AccessToken, AdminRealm, gocloak.GetClientsParams{}); apiCode(err) != 403 {
		t.Fatalf("other realm: %v", err)
	}
}

func TestClientsRolesSecretsAndMappings(t *testing.T) {
	s, kc, _ := start(t)
	ctx := context.Background()
	tok, err := kc.LoginAdmin(ctx, AdminUser, testPassword, AdminRealm)
	if err != nil {
		t.Fatal(err)
	}
	at := tok.AccessToken
	id, err := kc.CreateClient(ctx, at, CanvasRealm, gocloak.Client{ClientID: gocloak.StringP("ctk-pc"), ServiceAccountsEnabled: gocloak.BoolP(true)})
	if err != nil || len(id) != 36 {
		t.Fatalf("create: %q %v", id, err)
	}
	if _, err := kc.CreateClient(ctx, at, CanvasRealm, gocloak.Client{ClientID: gocloak.StringP("ctk-pc")}); apiCode(err) != 409 || !strings.Contains(err.Error(), "Client ctk-pc already exists") {
		t.Fatalf("duplicate: %v", err)
	}
	for _, n := range []string{"b-client", "a-client", "c-client"} {
		if _, err := kc.CreateClient(ctx, at, CanvasRealm, gocloak.Client{ClientID: gocloak.StringP(n)}); err != nil {
			t.Fatal(err)
		}
	}
	var names []string
	for first := 0; ; first += 2 {
		max := 2
		got, err := kc.GetClients(ctx, at, CanvasRealm, gocloak.GetClientsParams{First: &first, Max: &max})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range got {
			names = append(names, *c.ClientID)
		}
		if len(got) < max {
			break
		}
	}
	if strings.Join(names, ",") != "a-client,b-client,c-client,canvassystem,ctk-pc" {
		t.Errorf("paged clients = %v", names)
	}
	exact, err := kc.GetClients(ctx, at, CanvasRealm, gocloak.GetClientsParams{ClientID: gocloak.StringP("ctk")})
	if err != nil || len(exact) != 0 {
		t.Errorf("clientId is an exact match: %d %v", len(exact), err)
	}

	roleName, err := kc.CreateClientRole(ctx, at, CanvasRealm, id, gocloak.Role{Name: gocloak.StringP("cat 1 owner"), Description: gocloak.StringP("d"),
		Attributes: &map[string][]string{"k": {"v"}}})
	if err != nil || roleName != "cat%201%20owner" {
		t.Fatalf("role create: %q %v", roleName, err)
	}
	if _, err := kc.CreateClientRole(ctx, at, CanvasRealm, id, gocloak.Role{Name: gocloak.StringP("cat 1 owner")}); apiCode(err) != 409 {
		t.Fatalf("duplicate role: %v", err)
	}
	if _, err := kc.GetClientRole(ctx, at, CanvasRealm, id, "missing"); apiCode(err) != 404 || err.Error() != "404 Not Found: Could not find role" {
		t.Fatalf("missing role: %v", err)
	}
	role, err := kc.GetClientRole(ctx, at, CanvasRealm, id, "cat 1 owner")
	if err != nil || role.Attributes == nil || (*role.Attributes)["k"][0] != "v" {
		t.Fatalf("get role: %+v %v", role, err)
	}
	brief, err := kc.GetClientRoles(ctx, at, CanvasRealm, id, gocloak.GetRoleParams{})
	if err != nil || len(brief) != 1 || brief[0].Attributes != nil {
		t.Fatalf("brief list has attributes: %+v %v", brief, err)
	}
	full, err := kc.GetClientRoles(ctx, at, CanvasRealm, id, gocloak.GetRoleParams{BriefRepresentation: gocloak.BoolP(false)})
	if err != nil || len(full) != 1 || full[0].Attributes == nil {
		t.Fatalf("full list lacks attributes: %+v %v", full, err)
	}

	sa, err := kc.GetClientServiceAccount(ctx, at, CanvasRealm, id)
	if err != nil || *sa.Username != "service-account-ctk-pc" {
		t.Fatalf("service account: %+v %v", sa, err)
	}
	bogus := gocloak.Role{ID: gocloak.StringP("not-the-id"), Name: role.Name}
	if err := kc.AddClientRolesToUser(ctx, at, CanvasRealm, id, *sa.ID, []gocloak.Role{bogus}); apiCode(err) != 404 {
		t.Fatalf("mapping with a wrong id: %v", err)
	}
	if err := kc.AddClientRolesToUser(ctx, at, CanvasRealm, id, *sa.ID, []gocloak.Role{*role}); err != nil {
		t.Fatal(err)
	}
	mapped, err := kc.GetClientRolesByUserID(ctx, at, CanvasRealm, id, *sa.ID)
	if err != nil || len(mapped) != 1 || *mapped[0].Name != "cat 1 owner" {
		t.Fatalf("mappings: %+v %v", mapped, err)
	}
	if err := kc.DeleteClientRole(ctx, at, CanvasRealm, id, "cat 1 owner"); err != nil {
		t.Fatal(err)
	}
	if mapped, _ = kc.GetClientRolesByUserID(ctx, at, CanvasRealm, id, *sa.ID); len(mapped) != 0 {
		t.Errorf("deleting a role keeps its mappings: %+v", mapped)
	}

	before, _ := kc.GetClientSecret(ctx, at, CanvasRealm, id)
	after, err := kc.RegenerateClientSecret(ctx, at, CanvasRealm, id)
	if err != nil || *after.Value == *before.Value {
		t.Fatalf("regenerate: %v", err)
	}
	if _, err := kc.LoginClient(ctx, "ctk-pc", *before.Value, CanvasRealm); apiCode(err) != 401 {
		t.Errorf("old secret still works: %v", err)
	}
	if _, err := kc.LoginClient(ctx, "ctk-pc", *after.Value, CanvasRealm); err != nil {
		t.Errorf("new secret: %v", err)
	}

	if err := kc.DeleteClient(ctx, at, CanvasRealm, id); err != nil {
		t.Fatal(err)
	}
	if err := kc.DeleteClient(ctx, at, CanvasRealm, id); apiCode(err) != 404 || err.Error() != "404 Not Found: Could not find client" {
		t.Fatalf("second delete: %v", err)
	}
	if _, err := kc.GetClientServiceAccount(ctx, at, CanvasRealm, id); apiCode(err) != 404 {
		t.Errorf("service account of a deleted client: %v", err)
	}

	var created, conflicts int
	for _, r := range s.Requests() {
		if r.Method == http.MethodPost && r.Path == "/admin/realms/odari/clients" {
			switch r.Status {
			case 201:
				created++
			case 409:
				conflicts++
			}
		}
	}
	if created != 4 || conflicts != 1 {
		t.Errorf("request log: %d created, %d conflicts", created, conflicts)
	}
}

func TestUnavailableAndDown(t *testing.T) {
	s, kc, _ := start(t)
	ctx := context.Background()
	s.SetUnavailable(http.StatusServiceUnavailable)
	if _, err := kc.LoginAdmin(ctx, AdminUser, testPassword, AdminRealm); apiCode(err) != 503 {
		t.Fatalf("503: %v", err)
	}
	s.SetUnavailable(0)
	tok, err := kc.LoginAdmin(ctx, AdminUser, testPassword, AdminRealm)
	if err != nil {
		t.Fatal(err)
	}
	s.Down()
	if _, err := kc.GetClients(ctx, tok.AccessToken, CanvasRealm, gocloak.GetClientsParams{}); err == nil || apiCode(err) != 0 {
		t.Fatalf("down: %v", err)
	}
	if err := s.Up(); err != nil {
		t.Fatal(err)
	}
	if _, err := kc.GetClients(ctx, tok.AccessToken, CanvasRealm, gocloak.GetClientsParams{}); err != nil {
		t.Fatalf("state kept across down/up: %v", err)
	}
}

func TestImportRealm(t *testing.T) {
	s, kc, _ := start(t)
	ctx := context.Background()
	export := `{"realm":"gocloak","clients":[
	  {"id":"60be66a5-e007-464c-9b74-0e3c2e69e478","clientId":"gocloak","secret":"gocloak-secret","serviceAccountsEnabled":true},
	  {"id":"db4d47d3-31cd-49c7-a1c7-351e13da7907","clientId":"realm-management","secret":"**********","bearerOnly":true}],
	 "users":[{"id":"6ead694f-bf59-495d-a475-a3b0b9be50ed","username":"service-account-gocloak","enabled":true,"serviceAccountClientId":"gocloak",
	  "clientRoles":{"realm-management":["manage-clients"]}}]}`
	if err := s.ImportRealm([]byte(export)); err != nil {
		t.Fatal(err)
	}
	tok, err := kc.LoginAdmin(ctx, AdminUser, testPassword, AdminRealm)
	if err != nil {
		t.Fatal(err)
	}
	sa, err := kc.GetClientServiceAccount(ctx, tok.AccessToken, "gocloak", "60be66a5-e007-464c-9b74-0e3c2e69e478")
	if err != nil || *sa.ID != "6ead694f-bf59-495d-a475-a3b0b9be50ed" {
		t.Fatalf("service account from the export: %+v %v", sa, err)
	}
	roles, err := kc.GetClientRolesByUserID(ctx, tok.AccessToken, "gocloak", "db4d47d3-31cd-49c7-a1c7-351e13da7907", *sa.ID)
	if err != nil || len(roles) != 1 || *roles[0].Name != "manage-clients" {
		t.Fatalf("mapping from the export: %+v %v", roles, err)
	}
	if _, err := kc.LoginClient(ctx, "gocloak", "gocloak-secret", "gocloak"); err != nil {
		t.Fatalf("client secret from the export: %v", err)
	}
}
