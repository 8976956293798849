package dependency

import "sort"

// Service Inventory (TMF638) records that tell a component's implementation
// where its dependencies are (oda-behaviour §2.5, "Canvas Info").

// Characteristic names of a dependency record. The first four are the
// Canvas's, kept so that what reads Canvas Info finds the record as before.
// The owner characteristics are odaflow's: the component name comes from a
// label any tenant can set and is not unique across namespaces, so only the
// DependentAPI's namespace, name and uid say whose record it is.
const (
	CharComponentName  = "componentName"
	CharDependencyName = "dependencyName"
	CharURL            = "url"
	CharSpecification  = "OASSpecification"

	CharOwnerNamespace = "dependentAPINamespace"
	CharOwnerName      = "dependentAPIName"
	CharOwnerUID       = "dependentAPIUID"
)

// Owner is the DependentAPI a record belongs to.
type Owner struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	UID       string `json:"uid"`
}

// Complete reports whether o names one DependentAPI lifecycle.
func (o Owner) Complete() bool { return o.Namespace != "" && o.Name != "" && o.UID != "" }

// Ownership is what a record is to one DependentAPI.
type Ownership int

const (
	// RecordMine: the record names this DependentAPI (namespace, name and
	// uid): its lifecycle may update and delete it.
	RecordMine Ownership = iota
	// RecordForeign: the record names another DependentAPI, or an earlier
	// one of the same name (another uid). Never updated or deleted.
	RecordForeign
	// RecordUnowned: the record names no owner (the Python Canvas wrote it,
	// or someone by hand). Never updated or deleted: its componentName and
	// dependencyName prove nothing, since any tenant can claim a
	// component's name. An administrator adopts one by adding the three
	// owner characteristics (docs/tenancy.md).
	RecordUnowned
)

// OwnershipOf decides what a Service Inventory record is to me.
func OwnershipOf(service map[string]any, me Owner) Ownership {
	ns, name, uid := Characteristic(service, CharOwnerNamespace), Characteristic(service, CharOwnerName), Characteristic(service, CharOwnerUID)
	switch {
	case ns == "" && name == "" && uid == "":
		return RecordUnowned
	case me.Complete() && ns == me.Namespace && name == me.Name && uid == me.UID:
		return RecordMine
	default:
		return RecordForeign
	}
}

// Registration is one resolved dependency to record.
type Registration struct {
	ComponentName  string `json:"componentName"`
	DependencyName string `json:"dependencyName"`
	URL            string `json:"url"`
	SpecURL        string `json:"specURL"`
	// Active is false while the provider is gone or not ready: the record
	// stays (state inactive) so the component sees the change rather than
	// a vanished entry.
	Active bool `json:"active"`
}

// ServiceBody is the TMF638 Service the Canvas writes for a dependency:
// serviceType API, state active, the Canvas's four characteristics, and the
// fixed serviceSpecification reference, plus the owner characteristics.
// OASSpecification carries the specification URL (the Python operator
// wrote the repr of a dict there).
func ServiceBody(r Registration, owner Owner) map[string]any {
	state := "active"
	if !r.Active {
		state = "inactive"
	}
	char := func(name, value string) map[string]any {
		return map[string]any{"name": name, "valueType": "string", "value": value}
	}
	return map[string]any{
		"serviceType": "API",
		"name":        "unknown",
		"state":       state,
		"serviceCharacteristic": []any{
			char(CharComponentName, r.ComponentName),
			char(CharDependencyName, r.DependencyName),
			char(CharURL, r.URL),
			char(CharSpecification, r.SpecURL),
			char(CharOwnerNamespace, owner.Namespace),
			char(CharOwnerName, owner.Name),
			char(CharOwnerUID, owner.UID),
		},
		"serviceSpecification": map[string]any{"id": "1", "name": "API", "version": "1.0.0"},
		"@type":                "Service",
		"@baseType":            "Service",
	}
}

// Characteristic returns a characteristic's value from a TMF638 Service.
func Characteristic(service map[string]any, name string) string {
	chars, _ := service["serviceCharacteristic"].([]any)
	for _, c := range chars {
		m, _ := c.(map[string]any)
		if n, _ := m["name"].(string); n == name {
			v, _ := m["value"].(string)
			return v
		}
	}
	return ""
}

// Records picks, from the services listed, the ones that record this
// DependentAPI's dependency, by id: the lowest is kept, any others are
// duplicates to delete (a retried create whose first answer was lost). Only
// records owner owns are considered: another namespace's record with the
// same component and dependency names, or one without owner, is not this
// DependentAPI's to change (the Python operator matched on the two names
// and so rewrote and deleted other tenants' records).
func Records(services []map[string]any, owner Owner) (keep string, duplicates []string) {
	var ids []string
	for _, s := range services {
		if OwnershipOf(s, owner) != RecordMine {
			continue
		}
		if id, _ := s["id"].(string); id != "" {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return "", nil
	}
	sort.Strings(ids)
	return ids[0], ids[1:]
}
