// Package helmtemplate renders a chart as `helm template` prints it, through
// the helm library in odaflow's go.mod (helm.sh/helm/v3: the chart loader,
// values.schema.json validation and the template engine the helm binary
// runs), so no test needs a helm binary. The chart tests render odaflow's
// own chart with it; tests/testkit renders the ODA Canvas test kit's charts.
package helmtemplate

import (
	"fmt"
	"os"
	"path"
	"sort"
	"strings"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/strvals"
	"sigs.k8s.io/yaml"
)

// Options are the `helm template` flags the tests use.
type Options struct {
	Release   string
	Namespace string
	// KubeVersion is --kube-version; empty is helm's client-only default.
	KubeVersion string
	// ValuesFile is --values; empty for none.
	ValuesFile string
	// Set holds --set flags, in order.
	Set []string
	// IncludeCRDs is --include-crds: the chart's crds/ folder first.
	IncludeCRDs bool
}

// Values merges the values file and --set flags as the helm command line
// does (the chart's own values.yaml is merged under them at render time).
func Values(o Options) (map[string]any, error) {
	vals := map[string]any{}
	if o.ValuesFile != "" {
		data, err := os.ReadFile(o.ValuesFile)
		if err != nil {
			return nil, fmt.Errorf("--values: %w", err)
		}
		if err := yaml.Unmarshal(data, &vals); err != nil {
			return nil, fmt.Errorf("--values %s: %w", o.ValuesFile, err)
		}
		if vals == nil {
			vals = map[string]any{}
		}
	}
	for _, set := range o.Set {
		if err := strvals.ParseInto(set, vals); err != nil {
			return nil, fmt.Errorf("--set %s: %w", set, err)
		}
	}
	return vals, nil
}

// Template renders the chart in dir and returns the multi-document YAML,
// each document under its "# Source:" comment. Templates that render to
// nothing, partials (_*.tpl, _*.yaml) and NOTES.txt are left out, as helm
// leaves them out of what it installs. The values are checked against the
// chart's values.schema.json first.
func Template(dir string, o Options) (string, error) {
	ch, err := loader.Load(dir)
	if err != nil {
		return "", fmt.Errorf("loading chart %s: %w", dir, err)
	}
	vals, err := Values(o)
	if err != nil {
		return "", err
	}
	caps := chartutil.DefaultCapabilities.Copy()
	if o.KubeVersion != "" {
		kv, err := chartutil.ParseKubeVersion(o.KubeVersion)
		if err != nil {
			return "", fmt.Errorf("--kube-version %s: %w", o.KubeVersion, err)
		}
		caps.KubeVersion = *kv
	}
	release := chartutil.ReleaseOptions{Name: o.Release, Namespace: o.Namespace, Revision: 1, IsInstall: true}
	renderVals, err := chartutil.ToRenderValues(ch, vals, release, caps)
	if err != nil {
		return "", fmt.Errorf("chart %s: %w", ch.Name(), err)
	}
	files, err := engine.Render(ch, renderVals)
	if err != nil {
		return "", fmt.Errorf("rendering chart %s: %w", ch.Name(), err)
	}
	var out strings.Builder
	if o.IncludeCRDs {
		for _, crd := range ch.CRDObjects() {
			fmt.Fprintf(&out, "---\n# Source: %s\n%s\n", crd.Filename, crd.File.Data)
		}
	}
	names := make([]string, 0, len(files))
	for name, content := range files {
		base := path.Base(name)
		if strings.HasPrefix(base, "_") || base == "NOTES.txt" || strings.TrimSpace(content) == "" {
			continue
		}
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		fmt.Fprintf(&out, "---\n# Source: %s\n%s\n", name, files[name])
	}
	return out.String(), nil
}
