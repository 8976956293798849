package keycloak

import (
	"encoding/json"
	"fmt"
)

// Canvas prerequisites (oda-behaviour §2.3): the realm odaflow works in and
// the Canvas's own client.
const (
	CanvasRealm        = "odari"
	CanvasSystemClient = "canvassystem"
)

// SeedCanvas creates the Canvas realm with the `canvassystem` client
// (service accounts on, standard flow off), as the Canvas's
// keycloakConfigCli values do.
func (s *Server) SeedCanvas(realmName string) error {
	s.AddRealm(realmName)
	_, err := s.AddClient(realmName, map[string]any{
		"clientId": CanvasSystemClient, "serviceAccountsEnabled": true, "standardFlowEnabled": false,
	})
	return err
}

// ImportRealm loads a realm export (the JSON `kc.sh export` writes and
// `--import-realm` reads): its clients with ids and secrets, its users and
// their client role mappings. Roles named in mappings but not defined are
// created, as Keycloak's built-in clients (realm-management) define them.
func (s *Server) ImportRealm(export []byte) error {
	var ex struct {
		Realm   string           `json:"realm"`
		Clients []map[string]any `json:"clients"`
		Roles   struct {
			Client map[string][]struct {
				Name        string              `json:"name"`
				Description string              `json:"description"`
				Attributes  map[string][]string `json:"attributes"`
			} `json:"client"`
		} `json:"roles"`
		Users []map[string]any `json:"users"`
	}
	if err := json.Unmarshal(export, &ex); err != nil {
		return fmt.Errorf("decode realm export: %w", err)
	}
	if ex.Realm == "" {
		return fmt.Errorf("realm export has no realm name")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.realms[ex.Realm] != nil {
		return fmt.Errorf("realm %s exists", ex.Realm)
	}
	rl := s.addRealm(ex.Realm)
	// Users first, so that a service-account user of the export is found
	// when its client is added.
	type mapping struct {
		user   *user
		client string
		roles  []string
	}
	var mappings []mapping
	for _, rep := range ex.Users {
		rep = cloneMap(rep)
		roles, _ := rep["clientRoles"].(map[string]any)
		delete(rep, "clientRoles")
		u, err := rl.addUser(rep, "", false)
		if err != nil {
			return fmt.Errorf("import user %v: %w", rep["username"], err)
		}
		u.saClientID, _ = rep["serviceAccountClientId"].(string)
		for clientID, names := range roles {
			list, _ := names.([]any)
			m := mapping{user: u, client: clientID}
			for _, n := range list {
				if s, ok := n.(string); ok {
					m.roles = append(m.roles, s)
				}
			}
			mappings = append(mappings, m)
		}
	}
	for _, rep := range ex.Clients {
		rep = cloneMap(rep)
		// Exports mask secrets of built-in clients with asterisks.
		if rep["secret"] == "**********" {
			delete(rep, "secret")
		}
		if _, err := rl.addClient(rep); err != nil {
			return fmt.Errorf("import client %v: %w", rep["clientId"], err)
		}
	}
	for clientID, roles := range ex.Roles.Client {
		c := rl.clientByClientID(clientID)
		if c == nil {
			continue
		}
		for _, ro := range roles {
			if c.roles[ro.Name] == nil {
				if _, err := c.addRole(ro.Name, ro.Description, ro.Attributes); err != nil {
					return fmt.Errorf("import role %s: %w", ro.Name, err)
				}
			}
		}
	}
	for _, m := range mappings {
		c := rl.clientByClientID(m.client)
		if c == nil {
			continue
		}
		for _, name := range m.roles {
			ro := c.roles[name]
			if ro == nil {
				ro, _ = c.addRole(name, "", nil)
			}
			if m.user.clientRoles[c.id] == nil {
				m.user.clientRoles[c.id] = map[string]bool{}
			}
			m.user.clientRoles[c.id][ro.id] = true
		}
	}
	return nil
}
