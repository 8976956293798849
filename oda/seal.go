package oda

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"sort"
	"strings"
)

// AnnotationStatusSeal vouches, with a key only odaflow holds, for the
// status-fence annotation and for the status keys odaflow's last write set.
// The ODA CRDs have no status subresource: anyone who may update an object
// may write its status and annotations too. Without the seal, a tenant
// could write a status of its choice (a provider URL pointing anywhere) and
// a maximal fence, and odaflow would take its own later writes for stale
// ones and never correct the status. With it, odaflow defers only to a
// fence it wrote itself (SealVouchesFence), and the watcher notices a status
// that is not the one odaflow wrote (SealVouchesStatus) and has it written
// again.
//
// The value is "<fence MAC>.<status MAC>.<status keys, a JSON list>".
const AnnotationStatusSeal = AnnotationPrefix + "status-seal"

// macHexLen is how much of each HMAC-SHA256 the seal keeps: 128 bits, which
// no tenant guesses.
const macHexLen = 32

// Seal computes the seal of a status write: the fence it carries and the
// status keys it sets, on the object with this uid (a seal copied onto
// another object vouches for nothing there).
func Seal(key []byte, uid, fence string, status map[string]any) string {
	keys := make([]string, 0, len(status))
	for k := range status {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	keysJSON, _ := json.Marshal(keys)
	return fenceMAC(key, uid, fence) + "." + statusMAC(key, uid, fence, string(keysJSON), status) + "." + string(keysJSON)
}

// SealVouchesFence reports whether seal is the one odaflow wrote with this
// fence on this object. It does not look at the status: a fence is
// odaflow's even where someone changed the status since (that is
// SealVouchesStatus's question).
func SealVouchesFence(key []byte, uid, fence, seal string) bool {
	fm, _, _, ok := splitSeal(seal)
	return ok && fence != "" && hmac.Equal([]byte(fm), []byte(fenceMAC(key, uid, fence)))
}

// SealVouchesStatus reports whether the object's status holds, for every
// key odaflow's last write set, exactly what that write set, and whether
// its fence is the one that write carried. Keys odaflow did not write are
// not its business. A value counts alike whatever its JSON spelling (key
// order, 443 or 443.0) and a null member counts as an absent one, as the
// apiserver may store either.
func SealVouchesStatus(key []byte, uid, fence, seal string, status map[string]any) bool {
	fm, sm, keysJSON, ok := splitSeal(seal)
	if !ok || fence == "" || !hmac.Equal([]byte(fm), []byte(fenceMAC(key, uid, fence))) {
		return false
	}
	var keys []string
	if err := json.Unmarshal([]byte(keysJSON), &keys); err != nil {
		return false
	}
	written := make(map[string]any, len(keys))
	for _, k := range keys {
		written[k] = status[k]
	}
	return hmac.Equal([]byte(sm), []byte(statusMAC(key, uid, fence, keysJSON, written)))
}

func splitSeal(seal string) (fence, status, keysJSON string, ok bool) {
	parts := strings.SplitN(seal, ".", 3)
	if len(parts) != 3 || len(parts[0]) != macHexLen || len(parts[1]) != macHexLen {
		return "", "", "", false
	}
	return parts[0], parts[1], parts[2], true
}

func fenceMAC(key []byte, uid, fence string) string {
	return mac(key, "odaflow status fence", uid, fence)
}

func statusMAC(key []byte, uid, fence, keysJSON string, status map[string]any) string {
	values := make([]any, 0, len(status))
	var keys []string
	_ = json.Unmarshal([]byte(keysJSON), &keys)
	for _, k := range keys {
		values = append(values, canonical(status[k]))
	}
	b, _ := json.Marshal(values)
	return mac(key, "odaflow status", uid, fence, keysJSON, string(b))
}

// mac is HMAC-SHA256 over the parts, each ended by a NUL so that no two
// different lists of parts are hashed alike.
func mac(key []byte, parts ...string) string {
	h := hmac.New(sha256.New, key)
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))[:macHexLen]
}

// canonical is v as the apiserver gives it back: through JSON (numbers as
// float64, maps whatever their Go type), with null members of objects
// dropped.
func canonical(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		return nil
	}
	return dropNulls(out)
}

func dropNulls(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, x := range t {
			if x == nil {
				delete(t, k)
				continue
			}
			t[k] = dropNulls(x)
		}
	case []any:
		for i, x := range t {
			t[i] = dropNulls(x)
		}
	}
	return v
}
