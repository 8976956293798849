package secrets

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	corev1 "k8s.io/api/core/v1"
)

func TestNamesFor(t *testing.T) {
	got := NamesFor("components", "ctk-productcatalogmanagement")
	want := Names{
		CIID:   "components.ctk-productcatalogmanagement",
		Mount:  "kv-sman-components.ctk-productcatalogmanagement",
		Policy: "sman-components.ctk-productcatalogmanagement-policy",
		Role:   "sman-components.ctk-productcatalogmanagement-role",
	}
	if got != want {
		t.Fatalf("NamesFor = %+v, want %+v", got, want)
	}
}

func TestGlob(t *testing.T) {
	for _, tc := range []struct {
		pattern, name string
		want          bool
	}{
		{"", "anything", true},
		{"*", "", true},
		{"*", "demo-a-prodcatapi-57868f9d7c-x2x9z", true},
		{"demo-a-*", "demo-a-prodcatapi-57868f9d7c-", true},
		{"demo-a-*", "demo-b-prodcatapi", false},
		{"demo-?-prodcatapi*", "demo-a-prodcatapi-1", true},
		{"demo-?-prodcatapi*", "demo-ab-prodcatapi-1", false},
		{"*-prodcatapi-*", "demo-a-prodcatapi-57868f9d7c-", true},
		{"components", "components", true},
		{"components", "components2", false},
		{"odacompns-*", "odacompns-1", true},
		{"odacompns-[0-9]", "odacompns-7", true},
		{"odacompns-[0-9]", "odacompns-x", false},
		{"odacompns-[!0-9]", "odacompns-x", true},
		{"odacompns-[!0-9]", "odacompns-7", false},
		{"a[]]b", "a]b", true},
		{"a[b", "a[b", true}, // unclosed set: literal, as in fnmatch
		{"a[b", "ab", false},
		{"a\\b", "a\\b", true}, // no escape character
		{"*a*a*a*a*a*b", strings.Repeat("a", 60), false},
		{"**", "x", true},
		{"x*", "x", true},
		{"*x", "yx", true},
		{"*x", "xy", false},
	} {
		if got := Glob(tc.pattern, tc.name); got != tc.want {
			t.Errorf("Glob(%q, %q) = %v, want %v", tc.pattern, tc.name, got, tc.want)
		}
	}
}

func TestParseSpec(t *testing.T) {
	for _, tc := range []struct {
		name    string
		spec    map[string]any
		want    Spec
		wantErr string
	}{
		{
			name: "canvas example",
			spec: map[string]any{"type": "sideCar", "sideCar": map[string]any{"port": float64(5000)},
				"podSelector": map[string]any{"namespace": "components", "name": "demo-a-*", "serviceaccount": "default"}},
			want: Spec{Type: "sideCar", PodSelector: Selector{Namespace: "components", Name: "demo-a-*", ServiceAccount: "default"}, SidecarPort: 5000},
		},
		{
			name: "int64 port, no serviceaccount",
			spec: map[string]any{"type": "sideCar", "sideCar": map[string]any{"port": int64(6000)}, "podSelector": map[string]any{"name": "x"}},
			want: Spec{Type: "sideCar", PodSelector: Selector{Name: "x"}, SidecarPort: 6000},
		},
		{
			name: "no sideCar block: default port",
			spec: map[string]any{"type": "sideCar", "podSelector": map[string]any{}},
			want: Spec{Type: "sideCar", SidecarPort: DefaultSidecarPort},
		},
		{name: "wrong type", spec: map[string]any{"type": "vault", "podSelector": map[string]any{}}, wantErr: `spec.type must be sideCar, got "vault"`},
		{name: "no selector", spec: map[string]any{"type": "sideCar"}, wantErr: "spec.podSelector is required"},
		{name: "bad port", spec: map[string]any{"type": "sideCar", "podSelector": map[string]any{}, "sideCar": map[string]any{"port": float64(70000)}}, wantErr: "spec.sideCar.port must be a port number"},
		{name: "non-string glob", spec: map[string]any{"type": "sideCar", "podSelector": map[string]any{"name": float64(1)}}, wantErr: "spec.podSelector.name must be a string"},
		{name: "every problem at once", spec: map[string]any{}, wantErr: "spec.type must be sideCar, got \"\"; spec.podSelector is required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseSpec(tc.spec)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Fatalf("ParseSpec = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestSelects(t *testing.T) {
	spec := Spec{Type: TypeSideCar, PodSelector: Selector{Namespace: "components", Name: "demo-a-*", ServiceAccount: "default"}}
	base := PodInfo{Namespace: "components", GenerateName: "demo-a-prodcatapi-57868f9d7c-", Labels: map[string]string{LabelSecretsManagement: "sidecar"}}
	with := func(f func(*PodInfo)) PodInfo {
		p := base
		p.Labels = map[string]string{}
		for k, v := range base.Labels {
			p.Labels[k] = v
		}
		f(&p)
		return p
	}
	for _, tc := range []struct {
		name string
		sm   string
		pod  PodInfo
		want bool
	}{
		{"generated name matches, default service account", "demo-a-productcatalogmanagement", base, true},
		{"no sidecar label", "demo-a-productcatalogmanagement", with(func(p *PodInfo) { delete(p.Labels, LabelSecretsManagement) }), false},
		{"label of another type", "demo-a-productcatalogmanagement", with(func(p *PodInfo) { p.Labels[LabelSecretsManagement] = "csi" }), false},
		{"component label of this SM (case-insensitive)", "demo-a-productcatalogmanagement", with(func(p *PodInfo) { p.Labels[LabelComponentName] = "Demo-A-ProductCatalogManagement" }), true},
		{"component label of another SM", "demo-a-productcatalogmanagement", with(func(p *PodInfo) { p.Labels[LabelComponentName] = "demo-b" }), false},
		{"name wins over generateName", "x", with(func(p *PodInfo) { p.Name = "other-pod" }), false},
		{"other namespace", "x", with(func(p *PodInfo) { p.Namespace = "kube-system" }), false},
		{"other service account", "x", with(func(p *PodInfo) { p.ServiceAccount = "admin" }), false},
	} {
		if got := Selects(tc.sm, spec, tc.pod); got != tc.want {
			t.Errorf("%s: Selects = %v, want %v", tc.name, got, tc.want)
		}
	}
	if ok, why := spec.PodSelector.Matches(with(func(p *PodInfo) { p.ServiceAccount = "admin" })); ok || why != `service account "admin" does not match "default"` {
		t.Errorf("Matches reason = %q", why)
	}
}

func TestPolicyAndRole(t *testing.T) {
	n := NamesFor("components", "demo-a")
	hcl := PolicyHCL(n)
	for _, want := range []string{
		`path "kv-sman-components.demo-a/data/sidecar/*"`,
		`capabilities = ["create", "read", "update", "delete", "patch"]`,
		`path "kv-sman-components.demo-a/metadata/sidecar/*"`,
	} {
		if !strings.Contains(hcl, want) {
			t.Errorf("policy lacks %s:\n%s", want, hcl)
		}
	}
	if strings.Contains(hcl, `"list"`) {
		t.Errorf("policy grants list:\n%s", hcl)
	}
	for _, tc := range []struct {
		name     string
		sel      Selector
		in       RoleInput
		wantSA   string
		wantAud  bool
		wantTTL  int
		wantNS   string
		wantPols string
	}{
		{"selector service account", Selector{ServiceAccount: "demo-a-*"}, RoleInput{Namespace: "components"}, "demo-a-*", false, 3600, "components", n.Policy},
		{"no service account: the default one, never any", Selector{Namespace: "*"}, RoleInput{Namespace: "components", Audience: "vault", TTLSeconds: 600}, "default", true, 600, "components", n.Policy},
	} {
		body := RoleBody(n, Spec{PodSelector: tc.sel}, tc.in)
		if got := body["bound_service_account_names"].([]string); len(got) != 1 || got[0] != tc.wantSA {
			t.Errorf("%s: names = %v", tc.name, got)
		}
		// The namespace is the SecretsManagement's, never the selector's
		// glob: `*` must not open the secrets to every namespace.
		if got := body["bound_service_account_namespaces"].([]string); len(got) != 1 || got[0] != tc.wantNS {
			t.Errorf("%s: namespaces = %v", tc.name, got)
		}
		if _, ok := body["audience"]; ok != tc.wantAud {
			t.Errorf("%s: audience present = %v", tc.name, ok)
		}
		if body["token_ttl"] != tc.wantTTL {
			t.Errorf("%s: ttl = %v", tc.name, body["token_ttl"])
		}
		if got := body["token_policies"].([]string); len(got) != 1 || got[0] != tc.wantPols {
			t.Errorf("%s: policies = %v", tc.name, got)
		}
	}
}

func loadPod(t testing.TB) (*corev1.Pod, []byte) {
	t.Helper()
	raw, err := os.ReadFile("testdata/pod.json")
	if err != nil {
		t.Fatal(err)
	}
	// The Canvas's capture has `creationTimestamp: {}`, which the typed
	// Pod refuses; an apiserver would send null.
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	delete(m["metadata"].(map[string]any), "creationTimestamp")
	raw, _ = json.Marshal(m)
	var pod corev1.Pod
	if err := json.Unmarshal(raw, &pod); err != nil {
		t.Fatal(err)
	}
	return &pod, raw
}

// TestSidecarPatchExamplePod applies the patch to the Canvas's example pod
// (the object of its AdmissionReview) the way the apiserver does and checks
// the result.
func TestSidecarPatchExamplePod(t *testing.T) {
	pod, raw := loadPod(t)
	n := NamesFor("components", "demo-a-productcatalogmanagement")
	spec := Spec{Type: TypeSideCar, PodSelector: Selector{Name: "demo-a-*"}, SidecarPort: 5000}
	if !Selects("demo-a-productcatalogmanagement", spec, PodInfoOf(pod)) {
		t.Fatal("the example pod is not selected")
	}
	cfg := SidecarConfig{VaultAddr: "https://vault.canvas-vault:8200", AuthPath: "kubernetes-sman"}
	ops := SidecarPatch(pod, n, spec, cfg)
	if len(ops) != 3 { // container + two volumes appended
		t.Fatalf("ops = %d, want 3: %+v", len(ops), ops)
	}
	patchJSON, _ := json.Marshal(ops)
	p, err := jsonpatch.DecodePatch(patchJSON)
	if err != nil {
		t.Fatal(err)
	}
	out, err := p.Apply(raw)
	if err != nil {
		t.Fatalf("apply patch: %v", err)
	}
	var got corev1.Pod
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Spec.Containers) != 3 || got.Spec.Containers[2].Name != SidecarName {
		t.Fatalf("containers = %v", PodInfoOf(&got).Containers)
	}
	if got.Spec.Containers[0].Name != "demo-a-prodcatapi" || got.Spec.Containers[1].Name != "istio-proxy" {
		t.Errorf("existing containers changed: %v", PodInfoOf(&got).Containers)
	}
	sc := got.Spec.Containers[2]
	env := map[string]string{}
	for _, e := range sc.Env {
		env[e.Name] = e.Value
	}
	wantEnv := map[string]string{
		"SECRETSMANAGEMENT_NAME": "components.demo-a-productcatalogmanagement",
		"VAULT_ADDR":             "https://vault.canvas-vault:8200",
		"VAULT_SKIP_VERIFY":      "false",
		"AUTH_PATH":              "kubernetes-sman",
		"LOGIN_ROLE":             "sman-components.demo-a-productcatalogmanagement-role",
		"SCRETS_MOUNT":           "kv-sman-components.demo-a-productcatalogmanagement",
		"SCRETS_BASE_PATH":       "sidecar",
	}
	if len(env) != len(wantEnv) {
		t.Errorf("env = %v", env)
	}
	for k, v := range wantEnv {
		if env[k] != v {
			t.Errorf("env %s = %q, want %q", k, env[k], v)
		}
	}
	if sc.Image != DefaultSidecarImage || sc.ImagePullPolicy != corev1.PullAlways {
		t.Errorf("image %s %s", sc.Image, sc.ImagePullPolicy)
	}
	if len(sc.Ports) != 1 || sc.Ports[0].ContainerPort != 5000 {
		t.Errorf("ports %+v", sc.Ports)
	}
	if s := sc.SecurityContext; s == nil || *s.AllowPrivilegeEscalation || !*s.RunAsNonRoot || s.Capabilities.Drop[0] != "ALL" {
		t.Errorf("securityContext %+v", sc.SecurityContext)
	}
	vols := map[string]corev1.Volume{}
	for _, v := range got.Spec.Volumes {
		vols[v.Name] = v
	}
	if len(got.Spec.Volumes) != len(pod.Spec.Volumes)+2 {
		t.Errorf("volumes %d, want %d", len(got.Spec.Volumes), len(pod.Spec.Volumes)+2)
	}
	if vols[VolumeTmp].EmptyDir == nil {
		t.Error("no tmp emptyDir")
	}
	proj := vols[VolumeKubeToken].Projected
	if proj == nil || len(proj.Sources) != 3 || *proj.Sources[0].ServiceAccountToken.ExpirationSeconds != 3607 {
		t.Fatalf("token volume %+v", vols[VolumeKubeToken])
	}
	// Injected once: the patched pod needs no second patch.
	if again := SidecarPatch(&got, n, spec, cfg); again != nil {
		t.Errorf("second patch = %+v, want none", again)
	}
}

func TestSidecarPatchShapes(t *testing.T) {
	n := NamesFor("ns", "c")
	spec := Spec{Type: TypeSideCar, SidecarPort: 7000}
	for _, tc := range []struct {
		name  string
		pod   corev1.Pod
		paths []string
	}{
		{"no volumes: create the list", corev1.Pod{Spec: corev1.PodSpec{ServiceAccountName: "sa", Containers: []corev1.Container{{Name: "app"}}}},
			[]string{"/spec/containers/-", "/spec/volumes"}},
		{"tmp volume exists: add only the token volume", corev1.Pod{Spec: corev1.PodSpec{ServiceAccountName: "sa", Containers: []corev1.Container{{Name: "app"}}, Volumes: []corev1.Volume{{Name: VolumeTmp}}}},
			[]string{"/spec/containers/-", "/spec/volumes/-"}},
		{"no service account: default, as the ServiceAccount plugin would", corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}}}},
			[]string{"/spec/containers/-", "/spec/serviceAccountName", "/spec/volumes"}},
		{"no containers (invalid pod, still a valid patch)", corev1.Pod{Spec: corev1.PodSpec{ServiceAccountName: "sa"}},
			[]string{"/spec/containers", "/spec/volumes"}},
		{"sidecar present: nothing", corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: SidecarName}}}}, nil},
	} {
		ops := SidecarPatch(&tc.pod, n, spec, SidecarConfig{PullPolicy: "IfNotPresent", VaultSkipVerify: true})
		var paths []string
		for _, op := range ops {
			if op.Op != "add" {
				t.Errorf("%s: op %s", tc.name, op.Op)
			}
			paths = append(paths, op.Path)
		}
		if strings.Join(paths, ",") != strings.Join(tc.paths, ",") {
			t.Errorf("%s: paths %v, want %v", tc.name, paths, tc.paths)
		}
	}
	c := SidecarContainer(n, spec, SidecarConfig{PullPolicy: "IfNotPresent", VaultSkipVerify: true})
	if c.ImagePullPolicy != "IfNotPresent" || c.Ports[0].ContainerPort != 7000 || c.Env[2].Value != "true" {
		t.Errorf("container %+v", c)
	}
}

// The Canvas's "-" join gave `team`/`x-billing` and `team-x`/`billing` one
// mount, policy and role; no namespace holds a ".", so these cannot meet.
func TestNamesNeverCollideAcrossNamespaces(t *testing.T) {
	pairs := [][2][2]string{
		{{"odacompns-team", "x-billing"}, {"odacompns-team-x", "billing"}},
		{{"team", "x"}, {"team", "x-"}},
	}
	for _, p := range pairs {
		n1, n2 := NamesFor(p[0][0], p[0][1]), NamesFor(p[1][0], p[1][1])
		if n1.Mount == n2.Mount || n1.Policy == n2.Policy || n1.Role == n2.Role {
			t.Errorf("%v and %v share Vault names: %+v", p[0], p[1], n1)
		}
	}
}
