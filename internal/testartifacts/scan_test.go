package testartifacts

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFormsFindAValueAtEveryBase64Alignment(t *testing.T) {
	secret := "s3cr3t-value-0123456789"
	for prefix := 0; prefix < 6; prefix++ {
		payload, _ := json.Marshal(map[string]string{"pad": string(make([]byte, prefix)), "clientSecret": secret})
		enc := base64.StdEncoding.EncodeToString(payload)
		found := false
		for _, f := range Forms(secret) {
			found = found || strings.Contains(enc, f)
		}
		if !found {
			t.Errorf("prefix %d: no form of the secret found in %s", prefix, enc)
		}
	}
}

func TestScanReportsLabelsNotValues(t *testing.T) {
	dir := t.TempDir()
	secret := "hunter2-but-longer"
	mustWrite(t, filepath.Join(dir, "logs", "worker.log"), `{"msg":"login","password":"`+secret+`"}`)
	payload := base64.StdEncoding.EncodeToString([]byte(`{"x":"` + secret + `"}`))
	mustWrite(t, filepath.Join(dir, HistoriesDir, "it", "wf.json"), `{"events":[{"payloads":[{"data":"`+payload+`"}]}]}`)
	mustWrite(t, filepath.Join(dir, HistoriesDir, "it", "clean.json"), `{"events":[]}`)
	mustWrite(t, filepath.Join(dir, LedgerFile), `{"label":"admin password","value":"`+secret+`"}`)

	hits, st, err := Scan([]Entry{{Label: "admin password", Value: secret}}, dir)
	if err != nil {
		t.Fatal(err)
	}
	if st.Files != 3 || st.Histories != 2 {
		t.Errorf("stats = %+v, want 3 files (the ledger skipped), 2 histories", st)
	}
	if len(hits) != 2 {
		t.Fatalf("hits = %+v, want the log (plain) and the history (base64)", hits)
	}
	for _, h := range hits {
		if h.Label != "admin password" {
			t.Errorf("hit label = %q", h.Label)
		}
		if wantEncoded := filepath.Base(h.File) == "wf.json"; h.Encoded != wantEncoded {
			t.Errorf("%s: encoded = %t, want %t", h.File, h.Encoded, wantEncoded)
		}
	}
}

func TestRegisterSecretWritesTheLedgerOnlyWhenCollecting(t *testing.T) {
	t.Setenv(EnvDir, "")
	if err := RegisterSecret("x", "long-enough-value"); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	t.Setenv(EnvDir, dir)
	if err := RegisterSecret("short", "abc"); err != nil {
		t.Fatal(err)
	}
	if err := RegisterSecret("token", "long-enough-value"); err != nil {
		t.Fatal(err)
	}
	got, err := ReadLedger(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0] != (Entry{Label: "token", Value: "long-enough-value"}) {
		t.Errorf("ledger = %+v, want only the long value", got)
	}
}

func mustWrite(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}
