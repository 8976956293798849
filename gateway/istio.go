package gateway

import (
	"encoding/json"
	"fmt"
	"strconv"
)

const (
	// VirtualServiceGroup is the API group of Istio's VirtualService.
	VirtualServiceGroup = "networking.istio.io"
	// VirtualServiceResource is its resource name.
	VirtualServiceResource = "virtualservices"
	// DefaultVirtualServiceAPIVersion: Istio serves v1 from 1.22 on, with
	// v1beta1 and v1alpha3 of the same schema beside it.
	DefaultVirtualServiceAPIVersion = VirtualServiceGroup + "/v1"
	serviceMonitorAPIVersion        = "monitoring.coreos.com/v1"
)

// VirtualServiceVersions are the VirtualService versions odaflow writes, in
// order of preference: v1 (Istio 1.22 and later), v1beta1 (1.5 to 1.21),
// v1alpha3 (every Istio). The spec odaflow writes is the same in all three.
var VirtualServiceVersions = []string{"v1", "v1beta1", "v1alpha3"}

// PickVirtualServiceAPIVersion returns the apiVersion to write
// VirtualServices with: the first of VirtualServiceVersions that served
// reports true for, or "" when the cluster serves none of them.
func PickVirtualServiceAPIVersion(served func(version string) bool) string {
	for _, v := range VirtualServiceVersions {
		if served(v) {
			return VirtualServiceGroup + "/" + v
		}
	}
	return ""
}

// virtualService routes the API's path prefix on the Istio Gateway to the
// implementation Service (§2.2.1 step 4). It has the ExposedAPI's name.
func (b builder) virtualService() Object {
	host := b.cfg.PublicHostname
	if host == "" {
		host = "*"
	}
	o := b.object(b.cfg.VirtualServiceAPIVersion, "VirtualService", b.api.Namespace, b.api.Name, nil)
	o.Object["spec"] = map[string]any{
		"hosts":    []any{host},
		"gateways": []any{b.cfg.IstioGateway},
		"http": []any{map[string]any{
			"match": []any{map[string]any{"uri": map[string]any{"prefix": b.spec.Path}}},
			"route": []any{map[string]any{"destination": map[string]any{
				"host": b.spec.Implementation,
				"port": map[string]any{"number": b.spec.Port},
			}}},
		}},
	}
	return o
}

// serviceMonitor makes a metrics API scrapable by the Prometheus operator
// (§2.2.1 step 3): it selects the implementation's Service by the label
// name=<implementation> (the convention of the ODA reference components)
// and scrapes the API path every 15 s.
func (b builder) serviceMonitor() (Object, bool) {
	if !IsMetrics(b.spec.APIType) || b.cfg.MetricsMode != MetricsServiceMonitor {
		return Object{}, false
	}
	endpoint := map[string]any{
		"path":       b.spec.Path,
		"interval":   "15s",
		"scheme":     "http",
		"targetPort": b.spec.Port,
	}
	if b.spec.BasicAuth != nil {
		endpoint["basicAuth"] = deepCopy(b.spec.BasicAuth)
	}
	o := b.object(serviceMonitorAPIVersion, "ServiceMonitor", b.api.Namespace, b.api.Name, nil)
	o.Object["spec"] = map[string]any{
		"selector":  map[string]any{"matchLabels": map[string]any{"name": b.spec.Implementation}},
		"endpoints": []any{endpoint},
	}
	return o, true
}

// MetricsPodAnnotations returns the annotations that make a metrics API's
// pod scrapable under the annotation metrics modes (§2.2.1 step 3): the
// caller puts them on the first pod selected by the implementation Service
// (container is that pod's first container). It returns nil for other APIs
// and modes.
func MetricsPodAnnotations(cfg Config, api API, spec Spec, container string) map[string]string {
	cfg = cfg.WithDefaults()
	if !IsMetrics(spec.APIType) {
		return nil
	}
	switch cfg.MetricsMode {
	case MetricsPrometheusAnnotation:
		// The Canvas sets only scrape; path and port make the scrape hit the
		// API rather than the default /metrics on every container port.
		return map[string]string{
			"prometheus.io/scrape": "true",
			"prometheus.io/path":   spec.Path,
			"prometheus.io/port":   strconv.FormatInt(spec.Port, 10),
		}
	case MetricsDataDogAnnotation:
		if container == "" {
			return nil
		}
		check := map[string]any{"openmetrics": map[string]any{"instances": []any{map[string]any{
			"openmetrics_endpoint": fmt.Sprintf("http://%s.%s.svc.cluster.local:%d%s", spec.Implementation, api.Namespace, spec.Port, spec.Path),
			// The Datadog metric namespace (a name prefix, not a Kubernetes
			// namespace): "components" as in the Canvas, so that existing
			// dashboards keep working.
			"namespace": "components",
			"metrics":   []any{".*"},
		}}}}
		raw, _ := json.Marshal(check) // plain maps and strings: cannot fail
		return map[string]string{"ad.datadoghq.com/" + container + ".checks": string(raw)}
	}
	return nil
}
