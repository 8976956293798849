// Command gotestlog reads `go test -json` on stdin, keeps the whole output
// of the run in a log file (for the secrets scan and for reading after a
// failure) and prints what a plain `go test` prints: a line per package,
// and the full output of every failed test or package.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

// event is the part of test2json's output this tool reads.
type event struct {
	Action     string
	Package    string
	Test       string
	Output     string
	ImportPath string
}

func main() {
	out := flag.String("o", "", "write the whole output of the run here")
	flag.Parse()
	log := io.Discard
	if *out != "" {
		f, err := os.Create(*out)
		if err != nil {
			fmt.Fprintln(os.Stderr, "gotestlog:", err)
			os.Exit(2)
		}
		defer f.Close()
		log = f
	}
	if failed := summarize(os.Stdin, os.Stdout, log); failed {
		os.Exit(1)
	}
}

// summarize copies the run to log and a summary to w; it reports whether
// anything failed.
func summarize(r io.Reader, w, log io.Writer) bool {
	// Output per package and per test, held until the outcome is known.
	held := map[string]*strings.Builder{}
	hold := func(key, text string) {
		b := held[key]
		if b == nil {
			b = &strings.Builder{}
			held[key] = b
		}
		b.WriteString(text)
	}
	failed := false
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var ev event
		if err := json.Unmarshal(line, &ev); err != nil || ev.Action == "" {
			// Not test2json (a build error printed by go itself): pass it on.
			fmt.Fprintf(w, "%s\n", line)
			fmt.Fprintf(log, "%s\n", line)
			continue
		}
		pkg := ev.Package
		if pkg == "" {
			pkg = ev.ImportPath
		}
		key := pkg + " " + ev.Test
		switch ev.Action {
		case "output", "build-output":
			fmt.Fprint(log, ev.Output)
			hold(key, ev.Output)
			if ev.Test != "" {
				// A package that fails outside a test shows its tests too.
				hold(pkg+" ", "")
			}
		case "pass", "skip":
			if ev.Test == "" {
				if b := held[key]; b != nil {
					fmt.Fprint(w, lastLine(b.String()))
				}
			}
			delete(held, key)
		case "fail", "build-fail":
			failed = true
			if b := held[key]; b != nil {
				fmt.Fprint(w, b.String())
			}
			delete(held, key)
		}
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintln(w, "gotestlog: read:", err)
		return true
	}
	return failed
}

// lastLine is a passing package's summary line ("ok  pkg 1.2s").
func lastLine(s string) string {
	s = strings.TrimRight(s, "\n")
	if i := strings.LastIndex(s, "\n"); i >= 0 {
		s = s[i+1:]
	}
	return s + "\n"
}
