package localstack

import (
	"strings"
	"testing"
)

func TestOperatorPolicy(t *testing.T) {
	p := OperatorPolicyHCL("kubernetes-sman")
	for _, want := range []string{`path "sys/auth/kubernetes-sman"`, `"sudo"`, `path "auth/kubernetes-sman/role/sman-*"`, `path "sys/mounts/kv-sman-*"`} {
		if !strings.Contains(p, want) {
			t.Errorf("operator policy lacks %s", want)
		}
	}
	// It grants nothing on secret data.
	if strings.Contains(p, "/data/") || strings.Contains(p, `path "kv-sman-*"`) {
		t.Errorf("operator policy reaches secrets:\n%s", p)
	}
}
