package api

// IdentityConfigSpec is the spec of an IdentityConfig: the Keycloak client
// of a Component and its roles (package identity).
type IdentityConfigSpec struct {
	// CanvasSystemRole is the role the Canvas itself is granted.
	CanvasSystemRole string          `json:"canvasSystemRole"`
	ComponentRole    []ComponentRole `json:"componentRole"`
	// PartyRoleAPI and PermissionSpecificationSetAPI are the Component's
	// own role APIs, whose roles odaflow adds to the client.
	PartyRoleAPI                  *APIRef `json:"partyRoleAPI"`
	PermissionSpecificationSetAPI *APIRef `json:"permissionSpecificationSetAPI"`
}

// ComponentRole is one static role of a Component.
type ComponentRole struct {
	Name        string `json:"name"`
	Description string `json:"description"`
}

// APIRef points at an API of the Component by its Service, path and port.
type APIRef struct {
	Implementation string `json:"implementation"`
	Path           string `json:"path"`
	Port           *int64 `json:"port"`
}
