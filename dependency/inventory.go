package dependency

import "sort"

// Service Inventory (TMF638) records that tell a component's implementation
// where its dependencies are (oda-behaviour §2.5, "Canvas Info").

// Characteristic names of a dependency record.
const (
	CharComponentName  = "componentName"
	CharDependencyName = "dependencyName"
	CharURL            = "url"
	CharSpecification  = "OASSpecification"
)

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
// serviceType API, state active, the four characteristics, and the fixed
// serviceSpecification reference. OASSpecification carries the
// specification URL (the Python operator wrote the repr of a dict there).
func ServiceBody(r Registration) map[string]any {
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

// Records picks, from the services listed for a component, the ones that
// record this dependency, by id: the lowest is kept, any others
// are duplicates to delete (the Python operator asserted there was at most
// one and crashed otherwise).
func Records(services []map[string]any, componentName, dependencyName string) (keep string, duplicates []string) {
	var ids []string
	for _, s := range services {
		if Characteristic(s, CharComponentName) != componentName || Characteristic(s, CharDependencyName) != dependencyName {
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
