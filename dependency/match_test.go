package dependency

import "testing"

const catalogSpec = "https://raw.githubusercontent.com/tmforum-apis/TMF620_ProductCatalog/master/TMF620-ProductCatalog-v4.0.0.swagger.json"

func provider(ns, name string, mods ...func(*Provider)) Provider {
	p := Provider{Namespace: ns, Name: name, Component: "r-cat-productcatalogmanagement", APIType: "openapi",
		SpecURLs: []string{catalogSpec}, Ready: true, URL: "https://10.0.0.1/" + ns + "/" + name}
	for _, m := range mods {
		m(&p)
	}
	return p
}

func TestMatch(t *testing.T) {
	req := Request{Namespace: "components", SpecURL: catalogSpec}
	tests := []struct {
		name      string
		req       Request
		providers []Provider
		want      string // namespace/name, "" for no match
	}{
		{"no providers", req, nil, ""},
		{"one ready provider", req, []Provider{provider("other", "a")}, "other/a"},
		{"not ready is no provider", req, []Provider{provider("components", "a", func(p *Provider) { p.Ready = false })}, ""},
		{"ready without a url is no provider", req, []Provider{provider("components", "a", func(p *Provider) { p.URL = "" })}, ""},
		{"other api types do not match", req, []Provider{provider("components", "a", func(p *Provider) { p.APIType = "prometheus" })}, ""},
		{"another specification does not match", req, []Provider{provider("components", "a", func(p *Provider) { p.SpecURLs = []string{"https://example.com/other.json"} })}, ""},
		{"blanks around the url are ignored", Request{Namespace: "components", SpecURL: " " + catalogSpec + "\n"}, []Provider{provider("x", "a")}, "x/a"},
		{"any of several specification urls", req, []Provider{provider("x", "a", func(p *Provider) { p.SpecURLs = []string{"https://e/1", catalogSpec} })}, "x/a"},
		{"own namespace first", req, []Provider{provider("aaa", "a"), provider("components", "z"), provider("b", "a")}, "components/z"},
		{"then namespace order", req, []Provider{provider("zz", "a"), provider("bb", "z"), provider("bb", "c")}, "bb/c"},
		{"order of input does not matter", req, []Provider{provider("bb", "c"), provider("bb", "z"), provider("zz", "a")}, "bb/c"},
		{"selector namespace narrows", Request{Namespace: "components", SpecURL: catalogSpec, Selector: Selector{Namespace: "zz"}},
			[]Provider{provider("components", "a"), provider("zz", "b")}, "zz/b"},
		{"selector namespace with no match", Request{Namespace: "components", SpecURL: catalogSpec, Selector: Selector{Namespace: "nowhere"}},
			[]Provider{provider("components", "a")}, ""},
		{"selector release name matches the component prefix", Request{Namespace: "c", SpecURL: catalogSpec, Selector: Selector{ReleaseName: "r-cat"}},
			[]Provider{provider("c", "a", func(p *Provider) { p.Component = "f-cat-productcatalogmanagement" }), provider("c", "b")}, "c/b"},
		{"release name is a whole prefix, not any prefix", Request{Namespace: "c", SpecURL: catalogSpec, Selector: Selector{ReleaseName: "r"}},
			[]Provider{provider("c", "a", func(p *Provider) { p.Component = "rx-cat" })}, ""},
		{"release name equal to the component", Request{Namespace: "c", SpecURL: catalogSpec, Selector: Selector{ReleaseName: "r-cat-productcatalogmanagement"}},
			[]Provider{provider("c", "a")}, "c/a"},
		{"zone is ignored", Request{Namespace: "c", SpecURL: catalogSpec, Selector: Selector{Zone: "eu"}}, []Provider{provider("c", "a")}, "c/a"},
		{"another component's api wins over its own", Request{Namespace: "c", Component: "f-cat-productcatalogmanagement", SpecURL: catalogSpec},
			[]Provider{provider("c", "a", func(p *Provider) { p.Component = "f-cat-productcatalogmanagement" }), provider("c", "b")}, "c/b"},
		{"another component's api wins over its own in any input order", Request{Namespace: "c", Component: "f-cat", SpecURL: catalogSpec},
			[]Provider{provider("c", "b"), provider("c", "a", func(p *Provider) { p.Component = "f-cat" })}, "c/b"},
		{"its own api alone is a match, as in the Canvas", Request{Namespace: "c", Component: "r-cat-productcatalogmanagement", SpecURL: catalogSpec},
			[]Provider{provider("c", "a")}, "c/a"},
		{"its own api in its namespace wins over another namespace's", Request{Namespace: "c", Component: "f-cat", SpecURL: catalogSpec},
			[]Provider{provider("a", "b"), provider("c", "a", func(p *Provider) { p.Component = "f-cat" })}, "c/a"},
		{"another component's api in its namespace wins over its own and another namespace's", Request{Namespace: "c", Component: "f-cat", SpecURL: catalogSpec},
			[]Provider{provider("a", "x"), provider("c", "a", func(p *Provider) { p.Component = "f-cat" }), provider("c", "z")}, "c/z"},
		{"a namesake component in another namespace is not its own", Request{Namespace: "c", Component: "f-cat", SpecURL: catalogSpec},
			[]Provider{provider("b", "y"), provider("a", "x", func(p *Provider) { p.Component = "f-cat" })}, "a/x"},
		{"its own api that is not ready is no match", Request{Namespace: "c", Component: "f-cat", SpecURL: catalogSpec},
			[]Provider{provider("c", "a", func(p *Provider) { p.Component = "f-cat"; p.Ready = false })}, ""},
		{"a selector can leave only its own api", Request{Namespace: "c", Component: "f-cat", SpecURL: catalogSpec, Selector: Selector{ReleaseName: "f-cat"}},
			[]Provider{provider("c", "b"), provider("c", "a", func(p *Provider) { p.Component = "f-cat" })}, "c/a"},
		{"a selector can exclude its own api", Request{Namespace: "c", Component: "f-cat", SpecURL: catalogSpec, Selector: Selector{Namespace: "z"}},
			[]Provider{provider("c", "a", func(p *Provider) { p.Component = "f-cat" })}, ""},
		{"two apis of its own: the first by name", Request{Namespace: "c", Component: "f-cat", SpecURL: catalogSpec},
			[]Provider{provider("c", "z", func(p *Provider) { p.Component = "f-cat" }), provider("c", "m", func(p *Provider) { p.Component = "f-cat" })}, "c/m"},
		{"a request without a component has no own api", Request{Namespace: "c", SpecURL: catalogSpec},
			[]Provider{provider("c", "b"), provider("c", "a", func(p *Provider) { p.Component = "" })}, "c/a"},
		{"an empty request matches nothing", Request{Namespace: "c"}, []Provider{provider("c", "a", func(p *Provider) { p.SpecURLs = []string{""} })}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := Match(tt.req, tt.providers)
			if tt.want == "" {
				if ok {
					t.Fatalf("matched %s, want no match", got.Key())
				}
				return
			}
			if !ok || got.Key() != tt.want {
				t.Fatalf("got %q (ok=%v), want %q", got.Key(), ok, tt.want)
			}
		})
	}
}

// TestMatchV0 keeps the ranking odaflow v0.1.0 resolved with, which
// histories of that release replay: another component's api in any
// namespace before the DependentAPI's own.
func TestMatchV0(t *testing.T) {
	req := Request{Namespace: "c", Component: "f-cat", SpecURL: catalogSpec}
	own := provider("c", "a", func(p *Provider) { p.Component = "f-cat" })
	tests := []struct {
		name      string
		providers []Provider
		want      string
	}{
		{"another component's api in another namespace wins over its own", []Provider{own, provider("z", "b")}, "z/b"},
		{"then its own namespace", []Provider{provider("a", "x"), provider("c", "z")}, "c/z"},
		{"its own alone", []Provider{own}, "c/a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, ok := MatchV0(req, tt.providers); !ok || got.Key() != tt.want {
				t.Fatalf("got %q (ok=%v), want %q", got.Key(), ok, tt.want)
			}
		})
	}
	if got, _ := Match(req, []Provider{own, provider("z", "b")}); got.Key() != "c/a" {
		t.Fatalf("Match ranks as MatchV0 did: %q, want its own namespace first", got.Key())
	}
}

func TestTrustReaches(t *testing.T) {
	req := Request{Namespace: "team-a", SpecURL: catalogSpec}
	named := req
	named.Selector.Namespace = "team-b"
	shared := Trust{SharedNamespaces: []string{"canvas-shared", "platform-*"}}
	tests := []struct {
		name  string
		trust Trust
		req   Request
		ns    string
		want  bool
	}{
		{"its own namespace", Trust{}, req, "team-a", true},
		{"another namespace is denied by default", Trust{}, req, "team-b", false},
		{"the namespace its selector names", Trust{}, named, "team-b", true},
		{"a selector naming one namespace reaches no third", Trust{}, named, "team-c", false},
		{"a selector naming another namespace still reaches its own", Trust{}, named, "team-a", true},
		{"a shared namespace", shared, req, "canvas-shared", true},
		{"a shared glob", shared, req, "platform-catalog", true},
		{"a namespace the globs do not name", shared, req, "team-b", false},
		{"a glob is whole-name", Trust{SharedNamespaces: []string{"platform"}}, req, "platform-x", false},
		{"no namespace is nowhere", shared, Request{SpecURL: catalogSpec}, "", false},
		{"a bad glob shares nothing", Trust{SharedNamespaces: []string{"["}}, req, "[", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.trust.Reaches(tt.req, tt.ns); got != tt.want {
				t.Fatalf("Reaches(%q) = %v, want %v", tt.ns, got, tt.want)
			}
		})
	}
}

func TestSpecURLsReadsEveryVersionsForm(t *testing.T) {
	tests := []struct {
		name string
		spec map[string]any
		want []string
	}{
		{"v1 object", map[string]any{"specification": map[string]any{"url": "u1", "version": "4"}}, []string{"u1"}},
		{"v1beta3 strings", map[string]any{"specification": []any{"u1", " u2 "}}, []string{"u1", "u2"}},
		{"v1beta4 objects", map[string]any{"specification": []any{map[string]any{"url": "u1"}, map[string]any{"url": "u2"}}}, []string{"u1", "u2"}},
		{"null", map[string]any{"specification": nil}, nil},
		{"missing", map[string]any{}, nil},
		{"wrong type", map[string]any{"specification": int64(3)}, nil},
		{"object without url", map[string]any{"specification": map[string]any{"version": "4"}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := SpecURLs(tt.spec)
			if len(got) != len(tt.want) {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Fatalf("got %q, want %q", got, tt.want)
				}
			}
		})
	}
}

func TestRequestOf(t *testing.T) {
	req, ok := RequestOf("ns", "comp", map[string]any{
		"specification": map[string]any{"url": catalogSpec},
		"selector":      map[string]any{"namespace": "prod", "releaseName": "r-cat", "zone": "z"},
	})
	if !ok || req.SpecURL != catalogSpec || req.Selector != (Selector{Namespace: "prod", ReleaseName: "r-cat", Zone: "z"}) || req.Namespace != "ns" || req.Component != "comp" {
		t.Fatalf("RequestOf = %+v, %v", req, ok)
	}
	if _, ok := RequestOf("ns", "comp", map[string]any{"name": "x"}); ok {
		t.Fatal("a DependentAPI without a specification url must not be matchable")
	}
}
