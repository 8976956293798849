package api

// DependentAPISpec is the spec of a DependentAPI: an API a Component needs,
// which odaflow resolves to a providing ExposedAPI's URL (package
// dependency).
type DependentAPISpec struct {
	Name    string `json:"name"`
	APIType string `json:"apiType"`
	// Specification is {url, version}; the url is what a provider is
	// matched on. Older shapes (a list, a plain URL) are read by
	// dependency.SpecURLs, so it is kept as written.
	Specification any       `json:"specification"`
	Selector      *Selector `json:"selector"`
	Resources     []any     `json:"resources"`
	Required      *bool     `json:"required"`
	Segment       string    `json:"segment"`
}

// Selector narrows the ExposedAPIs that may provide a DependentAPI.
type Selector struct {
	Namespace   string `json:"namespace"`
	ReleaseName string `json:"releaseName"`
	Zone        string `json:"zone"`
}
