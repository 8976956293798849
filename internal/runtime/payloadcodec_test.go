package runtime

import (
	"bytes"
	"encoding/base64"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"go.temporal.io/sdk/temporal"

	"github.com/odaflow/odaflow/internal/config"
	"github.com/odaflow/odaflow/internal/payloadcodec"
)

func TestTemporalOptionsEncryptPayloadsAndFailures(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	plain, err := TemporalOptions(config.Common{TemporalAddress: "127.0.0.1:7233", TemporalNamespace: "default"}, log, nil)
	if err != nil {
		t.Fatal(err)
	}
	if plain.DataConverter != nil || plain.FailureConverter != nil {
		t.Fatal("the codec is on without --payload-keys-dir")
	}

	dir := t.TempDir()
	key := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32))
	if err := os.WriteFile(filepath.Join(dir, "k1"), []byte(key), 0o600); err != nil {
		t.Fatal(err)
	}
	opts, err := TemporalOptions(config.Common{TemporalAddress: "127.0.0.1:7233", TemporalNamespace: "default", PayloadKeysDir: dir}, log, nil)
	if err != nil {
		t.Fatal(err)
	}
	p, err := opts.DataConverter.ToPayload("spec: r1-productcatalog")
	if err != nil {
		t.Fatal(err)
	}
	if string(p.Metadata[payloadcodec.MetadataEncoding]) != payloadcodec.EncodingEncrypted || bytes.Contains(p.Data, []byte("productcatalog")) {
		t.Fatalf("payload not encrypted: %v", p)
	}
	f := opts.FailureConverter.ErrorToFailure(temporal.NewApplicationError("bad field r1-productcatalog", "Invalid"))
	if bytes.Contains([]byte(f.String()), []byte("productcatalog")) {
		t.Fatalf("failure message in plaintext: %v", f)
	}
	back := opts.FailureConverter.FailureToError(f)
	var appErr *temporal.ApplicationError
	if !errors.As(back, &appErr) || appErr.Message() != "bad field r1-productcatalog" {
		t.Fatalf("failure round trip = %v", back)
	}

	if _, err := TemporalOptions(config.Common{TemporalAddress: "127.0.0.1:7233", TemporalNamespace: "default", PayloadKeysDir: dir, PayloadKeyID: "nope"}, log, nil); err == nil {
		t.Fatal("a missing current key was accepted")
	}
}
