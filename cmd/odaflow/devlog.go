package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// console is `odaflow dev`'s terminal: the banner, one line per lifecycle
// step and any error the worker or the watcher logs. Writers in several
// goroutines share it; each line is written whole.
type console struct {
	mu  sync.Mutex
	out io.Writer
}

func (c *console) Printf(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	fmt.Fprintf(c.out, format, args...)
}

// devLog is one process's log file in the data folder.
type devLog struct {
	Path string
	file *os.File
}

// openDevLog creates (or empties) dir/name.
func openDevLog(dir, name string) (*devLog, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	p := filepath.Join(dir, name)
	f, err := os.OpenFile(p, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open the log file %s: %w", p, err)
	}
	return &devLog{Path: p, file: f}, nil
}

func (l *devLog) Close() error { return l.file.Close() }

// handler writes the log as text (key=value, one record a line) at level,
// and each error record as one line on the console too, naming the file
// with the rest.
func (l *devLog) handler(level slog.Level, process string, c *console) slog.Handler {
	return &errorsToConsole{
		Handler: slog.NewTextHandler(l.file, &slog.HandlerOptions{Level: level}),
		process: process, path: l.Path, console: c,
	}
}

// errorsToConsole passes every record on and prints the error ones on the
// console, so a broken stack does not fail silently into a file.
type errorsToConsole struct {
	slog.Handler
	process, path string
	console       *console
}

func (h *errorsToConsole) Handle(ctx context.Context, r slog.Record) error {
	if r.Level >= slog.LevelError {
		h.console.Printf("%s error: %s (details in %s)\n", h.process, oneLine(r.Message), h.path)
	}
	return h.Handler.Handle(ctx, r)
}

func (h *errorsToConsole) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &errorsToConsole{Handler: h.Handler.WithAttrs(attrs), process: h.process, path: h.path, console: h.console}
}

func (h *errorsToConsole) WithGroup(name string) slog.Handler {
	return &errorsToConsole{Handler: h.Handler.WithGroup(name), process: h.process, path: h.path, console: h.console}
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 160 {
		s = s[:157] + "..."
	}
	return s
}

func parseLevel(s string) (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return 0, fmt.Errorf("--log-level %q must be debug, info, warn or error", s)
	}
	return l, nil
}
