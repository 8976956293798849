// Package payloadcodec encrypts what odaflow puts into Temporal: every
// payload (workflow inputs, results, signals, queries, memos, failure
// details) is sealed with AES-256-GCM before it leaves the process, so the
// history Temporal keeps at rest holds no Component spec in plain text. The
// keys come from a directory (a mounted Secret: one file per key, the file
// name is the key ID) and are read again when the files change, so a key
// added to the Secret is picked up without a restart.
package payloadcodec

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/proto"
)

const (
	// MetadataEncoding is the payload metadata key the SDK's converters
	// read; an encrypted payload carries EncodingEncrypted there.
	MetadataEncoding = converter.MetadataEncoding
	// EncodingEncrypted marks a payload this codec sealed.
	EncodingEncrypted = "binary/encrypted"
	// MetadataKeyID names the key that sealed the payload.
	MetadataKeyID = "encryption-key-id"

	keySize = 32 // AES-256
	// recheck bounds how often the key directory is looked at: a Secret
	// volume changes at most about once a minute (the kubelet's sync), and
	// a stat of a few files per encode would cost more than the seal.
	recheck = time.Second
)

// keyIDPattern is what a Secret data key may be, so every key of a mounted
// Secret is a valid ID and nothing else (the volume's ..data links) is.
var keyIDPattern = regexp.MustCompile(`^[A-Za-z0-9_-][A-Za-z0-9._-]*$`)

// ErrUnknownKey is returned when a payload was sealed with a key that is
// not in the key directory (removed too early, or another installation's).
var ErrUnknownKey = errors.New("payload encryption key not found")

// Keyring is the keys of a directory, read again when its files change.
type Keyring struct {
	dir     string
	current string // "" = the lexically last key ID
	log     *slog.Logger
	now     func() time.Time

	mu      sync.Mutex
	checked time.Time
	stamp   string
	keys    map[string]cipher.AEAD
	ids     []string
}

// NewKeyring loads the keys of dir now: a directory without a valid key, or
// without the key currentID (when given), fails here rather than at the
// first workflow. currentID "" seals with the lexically last key ID, so
// naming keys by date (2026-12-05) makes adding a file the whole rotation.
func NewKeyring(dir, currentID string, log *slog.Logger) (*Keyring, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	k := &Keyring{dir: dir, current: currentID, log: log, now: time.Now}
	if err := k.reload(); err != nil {
		return nil, err
	}
	return k, nil
}

// refresh reads the directory again when it changed, at most once per
// recheck. A directory that fails to read (a Secret volume mid-swap, a
// bad new key) keeps the keys loaded before: the failure is logged, and
// payloads keep being sealed and opened.
func (k *Keyring) refresh() {
	now := k.now()
	if now.Sub(k.checked) < recheck {
		return
	}
	k.checked = now
	stamp, err := dirStamp(k.dir)
	if err != nil || stamp == k.stamp {
		if err != nil {
			k.log.Warn("payload keys: cannot read the key directory; keeping the loaded keys", "dir", k.dir, "error", err)
		}
		return
	}
	if err := k.reloadLocked(); err != nil {
		k.log.Warn("payload keys: keeping the loaded keys", "dir", k.dir, "error", err)
		return
	}
	k.log.Info("payload keys reloaded", "dir", k.dir, "keys", strings.Join(k.ids, ","), "current", k.currentID())
}

func (k *Keyring) reload() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.checked = k.now()
	return k.reloadLocked()
}

func (k *Keyring) reloadLocked() error {
	stamp, err := dirStamp(k.dir)
	if err != nil {
		return fmt.Errorf("payload keys: %w", err)
	}
	keys := map[string]cipher.AEAD{}
	var ids []string
	entries, err := os.ReadDir(k.dir)
	if err != nil {
		return fmt.Errorf("payload keys: %w", err)
	}
	for _, e := range entries {
		id := e.Name()
		if !keyIDPattern.MatchString(id) {
			continue
		}
		path := filepath.Join(k.dir, id)
		st, err := os.Stat(path) // follows the Secret volume's symlinks
		if err != nil || st.IsDir() {
			continue
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("payload key %s: %w", id, err)
		}
		key, err := parseKey(raw)
		if err != nil {
			return fmt.Errorf("payload key %s: %w", id, err)
		}
		block, err := aes.NewCipher(key)
		if err != nil {
			return fmt.Errorf("payload key %s: %w", id, err)
		}
		gcm, err := cipher.NewGCM(block)
		if err != nil {
			return fmt.Errorf("payload key %s: %w", id, err)
		}
		keys[id] = gcm
		ids = append(ids, id)
	}
	if len(ids) == 0 {
		return fmt.Errorf("payload keys: no key file in %s", k.dir)
	}
	sort.Strings(ids)
	if k.current != "" {
		if _, ok := keys[k.current]; !ok {
			return fmt.Errorf("payload keys: the current key %q is not in %s (keys: %s)", k.current, k.dir, strings.Join(ids, ", "))
		}
	}
	k.keys, k.ids, k.stamp = keys, ids, stamp
	return nil
}

// parseKey takes 32 raw bytes, or 32 bytes in standard or URL base64 (with
// or without padding; surrounding white space ignored).
func parseKey(raw []byte) ([]byte, error) {
	if len(raw) == keySize {
		return raw, nil
	}
	s := strings.TrimSpace(string(raw))
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil && len(b) == keySize {
			return b, nil
		}
	}
	return nil, fmt.Errorf("must be %d raw bytes or %d bytes in base64 (openssl rand -base64 32)", keySize, keySize)
}

// dirStamp identifies the directory's content cheaply: the name, size,
// modification time and link target of every entry. A Secret volume swaps
// its ..data link, which changes the targets.
func dirStamp(dir string) (string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, e := range entries {
		path := filepath.Join(dir, e.Name())
		if target, err := os.Readlink(path); err == nil {
			fmt.Fprintf(&b, "%s>%s;", e.Name(), target)
			continue
		}
		st, err := os.Stat(path)
		if err != nil {
			continue
		}
		fmt.Fprintf(&b, "%s:%d:%d;", e.Name(), st.Size(), st.ModTime().UnixNano())
	}
	return b.String(), nil
}

func (k *Keyring) currentID() string {
	if k.current != "" {
		return k.current
	}
	return k.ids[len(k.ids)-1]
}

// CurrentID is the key new payloads are sealed with.
func (k *Keyring) CurrentID() string {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.refresh()
	return k.currentID()
}

// IDs are the loaded key IDs, sorted.
func (k *Keyring) IDs() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.refresh()
	return append([]string(nil), k.ids...)
}

// sealer returns the current key, or the key id (current = false).
func (k *Keyring) key(id string) (string, cipher.AEAD, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.refresh()
	if id == "" {
		id = k.currentID()
	}
	aead, ok := k.keys[id]
	return id, aead, ok
}

// Codec is a converter.PayloadCodec sealing payloads with the keyring's
// current key and opening them with whichever key sealed them.
type Codec struct{ Keys *Keyring }

var _ converter.PayloadCodec = Codec{}

// Encode seals each payload: the whole payload (metadata and data,
// proto-encoded) is the plaintext, a random 12-byte nonce leads the
// ciphertext, and the key ID is authenticated data, so a payload cannot be
// relabelled to another key.
func (c Codec) Encode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	id, aead, ok := c.Keys.key("")
	if !ok {
		return nil, fmt.Errorf("%w: current key %q", ErrUnknownKey, id)
	}
	out := make([]*commonpb.Payload, len(payloads))
	for i, p := range payloads {
		plain, err := proto.Marshal(p)
		if err != nil {
			return nil, fmt.Errorf("encrypt payload: %w", err)
		}
		nonce := make([]byte, aead.NonceSize(), aead.NonceSize()+len(plain)+aead.Overhead())
		if _, err := rand.Read(nonce); err != nil {
			return nil, fmt.Errorf("encrypt payload: nonce: %w", err)
		}
		out[i] = &commonpb.Payload{
			Metadata: map[string][]byte{
				MetadataEncoding: []byte(EncodingEncrypted),
				MetadataKeyID:    []byte(id),
			},
			Data: aead.Seal(nonce, nonce, plain, []byte(id)),
		}
	}
	return out, nil
}

// Decode opens the payloads this codec sealed and passes every other
// payload through unchanged, so histories written before the codec was
// turned on still read.
func (c Codec) Decode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	out := make([]*commonpb.Payload, len(payloads))
	for i, p := range payloads {
		if string(p.GetMetadata()[MetadataEncoding]) != EncodingEncrypted {
			out[i] = p
			continue
		}
		id := string(p.GetMetadata()[MetadataKeyID])
		if id == "" {
			return nil, errors.New("decrypt payload: no " + MetadataKeyID + " in its metadata")
		}
		_, aead, ok := c.Keys.key(id)
		if !ok {
			return nil, fmt.Errorf("decrypt payload: %w: %q (keys present: %s)", ErrUnknownKey, id, strings.Join(c.Keys.IDs(), ", "))
		}
		data := p.GetData()
		if len(data) < aead.NonceSize()+aead.Overhead() {
			return nil, fmt.Errorf("decrypt payload with key %q: ciphertext too short", id)
		}
		plain, err := aead.Open(nil, data[:aead.NonceSize()], data[aead.NonceSize():], []byte(id))
		if err != nil {
			return nil, fmt.Errorf("decrypt payload with key %q: %w", id, err)
		}
		var orig commonpb.Payload
		if err := proto.Unmarshal(plain, &orig); err != nil {
			return nil, fmt.Errorf("decrypt payload with key %q: %w", id, err)
		}
		out[i] = &orig
	}
	return out, nil
}

// DataConverter is the SDK's default converter with this codec after it.
func (c Codec) DataConverter() converter.DataConverter {
	return converter.NewCodecDataConverter(converter.GetDefaultDataConverter(), c)
}
