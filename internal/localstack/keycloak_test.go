package localstack

import (
	"bytes"
	"slices"
	"strings"
	"testing"
)

func TestDefaultRelativePathFollowsTheCanvasSetUp(t *testing.T) {
	for version, want := range map[string]string{
		"20.0.5":  "/auth", // the Canvas's chart serves its Keycloak 20 under /auth
		"17.0.1":  "/auth",
		"21.1.2":  "",
		"25.0.6":  "",
		"26.7.3":  "",
		"":        "",
		"nightly": "",
	} {
		if got := DefaultRelativePath(version); got != want {
			t.Errorf("DefaultRelativePath(%q) = %q, want %q", version, got, want)
		}
	}
}

func TestKeycloakArgsAndEnvironment(t *testing.T) {
	args := keycloakArgs(28080, "/auth")
	want := []string{"start-dev", "--db=dev-mem", "--http-host=127.0.0.1", "--http-port=28080", "--http-relative-path=/auth"}
	if !slices.Equal(args, want) {
		t.Errorf("keycloakArgs = %v, want %v", args, want)
	}
	if args := keycloakArgs(28080, ""); slices.ContainsFunc(args, func(a string) bool { return strings.Contains(a, "relative-path") }) {
		t.Errorf("keycloakArgs without a path = %v", args)
	}
	// The password goes in the environment only, under both generations'
	// names, and no other variable of the caller's reaches the server.
	t.Setenv("KEYCLOAK_ADMIN_PASSWORD", "the caller's")
	env := keycloakEnv("/jdk", "/data", "admin", "s3cret")
	for _, kv := range []string{"KC_BOOTSTRAP_ADMIN_PASSWORD=s3cret", "KEYCLOAK_ADMIN_PASSWORD=s3cret", "KC_BOOTSTRAP_ADMIN_USERNAME=admin", "KEYCLOAK_ADMIN=admin", "JAVA_HOME=/jdk", "HOME=/data"} {
		if !slices.Contains(env, kv) {
			t.Errorf("environment lacks %s: %v", kv, env)
		}
	}
	if slices.Contains(env, "KEYCLOAK_ADMIN_PASSWORD=the caller's") || len(env) != 7 {
		t.Errorf("environment = %v, want exactly the server's seven variables", env)
	}
	for _, a := range args {
		if strings.Contains(a, "s3cret") {
			t.Errorf("the password is on the command line: %v", args)
		}
	}
}

func TestVersionOf(t *testing.T) {
	for in, want := range map[string]string{"Keycloak - Version 26.7.3\n": "26.7.3", "Keycloak - Version 20.0.5": "20.0.5", "": ""} {
		if got := versionOf(in); got != want {
			t.Errorf("versionOf(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestReplacerRedactsAcrossWrites(t *testing.T) {
	var out bytes.Buffer
	r := &replacer{w: &out, secret: []byte("kc-0123456789")}
	for _, chunk := range []string{"line one\nthe password kc-01", "23456789 was here\nunfinished kc-0123456789"} {
		if _, err := r.Write([]byte(chunk)); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := out.String(), "line one\nthe password [REDACTED] was here\n"; got != want {
		t.Errorf("written %q, want %q (the unterminated line held back)", got, want)
	}
}
