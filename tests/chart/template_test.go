package chart

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/odaflow/odaflow/tests/helmtemplate"
)

const fullValues = "testdata/values-full.yaml"

func TestHelmLint(t *testing.T) {
	for _, tc := range []struct{ name, values string }{{"default", ""}, {"full", fullValues}} {
		t.Run(tc.name, func(t *testing.T) {
			problems, err := helmLint(tc.values)
			if err != nil {
				t.Fatal(err)
			}
			if len(problems) > 0 {
				t.Fatalf("helm lint --strict:\n%s", strings.Join(problems, "\n"))
			}
		})
	}
}

// TestTemplateDefault pins what a default install creates.
func TestTemplateDefault(t *testing.T) {
	objs := render(t, "odaflow", "canvas", "")
	want := []string{
		"Certificate canvas/odaflow-webhook",
		"Certificate canvas/odaflow-webhook-ca",
		"ClusterRole odaflow-uninstall-guard",
		"ClusterRole odaflow-watcher",
		"ClusterRole odaflow-worker",
		"ClusterRoleBinding odaflow-uninstall-guard",
		"ClusterRoleBinding odaflow-watcher",
		"ClusterRoleBinding odaflow-worker",
		"Deployment canvas/odaflow-watcher",
		"Deployment canvas/odaflow-webhook",
		"Deployment canvas/odaflow-worker",
		"Issuer canvas/odaflow-webhook-ca",
		"Issuer canvas/odaflow-webhook-selfsigned",
		"Job canvas/odaflow-uninstall-guard",
		"PodDisruptionBudget canvas/odaflow-watcher",
		"PodDisruptionBudget canvas/odaflow-webhook",
		"PodDisruptionBudget canvas/odaflow-worker",
		"Role canvas/odaflow-watcher-leader-election",
		"RoleBinding canvas/odaflow-watcher-leader-election",
		"Secret canvas/odaflow-status-key",
		"Service canvas/odaflow-watcher-metrics",
		"Service canvas/odaflow-webhook",
		"Service canvas/odaflow-webhook-metrics",
		"Service canvas/odaflow-worker-metrics",
		"ServiceAccount canvas/odaflow-uninstall-guard",
		"ServiceAccount canvas/odaflow-watcher",
		"ServiceAccount canvas/odaflow-webhook",
		"ServiceAccount canvas/odaflow-worker",
		"ValidatingAdmissionPolicy odaflow-status-protection",
		"ValidatingAdmissionPolicy odaflow-worker-confinement",
		"ValidatingAdmissionPolicyBinding odaflow-status-protection",
		"ValidatingAdmissionPolicyBinding odaflow-worker-confinement",
	}
	if got := ids(objs, true); !reflect.DeepEqual(got, want) {
		t.Errorf("default install renders\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
	if n := len(findAll(objs, "CustomResourceDefinition")); n != 7 {
		t.Errorf("want the 7 ODA CRDs, got %d", n)
	}
	watcher := find(t, objs, "Deployment", "odaflow-watcher")
	if r := get(watcher, "spec", "replicas"); r != float64(2) {
		t.Errorf("watcher replicas = %v, want 2", r)
	}
	wc := container(t, watcher)
	if args := argsOf(wc); !slices.Contains(args, "--leader-elect=true") || !slices.Contains(args, "--identity-check-interval=10m") {
		t.Errorf("watcher args %v lack leader election or the identity check interval", args)
	}
	env := envOf(container(t, find(t, objs, "Deployment", "odaflow-worker")))
	if env["ODAFLOW_NAMESPACES"] != "components,odacompns-*" || env["ODAFLOW_GATEWAY"] != "istio" {
		t.Errorf("worker env %v", env)
	}
	for _, k := range []string{"ODAFLOW_KEYCLOAK_URL", "ODAFLOW_VAULT_ADDRESS", "ODAFLOW_SERVICE_INVENTORY_URL", "ODAFLOW_KONG_ADMIN_URL", "ODAFLOW_LISTENER_BASE_URL"} {
		if _, ok := env[k]; ok {
			t.Errorf("default worker env sets %s; the integration is off by default", k)
		}
	}
	checkWorkloads(t, objs)
	// Both the worker (seals) and the watcher (checks) read the one key.
	for _, d := range []string{"odaflow-worker", "odaflow-watcher"} {
		dep := find(t, objs, "Deployment", d)
		if args := argsOf(container(t, dep)); !slices.Contains(args, "--status-key-file=/var/run/secrets/odaflow/status-key/key") {
			t.Errorf("%s args %v lack --status-key-file", d, args)
		}
		if !strings.Contains(fmt.Sprint(get(dep, "spec", "template", "spec", "volumes")), "odaflow-status-key") {
			t.Errorf("%s does not mount the Secret odaflow-status-key", d)
		}
	}
}

// TestTemplateFull renders every option and checks each reaches the flag or
// file the binary reads.
func TestTemplateFull(t *testing.T) {
	objs := render(t, "odaflow", "canvas", fullValues)
	checkWorkloads(t, objs)

	worker := find(t, objs, "Deployment", "odaflow-worker")
	wc := container(t, worker)
	env := envOf(wc)
	for k, v := range map[string]string{
		"ODAFLOW_TEMPORAL_ADDRESS":      "temporal.example.com:7233",
		"ODAFLOW_TEMPORAL_NAMESPACE":    "odaflow-prod",
		"ODAFLOW_TASK_QUEUE":            "odaflow-prod",
		"ODAFLOW_GATEWAY":               "kong-admin",
		"ODAFLOW_PUBLIC_HOSTNAME":       "apis.example.com",
		"ODAFLOW_KONG_ADMIN_URL":        "http://kong-admin.kong:8001",
		"ODAFLOW_KONG_ADMIN_TOKEN_FILE": "/var/run/secrets/odaflow/kong/token",
		"ODAFLOW_KEYCLOAK_URL":          "http://keycloak.canvas:8083/auth",
		"ODAFLOW_KEYCLOAK_REALM":        "odari",
		"ODAFLOW_KEYCLOAK_ADMIN_REALM":  "master",
		"ODAFLOW_KEYCLOAK_ADMIN_SECRET": "canvas/keycloak-admin",
		"ODAFLOW_KEYCLOAK_TIMEOUT":      "30s",
		"ODAFLOW_SERVICE_INVENTORY_URL": "http://info.canvas.svc.cluster.local/tmf-api/serviceInventoryManagement/v5",
		"ODAFLOW_VAULT_ADDRESS":         "https://vault.canvas-vault:8200",
		"ODAFLOW_VAULT_TOKEN_FILE":      "/var/run/secrets/odaflow/vault/token",
		"ODAFLOW_VAULT_SKIP_VERIFY":     "false",
		"ODAFLOW_VAULT_CA_CERT_FILE":    "/var/run/secrets/odaflow/vault-ca/ca.crt",
		"ODAFLOW_LISTENER_BASE_URL":     "http://odaflow-worker.canvas.svc:8080",
		"ODAFLOW_LISTENER_KEY_FILE":     "/var/run/secrets/odaflow/listener/keys",
	} {
		if env[k] != v {
			t.Errorf("worker env %s = %q, want %q", k, env[k], v)
		}
	}
	args := argsOf(wc)
	for _, a := range []string{
		"--temporal-tls-cert=/var/run/secrets/odaflow/temporal-tls/tls.crt",
		"--temporal-tls-key=/var/run/secrets/odaflow/temporal-tls/tls.key",
		"--temporal-tls-ca=/var/run/secrets/odaflow/temporal-tls/ca.crt",
		"--temporal-tls-server-name=temporal.example.com",
		"--temporal-api-key-file=/var/run/secrets/odaflow/temporal-api-key/api-key",
	} {
		if !slices.Contains(args, a) {
			t.Errorf("worker args %v lack %s", args, a)
		}
	}
	// Every file the flags name is under a mount of the Secret it comes from.
	mounts := map[string]string{} // mount path -> volume
	for _, m := range list(wc["volumeMounts"]) {
		mm := mapOf(m)
		mounts[mm["mountPath"].(string)] = mm["name"].(string)
	}
	secretOf := map[string]string{} // volume -> secret
	for _, v := range list(get(worker, "spec", "template", "spec", "volumes")) {
		vm := mapOf(v)
		if s := str(vm, "secret", "secretName"); s != "" {
			secretOf[vm["name"].(string)] = s
		}
	}
	for file, secret := range map[string]string{
		"/var/run/secrets/odaflow/kong/token":               "kong-admin-token",
		"/var/run/secrets/odaflow/vault/token":              "vault-token",
		"/var/run/secrets/odaflow/vault-ca/ca.crt":          "vault-ca",
		"/var/run/secrets/odaflow/temporal-tls/tls.crt":     "temporal-mtls",
		"/var/run/secrets/odaflow/temporal-api-key/api-key": "temporal-api-key",
		"/var/run/secrets/odaflow/listener/keys":            "listener-keys",
	} {
		dir := file[:strings.LastIndex(file, "/")]
		if got := secretOf[mounts[dir]]; got != secret {
			t.Errorf("%s: mounted from Secret %q, want %q", file, got, secret)
		}
	}

	// The hubs reach the listener through the worker Service: its selector
	// picks the worker pods, and its port leads to their http port.
	svc := find(t, objs, "Service", "odaflow-worker")
	podLabels := mapOf(get(worker, "spec", "template", "metadata", "labels"))
	selector := mapOf(get(svc, "spec", "selector"))
	if len(selector) == 0 {
		t.Error("worker Service has no selector")
	}
	for k, v := range selector {
		if podLabels[k] != v {
			t.Errorf("worker Service selects %s=%v; the worker pods have %v", k, v, podLabels[k])
		}
	}
	for _, other := range []string{"odaflow-watcher", "odaflow-webhook"} {
		labels := mapOf(get(find(t, objs, "Deployment", other), "spec", "template", "metadata", "labels"))
		matches := true
		for k, v := range selector {
			matches = matches && labels[k] == v
		}
		if matches {
			t.Errorf("worker Service also selects the %s pods", other)
		}
	}
	ports := list(get(svc, "spec", "ports"))
	if len(ports) != 1 || fmt.Sprint(mapOf(ports[0])["port"]) != "8080" || mapOf(ports[0])["targetPort"] != "http" {
		t.Errorf("worker Service ports %v, want 8080 to http", ports)
	}

	// The Keycloak admin Secret is read through the API, never mounted, and
	// only that one Secret is readable.
	for _, s := range secretOf {
		if s == "keycloak-admin" {
			t.Error("the Keycloak admin Secret is mounted; the worker reads it through the API")
		}
	}
	kc := find(t, objs, "Role", "odaflow-worker-keycloak-admin")
	if kc.namespace() != "canvas" {
		t.Errorf("Keycloak admin Role in %q, want canvas", kc.namespace())
	}
	rules := list(kc["rules"])
	if len(rules) != 1 || !reflect.DeepEqual(get(mapOf(rules[0]), "resourceNames"), []any{"keycloak-admin"}) ||
		!reflect.DeepEqual(get(mapOf(rules[0]), "verbs"), []any{"get"}) {
		t.Errorf("Keycloak admin Role rules %v, want get on resourceNames [keycloak-admin]", rules)
	}

	watcherC := container(t, find(t, objs, "Deployment", "odaflow-watcher"))
	if !slices.Contains(argsOf(watcherC), "--identity-check-interval=5m") {
		t.Errorf("watcher args %v", argsOf(watcherC))
	}
	// The watcher computes provider URLs as the worker publishes them.
	venv := envOf(watcherC)
	for k, v := range map[string]string{
		"ODAFLOW_GATEWAY":               env["ODAFLOW_GATEWAY"],
		"ODAFLOW_PUBLIC_HOSTNAME":       env["ODAFLOW_PUBLIC_HOSTNAME"],
		"ODAFLOW_ALLOWED_HOSTNAMES":     "catalog.example.com,*.apps.example.com",
		"ODAFLOW_SHARED_API_NAMESPACES": "canvas-shared,platform-*",
	} {
		if venv[k] != v {
			t.Errorf("watcher env %s = %q, want %q", k, venv[k], v)
		}
	}
	webhookC := container(t, find(t, objs, "Deployment", "odaflow-webhook"))
	wenv := envOf(webhookC)
	if wenv["ODAFLOW_SIDECAR_INJECTION"] != "true" || wenv["ODAFLOW_VAULT_ADDRESS"] != "https://vault.canvas-vault:8200" || wenv["ODAFLOW_SIDECAR_NAMESPACE"] != "components" {
		t.Errorf("webhook env %v", wenv)
	}
	checkSidecarWebhookScope(t, find(t, objs, "MutatingWebhookConfiguration", "odaflow-sidecar"))
	find(t, objs, "Role", "odaflow-webhook")
	find(t, objs, "ClusterRoleBinding", "odaflow-worker-auth-delegator")

	// The umbrella's registry wins; pull secrets are merged without duplicates.
	for _, d := range findAll(objs, "Deployment") {
		c := container(t, d)
		if img := c["image"].(string); img != "registry.example.com/mirror/odaflow/odaflow:v0.1.0" {
			t.Errorf("%s image %s", d.id(), img)
		}
		var pulls []string
		for _, p := range list(get(d, "spec", "template", "spec", "imagePullSecrets")) {
			pulls = append(pulls, mapOf(p)["name"].(string))
		}
		if !reflect.DeepEqual(pulls, []string{"umbrella-pull", "odaflow-pull"}) {
			t.Errorf("%s imagePullSecrets %v", d.id(), pulls)
		}
	}
}

// checkWorkloads holds for every rendering: each container runs a real
// odaflow subcommand with real flags and environment variables, hardened,
// with probes and resources, and no credential is a value.
func checkWorkloads(t *testing.T, objs []object) {
	t.Helper()
	// The one Secret the chart may render is the status seal's key
	// (templates/status-key.yaml): generated in the cluster at the first
	// install, never a value anyone passes in.
	var secrets []object
	for _, s := range findAll(objs, "Secret") {
		if data, _ := s["data"].(map[string]any); !strings.HasSuffix(s.name(), "-status-key") || len(data) != 1 {
			secrets = append(secrets, s)
		}
	}
	if n := len(secrets); n != 0 {
		t.Errorf("the chart renders %d Secrets; credentials come only from existing ones", n)
	}
	for _, d := range findAll(objs, "Deployment") {
		c := container(t, d)
		args := argsOf(c)
		if len(args) == 0 {
			t.Fatalf("%s: no args", d.id())
		}
		cmd := args[0]
		checkArgs(t, d.id(), cmd, args[1:])
		u := usageOf(t, cmd)
		for _, e := range list(c["env"]) {
			m := mapOf(e)
			name := m["name"].(string)
			if vf := mapOf(m["valueFrom"]); vf["secretKeyRef"] != nil {
				t.Errorf("%s: env %s comes from a Secret; credentials are mounted as files", d.id(), name)
			}
			if !u.envs[name] {
				t.Errorf("%s: odaflow %s reads no env %s", d.id(), cmd, name)
			}
			if v, _ := m["value"].(string); strings.Contains(strings.ToLower(name), "password") || strings.Contains(strings.ToLower(name), "token") && !strings.HasSuffix(name, "_FILE") && v != "" {
				t.Errorf("%s: env %s=%q looks like a credential value", d.id(), name, v)
			}
		}
		pod := mapOf(get(d, "spec", "template", "spec"))
		psc := mapOf(pod["securityContext"])
		if psc["runAsNonRoot"] != true || str(psc, "seccompProfile", "type") != "RuntimeDefault" {
			t.Errorf("%s pod securityContext %v", d.id(), psc)
		}
		sc := mapOf(c["securityContext"])
		if sc["runAsNonRoot"] != true || sc["readOnlyRootFilesystem"] != true || sc["allowPrivilegeEscalation"] != false ||
			!reflect.DeepEqual(get(sc, "capabilities", "drop"), []any{"ALL"}) || str(sc, "seccompProfile", "type") != "RuntimeDefault" {
			t.Errorf("%s container securityContext %v", d.id(), sc)
		}
		if uid, _ := sc["runAsUser"].(float64); uid == 0 {
			t.Errorf("%s runs as uid 0", d.id())
		}
		for _, p := range []string{"livenessProbe", "readinessProbe"} {
			if str(mapOf(c[p]), "httpGet", "path") == "" {
				t.Errorf("%s has no HTTP %s", d.id(), p)
			}
		}
		if get(c, "resources", "requests", "memory") == nil || get(c, "resources", "limits", "memory") == nil {
			t.Errorf("%s has no memory request and limit", d.id())
		}
		name := strings.TrimPrefix(d.name(), "odaflow-")
		if pdb := find(t, objs, "PodDisruptionBudget", d.name()); !reflect.DeepEqual(get(pdb, "spec", "selector", "matchLabels"), get(d, "spec", "selector", "matchLabels")) {
			t.Errorf("PodDisruptionBudget of %s selects %v", name, get(pdb, "spec", "selector"))
		}
	}
}

// TestTemplateGateways checks the gateway kinds the worker may write follow
// gateway.type, and that rbac.scope=namespaced keeps every write namespaced.
func TestTemplateGateways(t *testing.T) {
	has := func(objs []object, kind, name, group, resource, verb string) bool {
		for _, o := range objs {
			if o.kind() != kind || o.name() != name {
				continue
			}
			for _, r := range list(o["rules"]) {
				rm := mapOf(r)
				if slices.Contains(list(rm["apiGroups"]), any(group)) && slices.Contains(list(rm["resources"]), any(resource)) && slices.Contains(list(rm["verbs"]), any(verb)) {
					return true
				}
			}
		}
		return false
	}
	cases := []struct {
		gateway string
		kind    string // where the rule is: ClusterRole odaflow-worker or Role odaflow-worker-gateway
		name    string
		group   string
		res     string
		want    bool
	}{
		{"istio", "ClusterRole", "odaflow-worker", "networking.istio.io", "virtualservices", true},
		{"istio", "ClusterRole", "odaflow-worker", "gateway.networking.k8s.io", "httproutes", false},
		{"kong", "ClusterRole", "odaflow-worker", "gateway.networking.k8s.io", "httproutes", true},
		{"kong", "ClusterRole", "odaflow-worker", "configuration.konghq.com", "kongplugins", true},
		{"kong", "Role", "odaflow-worker-gateway", "gateway.networking.k8s.io", "referencegrants", true},
		{"kong", "ClusterRole", "odaflow-worker", "gateway.networking.k8s.io", "referencegrants", false},
		{"apisix", "Role", "odaflow-worker-gateway", "apisix.apache.org", "apisixroutes", true},
		{"apisix", "ClusterRole", "odaflow-worker", "apisix.apache.org", "apisixroutes", false},
		{"kong-admin", "ClusterRole", "odaflow-worker", "networking.istio.io", "virtualservices", false},
	}
	for _, tc := range cases {
		sets := []string{"gateway.type=" + tc.gateway}
		if tc.gateway == "kong-admin" {
			sets = append(sets, "kong.adminURL=http://kong-admin.kong:8001")
		}
		objs := render(t, "odaflow", "canvas", "", sets...)
		if got := has(objs, tc.kind, tc.name, tc.group, tc.res, "create"); got != tc.want {
			t.Errorf("gateway %s: %s %s may create %s = %v, want %v", tc.gateway, tc.kind, tc.name, tc.res, got, tc.want)
		}
	}

	objs := render(t, "odaflow", "canvas", "", "rbac.scope=namespaced", "watchNamespaces={components,odacomp}")
	for _, o := range objs {
		if (o.kind() == "ClusterRole" || o.kind() == "ClusterRoleBinding") && strings.Contains(o.name(), "worker") {
			t.Errorf("rbac.scope=namespaced renders %s", o.id())
		}
	}
	for _, ns := range []string{"components", "odacomp"} {
		found := false
		for _, r := range findAll(objs, "Role") {
			found = found || (r.name() == "odaflow-worker" && r.namespace() == ns)
		}
		if !found {
			t.Errorf("rbac.scope=namespaced: no worker Role in %s", ns)
		}
	}
}

// TestTemplateRejects checks the chart refuses configurations that cannot work.
func TestTemplateRejects(t *testing.T) {
	for _, tc := range []struct {
		sets []string
		want string
	}{
		// values.schema.json refuses it before the template's own check
		// (at '/gateway/type': value must be one of ...).
		{[]string{"gateway.type=nginx"}, "/gateway/type': value must be one of 'istio', 'kong', 'kong-admin', 'apisix'"},
		{[]string{"gateway.type=kong-admin"}, "kong.adminURL is required"},
		{[]string{"keycloak.enabled=true"}, "keycloak.adminSecret.name"},
		{[]string{"identityListener.enabled=true"}, "identityListener.keySecret.name is required"},
		{[]string{"vault.enabled=true"}, "vault.tokenSecret.name or vault.kubernetesAuthRole"},
		{[]string{"webhook.sidecarInjection.enabled=true"}, "needs vault.enabled"},
		{[]string{"rbac.scope=namespaced"}, "cannot grant access to glob namespaces"},
		{[]string{"watcher.leaderElection.enabled=false"}, "needs watcher.leaderElection.enabled"},
		{[]string{"webhook.certManager.enabled=false", "webhook.tls.existingSecret=tls"}, "webhook.tls.caBundle"},
		{[]string{"metrics.service.enabled=false", "metrics.serviceMonitor.enabled=true"}, "needs metrics.service.enabled"},
		// values.schema.json: wrong types, unknown values and unknown keys,
		// each named in helm's schema error by its JSON pointer.
		{[]string{"worker.replicaCount=two"}, "at '/worker/replicaCount'"},
		{[]string{"logLevel=verbose"}, "at '/logLevel'"},
		{[]string{"metrics.serviceMonitor.enabled=yes"}, "at '/metrics/serviceMonitor/enabled'"},
		{[]string{"crds.install=sometimes"}, "at '/crds/install'"},
		{[]string{"workerReplicas=2"}, "at '': additional properties 'workerReplicas' not allowed"},
		{[]string{"worker.replicas=2"}, "at '/worker': additional properties 'replicas' not allowed"},
	} {
		_, err := renderRaw(t, "odaflow", "canvas", "", tc.sets...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("--set %v: error %v, want one saying %q", tc.sets, err, tc.want)
		}
	}
}

// checkSidecarWebhookScope: the apiserver sends the sidecar webhook only
// pods that ask for the sidecar, and none from kube-system or the release
// namespace, whatever namespaceSelector the values add.
func checkSidecarWebhookScope(t *testing.T, mwc object) {
	t.Helper()
	hooks, _ := get(mwc, "webhooks").([]any)
	if len(hooks) != 1 {
		t.Fatalf("webhooks %v", hooks)
	}
	hook := mapOf(hooks[0])
	if got := get(hook, "objectSelector", "matchLabels"); !reflect.DeepEqual(got, map[string]any{"oda.tmforum.org/secretsmanagement": "sidecar"}) {
		t.Errorf("objectSelector.matchLabels = %v: the webhook sees pods that do not ask for the sidecar", got)
	}
	exprs, _ := get(hook, "namespaceSelector", "matchExpressions").([]any)
	excluded := false
	for _, e := range exprs {
		m := mapOf(e)
		if m["key"] == "kubernetes.io/metadata.name" && m["operator"] == "NotIn" {
			vals, _ := m["values"].([]any)
			excluded = slices.Contains(vals, any("kube-system")) && slices.Contains(vals, any("canvas"))
		}
	}
	if !excluded {
		t.Errorf("namespaceSelector %v does not leave out kube-system and the release namespace", get(hook, "namespaceSelector"))
	}
}

// TestTemplateAdmissionPolicyKubeVersion: the chart allows Kubernetes 1.25,
// but the default admission policy is admissionregistration.k8s.io/v1, served
// from 1.30. Before 1.30 the chart stops with the values that install
// there instead of the apiserver's "no matches for kind".
func TestTemplateAdmissionPolicyKubeVersion(t *testing.T) {
	for _, tc := range []struct {
		kube    string
		sets    []string
		wantErr string
		wantVAP bool
	}{
		{"v1.29.5", nil, "rbac.admissionPolicy=false, or rbac.scope=namespaced", false},
		{"v1.29.5", nil, "statusProtection.admissionPolicy=false", false},
		{"v1.29.5", []string{"rbac.admissionPolicy=false"}, "statusProtection.admissionPolicy=false", false},
		{"v1.29.5", []string{"statusProtection.admissionPolicy=false"}, "set rbac.admissionPolicy=false, or rbac.scope=namespaced", false},
		{"v1.29.5", []string{"rbac.admissionPolicy=false", "statusProtection.admissionPolicy=false"}, "", false},
		{"v1.25.0", []string{"rbac.scope=namespaced", "watchNamespaces={components}"}, "statusProtection.admissionPolicy=false", false},
		{"v1.25.0", []string{"rbac.scope=namespaced", "watchNamespaces={components}", "statusProtection.admissionPolicy=false"}, "", false},
		{"v1.30.0", nil, "", true},
	} {
		out, err := helmtemplate.Template(chartDir, helmtemplate.Options{
			Release: "odaflow", Namespace: "canvas", KubeVersion: tc.kube, Set: tc.sets, IncludeCRDs: true,
		})
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Kubernetes %s %v: error %v, want one saying %q", tc.kube, tc.sets, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("Kubernetes %s %v: %v", tc.kube, tc.sets, err)
			continue
		}
		if got := strings.Contains(out, "kind: ValidatingAdmissionPolicy\n"); got != tc.wantVAP {
			t.Errorf("Kubernetes %s %v: ValidatingAdmissionPolicy rendered %v, want %v", tc.kube, tc.sets, got, tc.wantVAP)
		}
	}
}
