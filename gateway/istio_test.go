package gateway

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDesiredIstioExample(t *testing.T) {
	api := exampleAPI(t)
	got := desired(t, Config{Gateway: GatewayIstio}, api, parse(t, api.Spec))
	if diff := cmp.Diff([]Object{exampleVirtualService()}, got); diff != "" {
		t.Errorf("Desired (-want +got):\n%s", diff)
	}
}

func TestDesiredIstioConfig(t *testing.T) {
	api := exampleAPI(t)
	spec := parse(t, api.Spec)
	got := desired(t, Config{Gateway: GatewayIstio, IstioGateway: "canvas/component-gateway", PublicHostname: "api.example.com"}, api, spec)
	vs := got[0].Object["spec"].(map[string]any)
	want := map[string]any{"hosts": []any{"api.example.com"}, "gateways": []any{"canvas/component-gateway"}}
	if diff := cmp.Diff(want, map[string]any{"hosts": vs["hosts"], "gateways": vs["gateways"]}); diff != "" {
		t.Errorf("VirtualService hosts and gateways (-want +got):\n%s", diff)
	}
}

// TestDesiredMetrics: metrics APIs are exposed like any other (UC003-F002
// needs their URL) and get a ServiceMonitor under every gateway, only in
// ServiceMonitor mode.
func TestDesiredMetrics(t *testing.T) {
	metricsAPI := func(t *testing.T, apiType string, basicAuth bool) (API, Spec) {
		return apiNamed(t, "ctk-productcatalogmanagement-metrics", func(s map[string]any) {
			s["name"], s["apiType"], s["path"], s["port"] = "metrics", apiType, "/ctk-productcatalogmanagement/metrics", 4000.0
			if basicAuth {
				s["basicAuth"] = map[string]any{"username": map[string]any{"name": "metrics-auth", "key": "user"}}
			}
		})
	}
	serviceMonitor := func(endpointExtra map[string]any) Object {
		endpoint := map[string]any{"path": "/ctk-productcatalogmanagement/metrics", "interval": "15s", "scheme": "http", "targetPort": int64(4000)}
		for k, v := range endpointExtra {
			endpoint[k] = v
		}
		return Object{Owned: true, Object: map[string]any{
			"apiVersion": "monitoring.coreos.com/v1",
			"kind":       "ServiceMonitor",
			"metadata":   owned("ctk-productcatalogmanagement-metrics", "ctk-productcatalogmanagement-metrics", nil),
			"spec": map[string]any{
				"selector":  map[string]any{"matchLabels": map[string]any{"name": "ctk-prodcatapi"}},
				"endpoints": []any{endpoint},
			},
		}}
	}
	t.Run("ServiceMonitor body", func(t *testing.T) {
		api, spec := metricsAPI(t, "prometheus", false)
		got := desired(t, Config{Gateway: GatewayIstio}, api, spec)
		if diff := cmp.Diff([]string{
			"VirtualService components/ctk-productcatalogmanagement-metrics",
			"ServiceMonitor components/ctk-productcatalogmanagement-metrics",
		}, ids(got)); diff != "" {
			t.Fatalf("objects (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(serviceMonitor(nil), got[1]); diff != "" {
			t.Errorf("ServiceMonitor (-want +got):\n%s", diff)
		}
	})
	t.Run("basicAuth is passed to the endpoint", func(t *testing.T) {
		api, spec := metricsAPI(t, "openmetrics", true)
		got := desired(t, Config{Gateway: GatewayIstio}, api, spec)
		want := serviceMonitor(map[string]any{"basicAuth": map[string]any{"username": map[string]any{"name": "metrics-auth", "key": "user"}}})
		if diff := cmp.Diff(want, got[1]); diff != "" {
			t.Errorf("ServiceMonitor (-want +got):\n%s", diff)
		}
	})
	cases := map[string]struct {
		cfg     Config
		apiType string
		want    []string
	}{
		"openmetrics, mode ServiceMonitor": {Config{Gateway: GatewayIstio, MetricsMode: MetricsServiceMonitor}, "openmetrics",
			[]string{"VirtualService", "ServiceMonitor"}},
		"Prometheus in capitals": {Config{Gateway: GatewayIstio}, "Prometheus", []string{"VirtualService", "ServiceMonitor"}},
		"annotation mode: pods are annotated instead": {Config{Gateway: GatewayIstio, MetricsMode: MetricsPrometheusAnnotation}, "prometheus",
			[]string{"VirtualService"}},
		"mode none":         {Config{Gateway: GatewayIstio, MetricsMode: MetricsNone}, "prometheus", []string{"VirtualService"}},
		"not a metrics API": {Config{Gateway: GatewayIstio}, "openapi", []string{"VirtualService"}},
		"kong keeps the ServiceMonitor (IWK never made one)": {Config{Gateway: GatewayKong}, "prometheus",
			[]string{"VirtualService", "ServiceMonitor", "ReferenceGrant", "HTTPRoute"}},
		"apisix": {Config{Gateway: GatewayApisix}, "prometheus",
			[]string{"VirtualService", "ServiceMonitor", "ApisixPluginConfig", "ApisixRoute"}},
		"kong-admin: only the ServiceMonitor": {Config{Gateway: GatewayKongAdmin}, "prometheus", []string{"ServiceMonitor"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			api, spec := metricsAPI(t, tc.apiType, false)
			var kinds []string
			for _, o := range desired(t, tc.cfg, api, spec) {
				kinds = append(kinds, o.Kind())
			}
			if diff := cmp.Diff(tc.want, kinds); diff != "" {
				t.Errorf("kinds (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMetricsPodAnnotations(t *testing.T) {
	api, spec := apiNamed(t, "ctk-productcatalogmanagement-metrics", func(s map[string]any) {
		s["apiType"], s["path"], s["port"] = "prometheus", "/ctk-productcatalogmanagement/metrics", int64(4000)
	})
	_, openapi := apiNamed(t, "x", nil)
	cases := map[string]struct {
		mode      string
		spec      Spec
		container string
		want      map[string]string
	}{
		"prometheus annotation": {MetricsPrometheusAnnotation, spec, "app", map[string]string{
			"prometheus.io/scrape": "true",
			"prometheus.io/path":   "/ctk-productcatalogmanagement/metrics",
			"prometheus.io/port":   "4000",
		}},
		"datadog annotation": {MetricsDataDogAnnotation, spec, "prodcatapi", map[string]string{
			"ad.datadoghq.com/prodcatapi.checks": `{"openmetrics":{"instances":[{"metrics":[".*"],"namespace":"components","openmetrics_endpoint":"http://ctk-prodcatapi.components.svc.cluster.local:4000/ctk-productcatalogmanagement/metrics"}]}}`,
		}},
		"datadog without a container":   {MetricsDataDogAnnotation, spec, "", nil},
		"service monitor mode":          {MetricsServiceMonitor, spec, "app", nil},
		"default mode (ServiceMonitor)": {"", spec, "app", nil},
		"not a metrics API":             {MetricsPrometheusAnnotation, openapi, "app", nil},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := MetricsPodAnnotations(Config{Gateway: GatewayIstio, MetricsMode: tc.mode}, api, tc.spec, tc.container)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("annotations (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDesiredErrors(t *testing.T) {
	api, spec := apiNamed(t, "x", nil)
	long := make([]byte, 240)
	for i := range long {
		long[i] = 'a'
	}
	cases := map[string]struct {
		cfg  Config
		api  API
		spec Spec
		want string
	}{
		"unknown gateway":      {Config{Gateway: "nginx"}, api, spec, `gateway config: gateway "nginx" must be one of istio, kong, kong-admin, apisix`},
		"no gateway":           {Config{}, api, spec, `gateway config: gateway "" must be one of istio, kong, kong-admin, apisix`},
		"unknown metrics mode": {Config{Gateway: GatewayIstio, MetricsMode: "statsd"}, api, spec, `gateway config: metrics mode "statsd" must be one of ServiceMonitor, PrometheusAnnotation, DataDogAnnotation, none`},
		"bad scheme":           {Config{Gateway: GatewayIstio, Scheme: "ftp"}, api, spec, `gateway config: scheme "ftp" must be http or https`},
		"API without uid":      {Config{Gateway: GatewayIstio}, API{Name: "x", Namespace: "n"}, spec, "gateway: ExposedAPI uid required"},
		"empty spec":           {Config{Gateway: GatewayKong}, api, Spec{}, "gateway: spec.implementation, spec.path, spec.port required"},
		"child name too long": {Config{Gateway: GatewayKong}, API{Name: string(long), Namespace: "n", UID: "u"}, spec,
			`gateway: HTTPRoute name "kong-api-route-` + string(long) + `": must be no more than 253 characters`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			objs, err := Desired(tc.cfg, tc.api, tc.spec)
			if err == nil || err.Error() != tc.want {
				t.Errorf("Desired = %v, %v; want error %q", ids(objs), err, tc.want)
			}
		})
	}
}
