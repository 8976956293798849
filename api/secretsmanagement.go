package api

// SecretsManagementSpec is the spec of a SecretsManagement: which pods get
// the Vault sidecar, and on which port (package secrets).
type SecretsManagementSpec struct {
	// Type is sideCar, the only type the Canvas defines.
	Type        string       `json:"type"`
	SideCar     *SideCar     `json:"sideCar"`
	PodSelector *PodSelector `json:"podSelector"`
}

// SideCar is spec.sideCar.
type SideCar struct {
	Port *int64 `json:"port"`
}

// PodSelector selects the pods by namespace, name and service account,
// each a glob.
type PodSelector struct {
	Namespace      string `json:"namespace"`
	Name           string `json:"name"`
	ServiceAccount string `json:"serviceaccount"`
}

// SecretsManagementStatus is the status of a SecretsManagement.
type SecretsManagementStatus struct {
	Implementation *ImplementationStatus `json:"implementation"`
}
