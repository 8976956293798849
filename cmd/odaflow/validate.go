package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/odaflow/odaflow/validate"
)

const validateUsage = `odaflow validate -f FILE [-f FILE...] [-n namespace] [-o text|json]

Checks Component manifests offline (no cluster, no Temporal): for each
Component in the multi-document YAML (a rendered chart, "-" for stdin) it
checks what the apiserver checks (the Component CRD's schema, unknown
fields, formats and CEL rules), then prints the children odaflow would
create and every problem with its field path. Render a chart first
(helm template). Exit status: 0 when every Component can complete, 1 when
the apiserver would refuse a Component or a problem would leave it (or one
of its children) Failed, 2 on unreadable input or no Component at all.
`

// runValidate is `odaflow validate`.
func runValidate(args []string) error {
	code := validateMain(args, os.Stdin, os.Stdout, os.Stderr)
	if code != 0 {
		return exitError(code)
	}
	return nil
}

// validateMain runs the command on the given streams and returns its exit
// status.
func validateMain(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("odaflow validate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, validateUsage); fs.PrintDefaults() }
	var files []string
	fs.Func("f", "a manifest file, - for stdin (repeatable)", func(s string) error {
		files = append(files, s)
		return nil
	})
	ns := fs.String("n", "", "namespace of objects without one (the namespace the chart is installed in); empty skips the checks that need it")
	out := fs.String("o", "text", "output: text or json")
	if err := fs.Parse(args); err != nil {
		return int(flagError(err))
	}
	files = append(files, fs.Args()...)
	if len(files) == 0 || (*out != "text" && *out != "json") {
		fs.Usage()
		return 2
	}
	type fileReport struct {
		File       string            `json:"file"`
		Components []validate.Report `json:"components"`
	}
	var all []fileReport
	for _, f := range files {
		data, err := readInput(f, stdin)
		if err != nil {
			fmt.Fprintf(stderr, "odaflow validate: %v\n", err)
			return 2
		}
		objs, err := validate.Decode(data)
		if err != nil {
			fmt.Fprintf(stderr, "odaflow validate: %s: %v\n", f, err)
			return 2
		}
		all = append(all, fileReport{File: f, Components: validate.Objects(objs, *ns)})
	}
	components, failed := 0, 0
	for _, fr := range all {
		for _, r := range fr.Components {
			components++
			if r.Failed() {
				failed++
			}
		}
	}
	if *out == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(all); err != nil {
			fmt.Fprintf(stderr, "odaflow validate: %v\n", err)
			return 2
		}
	} else {
		for _, fr := range all {
			for _, r := range fr.Components {
				printReport(stdout, fr.File, r)
			}
		}
	}
	switch {
	case components == 0:
		fmt.Fprintf(stderr, "odaflow validate: no ODA Component in %s\n", strings.Join(files, ", "))
		return 2
	case failed > 0:
		fmt.Fprintf(stderr, "odaflow validate: %d of %d Components would not complete\n", failed, components)
		return 1
	}
	return 0
}

func readInput(f string, stdin io.Reader) ([]byte, error) {
	if f == "-" {
		return io.ReadAll(stdin)
	}
	data, err := os.ReadFile(f)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%s: no such file", f)
	}
	return data, err
}

func printReport(w io.Writer, file string, r validate.Report) {
	verdict := "OK"
	if r.Failed() {
		verdict = "FAILS"
	}
	ns := r.Namespace
	if ns == "" {
		ns = "(namespace not given)"
	}
	fmt.Fprintf(w, "%s: Component %s/%s (%s, document %d): %s\n", file, ns, r.Name, r.APIVersion, r.Document, verdict)
	if len(r.Children) > 0 {
		fmt.Fprintf(w, "  children (%d):\n", len(r.Children))
		for _, c := range r.Children {
			fmt.Fprintf(w, "    %-22s %s\n", c.Kind, c.Name)
		}
	}
	for _, p := range r.Problems {
		fmt.Fprintf(w, "  %s: %s: %s\n", p.Severity, p.Path, p.Message)
	}
}
