package testartifacts

import (
	"bytes"
	"encoding/base64"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Forms are the ways a secret value can show up in text: as itself, and as
// base64 at each of the three byte alignments it can have inside a longer
// encoded string (Temporal's JSON histories carry payloads as base64 of
// their JSON, so a leaked value sits at any offset of a payload), in the
// standard and the URL alphabets. Only the characters that encode the value
// alone are kept, so a form matches whatever surrounds the value.
func Forms(value string) []string {
	forms := []string{value}
	for k := 0; k < 3; k++ {
		b := append(make([]byte, k), value...)
		enc := base64.StdEncoding.EncodeToString(b)
		first := 4 * ((k + 2) / 3)
		last := 4 * (len(b) / 3)
		if last-first < MinSecretLength {
			continue
		}
		std := enc[first:last]
		forms = append(forms, std)
		if url := strings.NewReplacer("+", "-", "/", "_").Replace(std); url != std {
			forms = append(forms, url)
		}
	}
	return forms
}

// Hit is one secret found in one file.
type Hit struct {
	Label string
	File  string
	// Encoded tells whether the value was found base64-encoded.
	Encoded bool
}

// ScanStats says how much the scan covered, so that a scan over nothing
// cannot pass unnoticed.
type ScanStats struct {
	Files, Histories int
	Bytes            int64
}

// Scan searches every file under the roots for every form of every entry.
// The ledger itself is skipped. Values are never returned, only labels.
func Scan(entries []Entry, roots ...string) ([]Hit, ScanStats, error) {
	type needle struct {
		label   string
		form    []byte
		encoded bool
	}
	var needles []needle
	for _, e := range entries {
		for i, f := range Forms(e.Value) {
			needles = append(needles, needle{e.Label, []byte(f), i > 0})
		}
	}
	var hits []Hit
	var st ScanStats
	for _, root := range roots {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() || d.Name() == LedgerFile {
				return nil
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			st.Files++
			st.Bytes += int64(len(b))
			if strings.Contains(filepath.ToSlash(path), "/"+HistoriesDir+"/") && strings.HasSuffix(path, ".json") {
				st.Histories++
			}
			seen := map[string]bool{}
			for _, n := range needles {
				if !seen[n.label] && bytes.Contains(b, n.form) {
					seen[n.label] = true
					hits = append(hits, Hit{Label: n.label, File: path, Encoded: n.encoded})
				}
			}
			return nil
		})
		if err != nil {
			return hits, st, err
		}
	}
	return hits, st, nil
}
