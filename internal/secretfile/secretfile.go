// Package secretfile reads a credential from a file (a mounted Secret) and
// reads it again when the file changes: a Secret volume swaps a symlink to
// a new file, so a rotated credential is used without a restart.
package secretfile

import (
	"fmt"
	"os"
	"strings"
	"sync"
)

// File is one credential file. What is a credential is the caller's: what
// names it in errors.
type File struct {
	Path string
	What string

	mu    sync.Mutex
	stamp os.FileInfo
	value string
}

// Get returns the file's content without surrounding white space. While
// the file is missing, unreadable or empty (being replaced), the value read
// before stays in use; with none read yet, that is an error.
func (f *File) Get() (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	st, err := os.Stat(f.Path)
	if err != nil {
		if f.value != "" {
			return f.value, nil
		}
		return "", fmt.Errorf("%s: %w", f.What, err)
	}
	if f.stamp != nil && os.SameFile(st, f.stamp) && st.Size() == f.stamp.Size() && st.ModTime().Equal(f.stamp.ModTime()) {
		return f.value, nil
	}
	b, err := os.ReadFile(f.Path)
	if err != nil {
		if f.value != "" {
			return f.value, nil
		}
		return "", fmt.Errorf("%s: %w", f.What, err)
	}
	v := strings.TrimSpace(string(b))
	if v == "" {
		if f.value != "" {
			return f.value, nil
		}
		return "", fmt.Errorf("%s: %s is empty", f.What, f.Path)
	}
	f.value, f.stamp = v, st
	return v, nil
}
