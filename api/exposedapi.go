package api

// ExposedAPISpec is the spec of an ExposedAPI: the API a gateway publishes
// and the policies it applies. Package gateway validates it (ParseSpec) and
// builds the gateway objects from it.
type ExposedAPISpec struct {
	Name string `json:"name"`
	// APIType is openapi, prometheus, openmetrics or mcp (a2a and sse are
	// taken too, as long-lived APIs).
	APIType        string         `json:"apiType"`
	Implementation string         `json:"implementation"`
	Path           string         `json:"path"`
	DeveloperUI    string         `json:"developerUI"`
	Hostname       string         `json:"hostname"`
	BasicAuth      map[string]any `json:"basicAuth"`
	Port           *int64         `json:"port"`

	RateLimit          *RateLimit          `json:"rateLimit"`
	APIKeyVerification *APIKeyVerification `json:"apiKeyVerification"`
	CORS               *CORS               `json:"CORS"`
	Quota              *Quota              `json:"quota"`
	OASValidation      *OASValidation      `json:"OASValidation"`
	// Template is the URL of a gateway plugin template.
	Template string `json:"template"`

	// Specification ({url, version}) is what a DependentAPI is matched
	// on; package dependency reads it.
	Specification any `json:"specification"`
	// Segment is the Component function that declared the API.
	Segment string `json:"segment"`
}

// RateLimit is spec.rateLimit; read only when enabled.
type RateLimit struct {
	Enabled    bool   `json:"enabled"`
	Identifier string `json:"identifier"`
	Limit      Count  `json:"limit"`
	// Interval is ps, pm, ph or pd (or second, minute, hour, day).
	Interval string `json:"interval"`
}

func (*RateLimit) gate() string { return "enabled" }

// APIKeyVerification is spec.apiKeyVerification; read only when enabled.
type APIKeyVerification struct {
	Enabled  bool   `json:"enabled"`
	Location string `json:"location"`
}

func (*APIKeyVerification) gate() string { return "enabled" }

// CORS is spec.CORS; read only when enabled. Empty lists mean the Canvas
// defaults.
type CORS struct {
	Enabled                 bool       `json:"enabled"`
	AllowCredentials        bool       `json:"allowCredentials"`
	AllowOrigins            CommaList  `json:"allowOrigins"`
	HandlePreflightRequests *Preflight `json:"handlePreflightRequests"`
}

func (*CORS) gate() string { return "enabled" }

// Preflight is spec.CORS.handlePreflightRequests.
type Preflight struct {
	AllowHeaders CommaList `json:"allowHeaders"`
	AllowMethods CommaList `json:"allowMethods"`
	// Enabled is true when not given.
	Enabled *bool `json:"enabled"`
	// MaxAge is in seconds; the Canvas default when not given.
	MaxAge *int64 `json:"maxAge"`
}

// Quota is spec.quota. It has no enabled flag: the Canvas APISIX operator
// applies it when both identifier and limit are set, and an empty one ("")
// is not set, so a Quota is read only then and is nil otherwise.
type Quota struct {
	Identifier string `json:"identifier"`
	Limit      Count  `json:"limit"`
}

func (q *Quota) decodeValue(d decoder, v any, path string) bool {
	m, ok := v.(map[string]any)
	if !ok {
		d.add(path, "must be an object, got %s", TypeName(v))
		return false
	}
	if blank(m["identifier"]) || blank(m["limit"]) {
		return false
	}
	d.value(m["identifier"], path+".identifier", valueOf(&q.Identifier))
	d.value(m["limit"], path+".limit", valueOf(&q.Limit))
	return true
}

// OASValidation is spec.OASValidation: applied when request or response
// validation is enabled.
type OASValidation struct {
	RequestEnabled              bool `json:"requestEnabled"`
	ResponseEnabled             bool `json:"responseEnabled"`
	AllowUnspecifiedHeaders     bool `json:"allowUnspecifiedHeaders"`
	AllowUnspecifiedQueryParams bool `json:"allowUnspecifiedQueryParams"`
	AllowUnspecifiedCookies     bool `json:"allowUnspecifiedCookies"`
}

// ExposedAPIStatus is the status of an ExposedAPI, as odaflow writes it
// and as the dependency resolution reads a provider's.
type ExposedAPIStatus struct {
	Implementation *ImplementationStatus `json:"implementation"`
	APIStatus      *APIStatus            `json:"apiStatus"`
}

// ImplementationStatus is status.implementation.
type ImplementationStatus struct {
	Ready bool `json:"ready"`
}

// APIStatus is an ExposedAPI's status.apiStatus: where the gateway
// publishes the API.
type APIStatus struct {
	Name           string `json:"name"`
	UID            string `json:"uid"`
	URL            string `json:"url"`
	DeveloperUI    string `json:"developerUI"`
	IP             string `json:"ip"`
	Path           string `json:"path"`
	Implementation string `json:"implementation"`
	Port           *int64 `json:"port"`
}
