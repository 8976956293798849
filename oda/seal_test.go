package oda

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestSealVouchesOnlyForWhatOdaflowWrote(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	written := map[string]any{
		"apiStatus":      map[string]any{"url": "https://canvas.example/r1/tmf620", "ready": true, "port": int64(443)},
		"implementation": map[string]any{"ready": true},
		"conditions":     []any{map[string]any{"type": "Ready", "status": "True", "message": nil}},
	}
	seal := Seal(key, "uid-1", "100.7", written)
	// The object as the apiserver gives it back: JSON numbers, nulls
	// dropped, keys odaflow does not write beside its own.
	var stored map[string]any
	b, _ := json.Marshal(written)
	_ = json.Unmarshal(b, &stored)
	delete(stored["conditions"].([]any)[0].(map[string]any), "message")
	stored["someoneElses"] = "x"

	forged := func(f func(map[string]any)) map[string]any {
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		f(m)
		return m
	}
	tests := []struct {
		name     string
		key      []byte
		uid      string
		fence    string
		seal     string
		status   map[string]any
		fenceOK  bool
		statusOK bool
	}{
		{"odaflow's write, as stored", key, "uid-1", "100.7", seal, stored, true, true},
		{"a forged url", key, "uid-1", "100.7", seal, forged(func(m map[string]any) {
			m["apiStatus"].(map[string]any)["url"] = "http://169.254.169.254/latest/meta-data/iam/security-credentials/"
		}), true, false},
		{"a member added inside a written key", key, "uid-1", "100.7", seal, forged(func(m map[string]any) {
			m["apiStatus"].(map[string]any)["developerUI"] = "http://evil.example"
		}), true, false},
		{"a written key removed", key, "uid-1", "100.7", seal, forged(func(m map[string]any) { delete(m, "implementation") }), true, false},
		{"a maximal fence", key, "uid-1", "9223372036854775807.9223372036854775807", seal, stored, false, false},
		{"the seal of another object", key, "uid-2", "100.7", seal, stored, false, false},
		{"another key", []byte("another key, of a different canvas"), "uid-1", "100.7", seal, stored, false, false},
		{"no seal", key, "uid-1", "100.7", "", stored, false, false},
		{"a seal made up", key, "uid-1", "100.7", strings.Repeat("0", 32) + "." + strings.Repeat("0", 32) + `.["apiStatus"]`, stored, false, false},
		{"the key list changed", key, "uid-1", "100.7", strings.Replace(seal, `,"implementation"`, "", 1), stored, true, false},
		{"no fence", key, "uid-1", "", seal, stored, false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := SealVouchesFence(tc.key, tc.uid, tc.fence, tc.seal); got != tc.fenceOK {
				t.Errorf("SealVouchesFence = %v, want %v", got, tc.fenceOK)
			}
			if got := SealVouchesStatus(tc.key, tc.uid, tc.fence, tc.seal, tc.status); got != tc.statusOK {
				t.Errorf("SealVouchesStatus = %v, want %v", got, tc.statusOK)
			}
		})
	}
}

func TestBookkeepingAnnotationsAreNotUsers(t *testing.T) {
	for k, want := range map[string]bool{
		AnnotationObservedHash:      true,
		AnnotationStatusFence:       true,
		AnnotationStatusSeal:        true,
		AnnotationAdopt:             false,
		AnnotationRotateCredentials: false,
		AnnotationSkipCleanup:       false,
	} {
		if got := Bookkeeping(k); got != want {
			t.Errorf("Bookkeeping(%s) = %v, want %v", k, got, want)
		}
	}
	got := OdaflowAnnotations(map[string]string{AnnotationStatusSeal: "x", AnnotationStatusFence: "1.2", AnnotationAdopt: "true"})
	if len(got) != 1 || got[AnnotationAdopt] != "true" {
		t.Errorf("OdaflowAnnotations = %v, want only the adopt annotation", got)
	}
}

func TestSealedStatusKeepsOnlyWhatTheSealVouchesFor(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	// The last write left apiStatus out (the exposure failed): an earlier
	// apiStatus, or one a tenant wrote since, is not vouched for.
	written := map[string]any{"implementation": map[string]any{"ready": false}}
	seal := Seal(key, "uid-1", "1.9", written)
	onObject := map[string]any{
		"implementation": map[string]any{"ready": false},
		"apiStatus":      map[string]any{"url": "http://169.254.169.254/"},
	}
	got := SealedStatus(key, "uid-1", "1.9", seal, onObject)
	if len(got) != 1 || got["implementation"] == nil {
		t.Errorf("SealedStatus = %v, want the implementation key only", got)
	}
	onObject["implementation"] = map[string]any{"ready": true}
	if got := SealedStatus(key, "uid-1", "1.9", seal, onObject); got != nil {
		t.Errorf("SealedStatus of a forged status = %v, want nil", got)
	}
}

// SealedStatus is the part of a status that odaflow's last write set and
// its seal still vouches for: what a reader that must not trust a tenant
// (a DependentAPI resolving its provider's url) may use. A key an earlier
// write of odaflow's set and the last one left out (an ExposedAPI's
// apiStatus while its exposure fails) is not in it, nor is anything when
// the seal does not vouch for the status; nil then.
func SealedStatus(key []byte, uid, fence, seal string, status map[string]any) map[string]any {
	if !SealVouchesStatus(key, uid, fence, seal, status) {
		return nil
	}
	_, _, keysJSON, _ := splitSeal(seal)
	var keys []string
	_ = json.Unmarshal([]byte(keysJSON), &keys)
	out := make(map[string]any, len(keys))
	for _, k := range keys {
		if v, ok := status[k]; ok {
			out[k] = v
		}
	}
	return out
}
