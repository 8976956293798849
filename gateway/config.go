package gateway

import (
	"fmt"
	"strings"
	"time"
)

// The gateways odaflow can drive (Config.Gateway).
const (
	GatewayIstio     = "istio"
	GatewayKong      = "kong"
	GatewayKongAdmin = "kong-admin"
	GatewayApisix    = "apisix"
)

// How metrics APIs (apiType prometheus or openmetrics) are made scrapable
// (Config.MetricsMode, the Canvas's OPENMETRICS_IMPLEMENTATION).
const (
	MetricsServiceMonitor       = "ServiceMonitor"
	MetricsPrometheusAnnotation = "PrometheusAnnotation"
	MetricsDataDogAnnotation    = "DataDogAnnotation"
	MetricsNone                 = "none"
)

// Defaults of the Config fields, taken from the Canvas operators and charts.
const (
	DefaultIstioGateway         = "component-gateway" // IST code default
	DefaultKongGatewayName      = "kong"
	DefaultKongGatewayNamespace = "components"
	DefaultBackendService       = "istio-ingress"
	DefaultBackendNamespace     = "istio-ingress"
	DefaultBackendPort          = 80
	DefaultApisixNamespace      = "istio-ingress"
	DefaultMetricsMode          = MetricsServiceMonitor // IST code default
	DefaultConnectTimeout       = 60 * time.Second      // API_CONNECT_TIMEOUT
	DefaultReadTimeout          = 900 * time.Second     // API_READ_TIMEOUT
	DefaultWriteTimeout         = 900 * time.Second     // API_WRITE_TIMEOUT
)

// Config is how the cluster's API gateway is set up. The zero value of every
// field but Gateway means its default (WithDefaults).
type Config struct {
	// Gateway is istio, kong, kong-admin or apisix.
	Gateway string
	// IstioGateway is the Istio Gateway the VirtualServices bind to, as
	// "namespace/name" or "name" (VirtualService.spec.gateways).
	IstioGateway string
	// PublicHostname, when set, is the VirtualService host and replaces the
	// ingress load-balancer address in URLs.
	PublicHostname string
	// AllowedHostnames are the host names, besides the Canvas's own address
	// (PublicHostname and the ingress's IP and host name), an ExposedAPI's
	// spec.hostname may put into its URL: exact names or globs such as
	// *.apps.example.com (HostnameAllowed).
	AllowedHostnames []string
	// KongGatewayName and KongGatewayNamespace are the HTTPRoute parentRef
	// (the Canvas hard-codes kong/components).
	KongGatewayName, KongGatewayNamespace string
	// BackendService, BackendNamespace and BackendPort are the Service Kong
	// and APISIX forward to: the Istio ingress, which routes on by
	// VirtualService. The ReferenceGrant lives in BackendNamespace.
	BackendService, BackendNamespace string
	BackendPort                      int32
	// ApisixNamespace holds the ApisixRoute and ApisixPluginConfig. An
	// ApisixRoute can only reach Services in its own namespace, so this is
	// normally BackendNamespace.
	ApisixNamespace string
	// MetricsMode is ServiceMonitor, PrometheusAnnotation, DataDogAnnotation
	// or none.
	MetricsMode string
	// Scheme of the URLs in status: https (istio, kong, kong-admin) or http
	// (apisix) by default.
	Scheme string
	// Upstream timeouts for long-lived APIs (apiType mcp, a2a, sse).
	ConnectTimeout, ReadTimeout, WriteTimeout time.Duration
	// VirtualServiceAPIVersion is the apiVersion VirtualServices are
	// written with: the one the cluster serves, found through discovery
	// (PickVirtualServiceAPIVersion); DefaultVirtualServiceAPIVersion when
	// empty.
	VirtualServiceAPIVersion string
}

// WithDefaults fills in every unset field but Gateway.
func (c Config) WithDefaults() Config {
	def := func(s *string, v string) {
		if *s == "" {
			*s = v
		}
	}
	def(&c.IstioGateway, DefaultIstioGateway)
	def(&c.KongGatewayName, DefaultKongGatewayName)
	def(&c.KongGatewayNamespace, DefaultKongGatewayNamespace)
	def(&c.BackendService, DefaultBackendService)
	def(&c.BackendNamespace, DefaultBackendNamespace)
	def(&c.ApisixNamespace, DefaultApisixNamespace)
	def(&c.MetricsMode, DefaultMetricsMode)
	def(&c.VirtualServiceAPIVersion, DefaultVirtualServiceAPIVersion)
	if c.Gateway == GatewayApisix {
		def(&c.Scheme, "http") // IWA
	}
	def(&c.Scheme, "https") // IST, IWK
	if c.BackendPort == 0 {
		c.BackendPort = DefaultBackendPort
	}
	if c.ConnectTimeout == 0 {
		c.ConnectTimeout = DefaultConnectTimeout
	}
	if c.ReadTimeout == 0 {
		c.ReadTimeout = DefaultReadTimeout
	}
	if c.WriteTimeout == 0 {
		c.WriteTimeout = DefaultWriteTimeout
	}
	return c
}

// Validate checks a defaulted Config.
func (c Config) Validate() error {
	var errs []string
	switch c.Gateway {
	case GatewayIstio, GatewayKong, GatewayKongAdmin, GatewayApisix:
	default:
		errs = append(errs, fmt.Sprintf("gateway %q must be one of istio, kong, kong-admin, apisix", c.Gateway))
	}
	switch c.MetricsMode {
	case MetricsServiceMonitor, MetricsPrometheusAnnotation, MetricsDataDogAnnotation, MetricsNone:
	default:
		errs = append(errs, fmt.Sprintf("metrics mode %q must be one of ServiceMonitor, PrometheusAnnotation, DataDogAnnotation, none", c.MetricsMode))
	}
	if c.Scheme != "http" && c.Scheme != "https" {
		errs = append(errs, fmt.Sprintf("scheme %q must be http or https", c.Scheme))
	}
	if c.BackendPort < 1 {
		errs = append(errs, fmt.Sprintf("backend port %d must be positive", c.BackendPort))
	}
	if PickVirtualServiceAPIVersion(func(v string) bool { return c.VirtualServiceAPIVersion == VirtualServiceGroup+"/"+v }) == "" {
		errs = append(errs, fmt.Sprintf("VirtualService apiVersion %q must be %s/ and one of %s", c.VirtualServiceAPIVersion, VirtualServiceGroup, strings.Join(VirtualServiceVersions, ", ")))
	}
	if c.ConnectTimeout < 0 || c.ReadTimeout < 0 || c.WriteTimeout < 0 {
		errs = append(errs, "timeouts must not be negative")
	}
	if len(errs) > 0 {
		return fmt.Errorf("gateway config: %s", strings.Join(errs, "; "))
	}
	return nil
}
