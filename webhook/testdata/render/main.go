// Command render turns the ODA Canvas example Component Helm templates into
// the plain YAML fixtures kept beside it in webhook/testdata.
//
// The templates live outside the repository (in the shared ODA Canvas
// checkout), so the rendered files are committed and this program is only run
// by hand when the upstream examples change:
//
//	go run webhook/testdata/render/main.go \
//	    -src /work/shared/oda-canvas/examples -out webhook/testdata
//
// The values are fixed so that the fixtures are reproducible.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"text/template"
)

// values mirrors the Helm values the Component chart passes to the template.
var values = map[string]any{
	"Release": map[string]any{"Name": "ctk"},
	"Values": map[string]any{
		"component": map[string]any{
			"name":            "productcatalogmanagement",
			"id":              "TMFC001",
			"functionalBlock": "CoreCommerce",
			"publicationDate": "2023-08-18",
			"version":         "1.0.0",
		},
		"security": map[string]any{"canvasSystemRole": "Admin"},
	},
}

func main() {
	src := flag.String("src", "/work/shared/oda-canvas/examples", "directory holding the example templates")
	out := flag.String("out", "webhook/testdata", "directory the rendered fixtures are written to")
	flag.Parse()

	for _, version := range []string{"v1beta3", "v1beta4", "v1"} {
		name := "component-productcatalog-" + version + ".yaml"
		if err := render(filepath.Join(*src, name), filepath.Join(*out, name)); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
}

func render(from, to string) error {
	text, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	tmpl, err := template.New(filepath.Base(from)).Option("missingkey=error").Parse(string(text))
	if err != nil {
		return fmt.Errorf("parse %s: %w", from, err)
	}
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "# Rendered from the ODA Canvas example %s by webhook/testdata/render. Do not edit.\n", filepath.Base(from))
	if err := tmpl.Execute(&buf, values); err != nil {
		return fmt.Errorf("render %s: %w", from, err)
	}
	return os.WriteFile(to, buf.Bytes(), 0o644)
}
