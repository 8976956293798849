package gateway

// KongService is a Kong Admin API service body (PUT /services/{name}).
type KongService struct {
	Name     string `json:"name"`
	Host     string `json:"host"`
	Port     int64  `json:"port"`
	Protocol string `json:"protocol"`
	// Timeouts in milliseconds, set for long-lived APIs only (Kong's
	// defaults apply otherwise).
	ConnectTimeout int64    `json:"connect_timeout,omitempty"`
	ReadTimeout    int64    `json:"read_timeout,omitempty"`
	WriteTimeout   int64    `json:"write_timeout,omitempty"`
	Tags           []string `json:"tags"`
}

// KongRoute is a Kong Admin API route body (PUT /routes/{name}).
type KongRoute struct {
	Name                    string   `json:"name"`
	Paths                   []string `json:"paths"`
	StripPath               bool     `json:"strip_path"`
	Protocols               []string `json:"protocols"`
	HTTPSRedirectStatusCode int64    `json:"https_redirect_status_code"`
	Service                 KongRef  `json:"service"`
	Tags                    []string `json:"tags"`
}

// KongRef refers to another Kong entity by name or, once known, by id (the
// Admin API takes either; the activity sends the id it got back).
type KongRef struct {
	ID   string `json:"id,omitempty"`
	Name string `json:"name,omitempty"`
}

// KongPlugin is a Kong Admin API plugin body, scoped to the API's route
// (PUT /plugins/{id}, or POST /routes/{route}/plugins).
type KongPlugin struct {
	// Name is the plugin type (rate-limiting, jwt, cors).
	Name string `json:"name"`
	// InstanceName is unique in Kong: the KongPlugin name with the
	// namespace, "rate-limit-<namespace>.<name>".
	InstanceName string         `json:"instance_name"`
	Config       map[string]any `json:"config"`
	Route        KongRef        `json:"route"`
	Enabled      bool           `json:"enabled"`
	Tags         []string       `json:"tags"`
}

// KongAdminTag marks every entity odaflow owns in Kong; KongAdminAPITag(api)
// marks those of one ExposedAPI, so that extras can be listed by tag and
// deleted.
const KongAdminTag = "odaflow"

// KongAdminAPITag is the tag of one ExposedAPI's Kong entities:
// "exposedapi:<namespace>.<name>". Kong refuses tags with "/" or "," (a
// filter uses them for "any" and "all"), and a namespace has no dot, so the
// first dot separates the two.
func KongAdminAPITag(api API) string { return KongAdminAPITagFor(api.Namespace, api.Name) }

// KongAdminAPITagFor is KongAdminAPITag from a namespace and a name.
func KongAdminAPITagFor(namespace, name string) string {
	return "exposedapi:" + namespace + "." + name
}

// KongAdminName is the name of the service and route of an ExposedAPI in
// Kong, which has one global namespace: "<namespace>.<name>".
func KongAdminName(api API) string { return api.Namespace + "." + api.Name }

// KongAdminEntities returns the Kong Admin API bodies that expose the API
// under the kong-admin gateway: a service pointing at the implementation
// Service, a route on the path prefix, and the plugins of the enabled
// policies with the same configuration as the KongPlugin objects. The error
// is an api.FieldErrors when a policy cannot be configured (a rate limit without a
// limit).
func KongAdminEntities(cfg Config, api API, spec Spec) (KongService, KongRoute, []KongPlugin, error) {
	b, err := newBuilder(cfg, api, spec)
	if err != nil {
		return KongService{}, KongRoute{}, nil, err
	}
	tags := []string{KongAdminTag, KongAdminAPITag(api)}
	name := KongAdminName(api)
	svc := KongService{
		Name:     name,
		Host:     spec.Implementation + "." + api.Namespace + ".svc",
		Port:     spec.Port,
		Protocol: "http",
		Tags:     tags,
	}
	if IsLongLived(spec.APIType) {
		svc.ConnectTimeout = b.cfg.ConnectTimeout.Milliseconds()
		svc.ReadTimeout = b.cfg.ReadTimeout.Milliseconds()
		svc.WriteTimeout = b.cfg.WriteTimeout.Milliseconds()
	}
	route := KongRoute{
		Name:                    name,
		Paths:                   []string{spec.Path},
		StripPath:               false,
		Protocols:               kongProtocols(b.cfg),
		HTTPSRedirectStatusCode: 301,
		Service:                 KongRef{Name: name},
		Tags:                    tags,
	}
	plugins, err := kongPlugins(spec.Policies)
	if err != nil {
		return KongService{}, KongRoute{}, nil, err
	}
	var out []KongPlugin
	for _, p := range plugins {
		out = append(out, KongPlugin{
			Name:         p.plugin,
			InstanceName: p.prefix + name,
			Config:       p.config,
			Route:        KongRef{Name: name},
			Enabled:      true,
			Tags:         tags,
		})
	}
	return svc, route, out, nil
}
