package chart

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/odaflow/odaflow/worker"
)

// componentCRD is the Component CRD of a rendering.
func componentCRD(t *testing.T, objs []object) object {
	t.Helper()
	return find(t, objs, "CustomResourceDefinition", "components.oda.tmforum.org")
}

// TestTemplateConversionWired checks, on the default rendering, that the
// Component CRD converts through this release's webhook: the clientConfig
// names the rendered webhook Service, in the release namespace, on the
// Service's port, at the path the server answers; and the CA comes from
// the serving Certificate whose Secret the webhook Deployment mounts.
func TestTemplateConversionWired(t *testing.T) {
	objs := render(t, "odaflow", "canvas", "")
	crd := componentCRD(t, objs)
	if s := str(crd, "spec", "conversion", "strategy"); s != "Webhook" {
		t.Fatalf("Component conversion strategy %q, want Webhook", s)
	}
	if v := list(get(crd, "spec", "conversion", "webhook", "conversionReviewVersions")); len(v) != 1 || v[0] != "v1" {
		t.Errorf("conversionReviewVersions %v, want [v1]", v)
	}
	svcRef := mapOf(get(crd, "spec", "conversion", "webhook", "clientConfig", "service"))
	svc := find(t, objs, "Service", str(svcRef, "name"))
	if svcRef["namespace"] != svc.namespace() || svcRef["path"] != "/convert" {
		t.Errorf("clientConfig.service %v: want namespace %s and path /convert", svcRef, svc.namespace())
	}
	ports := list(get(svc, "spec", "ports"))
	if len(ports) != 1 || get(ports[0], "port") != svcRef["port"] {
		t.Errorf("clientConfig port %v is not the Service's %v", svcRef["port"], ports)
	}
	// The Service selects the webhook pods.
	webhookDeploy := find(t, objs, "Deployment", "odaflow-webhook")
	for k, v := range mapOf(get(svc, "spec", "selector")) {
		if get(webhookDeploy, "spec", "template", "metadata", "labels", k) != v {
			t.Errorf("the webhook Service selects %s=%v, which the webhook pods lack", k, v)
		}
	}
	inject := str(crd, "metadata", "annotations", "cert-manager.io/inject-ca-from")
	ns, name, _ := strings.Cut(inject, "/")
	cert := find(t, objs, "Certificate", name)
	if cert.namespace() != ns {
		t.Errorf("inject-ca-from %s: the Certificate is in %s", inject, cert.namespace())
	}
	if dns := list(get(cert, "spec", "dnsNames")); !slices.Contains(dns, any(fmt.Sprintf("%s.%s.svc", svc.name(), svc.namespace()))) {
		t.Errorf("Certificate dnsNames %v lack %s.%s.svc, the name the API server verifies", dns, svc.name(), svc.namespace())
	}
	mounted := false
	for _, v := range list(get(webhookDeploy, "spec", "template", "spec", "volumes")) {
		mounted = mounted || str(v, "secret", "secretName") == str(cert, "spec", "secretName")
	}
	if !mounted {
		t.Errorf("the webhook Deployment does not mount the Certificate's Secret %s", str(cert, "spec", "secretName"))
	}
	if get(crd, "metadata", "annotations", "helm.sh/resource-policy") != "keep" {
		t.Error("the CRDs lack helm.sh/resource-policy: keep; helm uninstall would delete every ODA resource")
	}
	for _, o := range findAll(objs, "CustomResourceDefinition") {
		if o.name() != crd.name() && str(o, "spec", "conversion", "strategy") == "Webhook" {
			t.Errorf("%s converts through a webhook; only Components have a converter", o.name())
		}
	}

	// Without cert-manager: the caBundle comes from the values.
	objs = render(t, "odaflow", "canvas", "", "webhook.certManager.enabled=false", "webhook.tls.existingSecret=tls", "webhook.tls.caBundle=Q0E=")
	crd = componentCRD(t, objs)
	if got := str(crd, "spec", "conversion", "webhook", "clientConfig", "caBundle"); got != "Q0E=" {
		t.Errorf("caBundle %q, want webhook.tls.caBundle", got)
	}
	if inject := str(crd, "metadata", "annotations", "cert-manager.io/inject-ca-from"); inject != "" {
		t.Errorf("inject-ca-from %q without cert-manager", inject)
	}
}

// TestTemplateWebhookOff checks that without the webhook nothing of it is
// rendered and no CRD converts through a Service that does not exist.
func TestTemplateWebhookOff(t *testing.T) {
	objs := render(t, "odaflow", "canvas", "", "webhook.enabled=false")
	for _, o := range objs {
		if strings.Contains(o.name(), "webhook") || o.kind() == "Certificate" || o.kind() == "Issuer" {
			t.Errorf("webhook.enabled=false renders %s", o.id())
		}
		if o.kind() == "CustomResourceDefinition" {
			if s := str(o, "spec", "conversion", "strategy"); s != "" && s != "None" {
				t.Errorf("%s: conversion %q with no webhook", o.name(), s)
			}
			if a := str(o, "metadata", "annotations", "cert-manager.io/inject-ca-from"); a != "" {
				t.Errorf("%s: inject-ca-from %q with no webhook", o.name(), a)
			}
		}
	}
	objs = render(t, "odaflow", "canvas", "", "crds.install=false")
	if n := len(findAll(objs, "CustomResourceDefinition")); n != 0 {
		t.Errorf("crds.install=false renders %d CRDs", n)
	}
}

// TestTemplateProduction checks what a production install relies on: the
// umbrella's registry, probes, grace periods matched to the worker's drain,
// metrics Services for every Deployment and the Prometheus Operator objects.
func TestTemplateProduction(t *testing.T) {
	objs := render(t, "odaflow", "canvas", "", "global.image.registry=registry.example.com/mirror",
		"metrics.serviceMonitor.enabled=true", "metrics.podMonitor.enabled=true", "metrics.serviceMonitor.labels.release=prom")
	for _, name := range []string{"worker", "watcher", "webhook"} {
		d := find(t, objs, "Deployment", "odaflow-"+name)
		c := container(t, d)
		if img, _ := c["image"].(string); !strings.HasPrefix(img, "registry.example.com/mirror/odaflow/odaflow:") {
			t.Errorf("%s image %q does not use global.image.registry", name, img)
		}
		if c["startupProbe"] == nil {
			t.Errorf("%s has no startupProbe", name)
		}
		svc := find(t, objs, "Service", "odaflow-"+name+"-metrics")
		port := list(get(svc, "spec", "ports"))[0]
		target := str(port, "targetPort")
		found := false
		for _, p := range list(c["ports"]) {
			found = found || str(p, "name") == target
		}
		if !found || str(port, "name") != "http-metrics" {
			t.Errorf("%s metrics Service port %v: no container port %q", name, port, target)
		}
		if name == "webhook" {
			if env := envOf(c); env["ODAFLOW_METRICS_ADDRESS"] != ":8080" {
				t.Errorf("webhook ODAFLOW_METRICS_ADDRESS = %q, want :8080", env["ODAFLOW_METRICS_ADDRESS"])
			}
		}
	}
	grace := get(find(t, objs, "Deployment", "odaflow-worker"), "spec", "template", "spec", "terminationGracePeriodSeconds")
	if g, ok := grace.(float64); !ok || g <= worker.StopTimeout.Seconds() {
		t.Errorf("worker terminationGracePeriodSeconds %v, want more than the worker's drain (worker.StopTimeout %s)", grace, worker.StopTimeout)
	}
	sm := find(t, objs, "ServiceMonitor", "odaflow")
	if get(sm, "metadata", "labels", "release") != "prom" {
		t.Errorf("ServiceMonitor labels %v lack metrics.serviceMonitor.labels", get(sm, "metadata", "labels"))
	}
	for k, v := range mapOf(get(sm, "spec", "selector", "matchLabels")) {
		for _, name := range []string{"worker", "watcher", "webhook"} {
			if get(find(t, objs, "Service", "odaflow-"+name+"-metrics"), "metadata", "labels", k) != v {
				t.Errorf("the ServiceMonitor selects %s=%v, which the %s metrics Service lacks", k, v, name)
			}
		}
	}
	find(t, objs, "PodMonitor", "odaflow")
}

// TestTemplateTemporalCloudTLS: with temporal.tls.caKey empty (a Temporal
// Cloud Secret has no ca.crt) no CA file is passed, so the system roots
// verify the server; the client certificate still is.
func TestTemplateTemporalCloudTLS(t *testing.T) {
	objs := render(t, "odaflow", "canvas", "", "temporal.tls.enabled=true", "temporal.tls.existingSecret=cloud-mtls", "temporal.tls.caKey=")
	for _, name := range []string{"worker", "watcher"} {
		args := argsOf(container(t, find(t, objs, "Deployment", "odaflow-"+name)))
		if !slices.Contains(args, "--temporal-tls-cert=/var/run/secrets/odaflow/temporal-tls/tls.crt") {
			t.Errorf("%s args %v lack the client certificate", name, args)
		}
		for _, a := range args {
			if strings.HasPrefix(a, "--temporal-tls-ca") {
				t.Errorf("%s passes %s with temporal.tls.caKey empty", name, a)
			}
		}
	}
}
