package localstack

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// StatusKeyFile writes a new random status-seal key (--status-key-file)
// into dir, as the chart's generated Secret holds one, for a local stack's
// worker and watcher to share; a key dir already holds is kept, so that a
// persisted stack's seals stay valid across restarts. The key is a secret:
// callers keep it out of logs, and tests register it for the secrets scan.
func StatusKeyFile(dir string) (path, key string, err error) {
	path = filepath.Join(dir, "status-key")
	if b, err := os.ReadFile(path); err == nil && len(strings.TrimSpace(string(b))) >= 32 {
		return path, strings.TrimSpace(string(b)), nil
	}
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", "", fmt.Errorf("status key: %w", err)
	}
	key = hex.EncodeToString(b)
	if err := os.WriteFile(path, []byte(key+"\n"), 0o600); err != nil {
		return "", "", fmt.Errorf("status key: %w", err)
	}
	return path, key, nil
}
