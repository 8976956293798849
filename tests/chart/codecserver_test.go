package chart

import (
	"slices"
	"strings"
	"testing"
)

// TestTemplatePayloadEncryption: the key Secret reaches the worker, the
// watcher and the codec server as --payload-keys-dir, and the codec server
// gets its token file, origins and namespaces.
func TestTemplatePayloadEncryption(t *testing.T) {
	objs := render(t, "odaflow", "canvas", "",
		"payloadEncryption.existingSecret=odaflow-payload-keys",
		"payloadEncryption.currentKeyID=2026-12-05",
		"payloadEncryption.codecServer.enabled=true",
		"payloadEncryption.codecServer.tokenSecret.existingSecret=odaflow-codec-tokens",
		"payloadEncryption.codecServer.corsOrigins[0]=https://temporal.example.com",
		"payloadEncryption.codecServer.tls.existingSecret=odaflow-codec-tls",
	)
	checkWorkloads(t, objs)
	for _, name := range []string{"odaflow-worker", "odaflow-watcher", "odaflow-codec-server"} {
		d := find(t, objs, "Deployment", name)
		c := container(t, d)
		args := argsOf(c)
		if !slices.Contains(args, "--payload-keys-dir=/var/run/secrets/odaflow/payload-keys") || !slices.Contains(args, "--payload-key-id=2026-12-05") {
			t.Errorf("%s args %v lack the payload keys", name, args)
		}
		mounted := false
		for _, m := range list(c["volumeMounts"]) {
			mounted = mounted || str(mapOf(m), "mountPath") == "/var/run/secrets/odaflow/payload-keys"
		}
		secret := false
		for _, v := range list(get(d, "spec", "template", "spec", "volumes")) {
			secret = secret || str(mapOf(v), "secret", "secretName") == "odaflow-payload-keys"
		}
		if !mounted || !secret {
			t.Errorf("%s does not mount the key Secret (mount %v, volume %v)", name, mounted, secret)
		}
	}
	codec := find(t, objs, "Deployment", "odaflow-codec-server")
	env := envOf(container(t, codec))
	for k, v := range map[string]string{
		"ODAFLOW_CODEC_TOKEN_FILE":    "/var/run/secrets/odaflow/codec-tokens/tokens",
		"ODAFLOW_CODEC_CORS_ORIGINS":  "https://temporal.example.com",
		"ODAFLOW_CODEC_NAMESPACES":    "default",
		"ODAFLOW_CODEC_TLS_CERT_FILE": "/var/run/secrets/odaflow/codec-tls/tls.crt",
	} {
		if env[k] != v {
			t.Errorf("codec server env %s = %q, want %q", k, env[k], v)
		}
	}
	if _, ok := env["ODAFLOW_CODEC_ALLOW_UNAUTHENTICATED"]; ok {
		t.Error("the codec server with a token Secret also allows unauthenticated requests")
	}
	if get(codec, "spec", "template", "spec", "automountServiceAccountToken") != false {
		t.Error("the codec server gets a service-account token it does not need")
	}
	find(t, objs, "Service", "odaflow-codec-server")

	// Off by default: no codec server, no key flag.
	def := render(t, "odaflow", "canvas", "")
	for _, o := range def {
		if strings.Contains(o.name(), "codec") {
			t.Errorf("the default install renders %s", o.id())
		}
	}
	if args := argsOf(container(t, find(t, def, "Deployment", "odaflow-worker"))); slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--payload-") }) {
		t.Errorf("default worker args %v encrypt payloads", args)
	}
}

func TestTemplatePayloadEncryptionRejects(t *testing.T) {
	for _, tc := range []struct {
		sets []string
		want string
	}{
		{[]string{"payloadEncryption.codecServer.enabled=true"}, "payloadEncryption.existingSecret (the key Secret) is required"},
		{[]string{"payloadEncryption.existingSecret=k", "payloadEncryption.codecServer.enabled=true"}, "needs tokenSecret.existingSecret"},
		{[]string{"payloadEncryption.existingSecret=k", "payloadEncryption.codecServer.enabled=true",
			"payloadEncryption.codecServer.allowUnauthenticated=true", "payloadEncryption.codecServer.tokenSecret.existingSecret=t"}, "exclude each other"},
		{[]string{"payloadEncryption.codecServer.corsOrigins[0]=https://ui.example.com/path"}, "at '/payloadEncryption/codecServer/corsOrigins/0'"},
		{[]string{"payloadEncryption.currentKeyID=../etc"}, "at '/payloadEncryption/currentKeyID'"},
	} {
		_, err := renderRaw(t, "odaflow", "canvas", "", tc.sets...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("--set %v: error %v, want one saying %q", tc.sets, err, tc.want)
		}
	}
}
