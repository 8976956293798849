package payloadcodec

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
)

func writeKey(t *testing.T, dir, id string, b64 bool) {
	t.Helper()
	key := make([]byte, keySize)
	if _, err := rand.Read(key); err != nil {
		t.Fatal(err)
	}
	data := key
	if b64 {
		data = []byte(base64.StdEncoding.EncodeToString(key) + "\n")
	}
	if err := os.WriteFile(filepath.Join(dir, id), data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// clock lets a test move past the recheck interval without sleeping.
func withClock(k *Keyring) *time.Time {
	now := time.Now()
	k.now = func() time.Time { return now }
	return &now
}

func plainPayload(t *testing.T, v any) *commonpb.Payload {
	t.Helper()
	p, err := converter.GetDefaultDataConverter().ToPayload(v)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

const secretSpec = "/tmf-api/productCatalogManagement/v4 r1-productcatalogmanagement"

func TestRoundTripHidesPlaintext(t *testing.T) {
	dir := t.TempDir()
	writeKey(t, dir, "k1", true)
	k, err := NewKeyring(dir, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	dc := Codec{Keys: k}.DataConverter()
	p, err := dc.ToPayload(map[string]string{"path": secretSpec})
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(p.Data, []byte("productCatalog")) || strings.Contains(p.String(), "productCatalog") {
		t.Fatalf("sealed payload holds the plaintext: %s", p)
	}
	if got := string(p.Metadata[MetadataEncoding]); got != EncodingEncrypted {
		t.Fatalf("encoding = %q", got)
	}
	if got := string(p.Metadata[MetadataKeyID]); got != "k1" {
		t.Fatalf("key id = %q", got)
	}
	var back map[string]string
	if err := dc.FromPayload(p, &back); err != nil {
		t.Fatal(err)
	}
	if back["path"] != secretSpec {
		t.Fatalf("round trip = %v", back)
	}
	// A random nonce per payload: the same value never seals the same way.
	p2, _ := dc.ToPayload(map[string]string{"path": secretSpec})
	if bytes.Equal(p.Data, p2.Data) {
		t.Fatal("two seals of one value are identical: the nonce is not random")
	}
}

func TestRotation(t *testing.T) {
	dir := t.TempDir()
	writeKey(t, dir, "2026-01-01", false) // raw bytes
	k, err := NewKeyring(dir, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	now := withClock(k)
	c := Codec{Keys: k}
	old, err := c.Encode([]*commonpb.Payload{plainPayload(t, "one")})
	if err != nil {
		t.Fatal(err)
	}

	// A new key file, lexically after the first, becomes the current key.
	writeKey(t, dir, "2026-06-01", true)
	*now = now.Add(2 * recheck)
	if got := k.CurrentID(); got != "2026-06-01" {
		t.Fatalf("current key after adding a file = %q", got)
	}
	fresh, err := c.Encode([]*commonpb.Payload{plainPayload(t, "two")})
	if err != nil {
		t.Fatal(err)
	}
	if got := string(fresh[0].Metadata[MetadataKeyID]); got != "2026-06-01" {
		t.Fatalf("sealed with %q", got)
	}
	for _, p := range append(old, fresh...) {
		if _, err := c.Decode([]*commonpb.Payload{p}); err != nil {
			t.Fatalf("decode %s: %v", p.Metadata[MetadataKeyID], err)
		}
	}

	// Removing the old key: its payloads fail with a clear error.
	if err := os.Remove(filepath.Join(dir, "2026-01-01")); err != nil {
		t.Fatal(err)
	}
	*now = now.Add(2 * recheck)
	_, err = c.Decode(old)
	if !errors.Is(err, ErrUnknownKey) || !strings.Contains(err.Error(), `"2026-01-01"`) {
		t.Fatalf("decode with a removed key: %v", err)
	}
	if _, err := c.Decode(fresh); err != nil {
		t.Fatal(err)
	}
}

func TestPinnedCurrentKey(t *testing.T) {
	dir := t.TempDir()
	writeKey(t, dir, "a", true)
	writeKey(t, dir, "b", true)
	k, err := NewKeyring(dir, "a", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := k.CurrentID(); got != "a" {
		t.Fatalf("current = %q, want the pinned a", got)
	}
	if _, err := NewKeyring(dir, "c", nil); err == nil || !strings.Contains(err.Error(), `"c"`) {
		t.Fatalf("a missing pinned key: %v", err)
	}
}

func TestBadKeyDirectories(t *testing.T) {
	empty := t.TempDir()
	if _, err := NewKeyring(empty, "", nil); err == nil {
		t.Fatal("an empty directory loaded")
	}
	short := t.TempDir()
	if err := os.WriteFile(filepath.Join(short, "k"), []byte("c2hvcnQ="), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := NewKeyring(short, "", nil); err == nil || !strings.Contains(err.Error(), "32") {
		t.Fatalf("a short key: %v", err)
	}
	if _, err := NewKeyring(filepath.Join(empty, "missing"), "", nil); err == nil {
		t.Fatal("a missing directory loaded")
	}
}

// A bad file added later keeps the keys loaded before.
func TestBadReloadKeepsKeys(t *testing.T) {
	dir := t.TempDir()
	writeKey(t, dir, "k1", true)
	k, err := NewKeyring(dir, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	now := withClock(k)
	if err := os.WriteFile(filepath.Join(dir, "k2"), []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	*now = now.Add(2 * recheck)
	if got := k.CurrentID(); got != "k1" {
		t.Fatalf("current = %q after a bad key file", got)
	}
}

// A Secret volume: keys behind ..data links, which are not keys themselves.
func TestSecretVolumeLayout(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "..2026_12_05_01")
	if err := os.Mkdir(data, 0o700); err != nil {
		t.Fatal(err)
	}
	writeKey(t, data, "k1", true)
	if err := os.Symlink("..2026_12_05_01", filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("..data/k1", filepath.Join(dir, "k1")); err != nil {
		t.Fatal(err)
	}
	k, err := NewKeyring(dir, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if ids := k.IDs(); len(ids) != 1 || ids[0] != "k1" {
		t.Fatalf("ids = %v", ids)
	}
}

func TestTamperedRefused(t *testing.T) {
	dir := t.TempDir()
	writeKey(t, dir, "k1", true)
	writeKey(t, dir, "k2", true)
	k, _ := NewKeyring(dir, "k1", nil)
	c := Codec{Keys: k}
	sealed, err := c.Encode([]*commonpb.Payload{plainPayload(t, secretSpec)})
	if err != nil {
		t.Fatal(err)
	}
	flipped := &commonpb.Payload{Metadata: sealed[0].Metadata, Data: bytes.Clone(sealed[0].Data)}
	flipped.Data[len(flipped.Data)/2] ^= 1
	if _, err := c.Decode([]*commonpb.Payload{flipped}); err == nil {
		t.Fatal("a flipped bit decoded")
	}
	relabelled := &commonpb.Payload{Metadata: map[string][]byte{MetadataEncoding: []byte(EncodingEncrypted), MetadataKeyID: []byte("k2")}, Data: sealed[0].Data}
	if _, err := c.Decode([]*commonpb.Payload{relabelled}); err == nil {
		t.Fatal("a payload relabelled to another key decoded")
	}
	short := &commonpb.Payload{Metadata: sealed[0].Metadata, Data: []byte{1, 2}}
	if _, err := c.Decode([]*commonpb.Payload{short}); err == nil {
		t.Fatal("a truncated payload decoded")
	}
	noID := &commonpb.Payload{Metadata: map[string][]byte{MetadataEncoding: []byte(EncodingEncrypted)}, Data: sealed[0].Data}
	if _, err := c.Decode([]*commonpb.Payload{noID}); err == nil {
		t.Fatal("a payload without a key id decoded")
	}
}

func TestUnencryptedPassesThrough(t *testing.T) {
	dir := t.TempDir()
	writeKey(t, dir, "k1", true)
	k, _ := NewKeyring(dir, "", nil)
	p := plainPayload(t, secretSpec)
	out, err := Codec{Keys: k}.Decode([]*commonpb.Payload{p})
	if err != nil {
		t.Fatal(err)
	}
	if out[0] != p {
		t.Fatalf("an unencrypted payload changed: %v", out[0])
	}
	var s string
	if err := (Codec{Keys: k}).DataConverter().FromPayload(p, &s); err != nil || s != secretSpec {
		t.Fatalf("old history payload reads %q, %v", s, err)
	}
}

// BenchmarkCodec seals and opens one payload the size of a Component spec
// (about 4 KiB of JSON).
func BenchmarkCodec(b *testing.B) {
	dir := b.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "k1"), bytes.Repeat([]byte{1}, keySize), 0o600); err != nil {
		b.Fatal(err)
	}
	k, err := NewKeyring(dir, "", nil)
	if err != nil {
		b.Fatal(err)
	}
	c := Codec{Keys: k}
	p, err := converter.GetDefaultDataConverter().ToPayload(map[string]string{"spec": strings.Repeat(secretSpec, 64)})
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(p.Data)))
	b.ReportAllocs()
	for b.Loop() {
		sealed, err := c.Encode([]*commonpb.Payload{p})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := c.Decode(sealed); err != nil {
			b.Fatal(err)
		}
	}
}
