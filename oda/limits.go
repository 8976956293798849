package oda

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/odaflow/odaflow/api"
)

// MaxExposedAPINameLength is the longest ExposedAPI name whose gateway
// objects can still be named: the longest derived name is the APISIX
// "combined-apisixpluginconfig-<name>" (28 more characters), and a
// Kubernetes object name has at most 253. A longer name would be accepted
// here and refused later by the gateway, leaving the Component waiting.
const MaxExposedAPINameLength = 253 - len("combined-apisixpluginconfig-")

// ExposedPathProblem says what is wrong with an ExposedAPI path as a public
// gateway prefix, or "" when nothing is. The gateways match paths as string
// prefixes, so "/" would claim every request of every component, and
// dot segments, empty segments or characters outside RFC 3986 either reach
// another component's prefix once normalised by the gateway or cannot be
// written in a URL at all.
func ExposedPathProblem(path string) string {
	switch {
	case path == "":
		return "is required"
	case !strings.HasPrefix(path, "/"):
		return fmt.Sprintf("must start with /, got %q", path)
	case strings.Trim(path, "/") == "":
		return fmt.Sprintf("%q would take every path on the gateway, other components' included; use the component's own prefix", path)
	}
	for i := 0; i < len(path); i++ {
		c := path[i]
		if c == '%' {
			if i+2 >= len(path) || !isHex(path[i+1]) || !isHex(path[i+2]) {
				return fmt.Sprintf("%q has a %% that is not a percent-encoded byte", path)
			}
			continue
		}
		if !isPathChar(c) {
			return fmt.Sprintf("%q has %q, which a URL path cannot hold unencoded (RFC 3986)", path, rune(c))
		}
	}
	for _, seg := range strings.Split(path[1:], "/") {
		switch strings.ToLower(seg) {
		case ".", "..", "%2e", "%2e%2e", ".%2e", "%2e.":
			return fmt.Sprintf("%q has a dot segment, which gateways resolve into another path", path)
		}
	}
	if strings.Contains(path, "//") {
		return fmt.Sprintf("%q has an empty segment (//)", path)
	}
	return ""
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// isPathChar is RFC 3986 pchar plus "/", without "%" (handled apart).
func isPathChar(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("-._~!$&'()*+,;=:@/", c) >= 0
}

// GatewayProblems finds the ExposedAPI children that a gateway could not
// serve safely: a name too long for the gateway objects named after it, a
// path that is not a component's own prefix (ExposedPathProblem) or that
// two of its APIs share, or an implementation that is not a Service name. The
// Component fails with these up front instead of leaving an ExposedAPI
// that fails later, or one that takes traffic meant for others.
func GatewayProblems(d Desired) api.FieldErrors {
	var errs api.FieldErrors
	paths := map[string]string{}
	for _, c := range d.ByKind(KindExposedAPI.Name) {
		what := fmt.Sprintf("ExposedAPI %s", c.Name)
		if len(c.Name) > MaxExposedAPINameLength {
			errs.Add(what, "name is %d characters; the gateway objects named after it allow at most %d", len(c.Name), MaxExposedAPINameLength)
		}
		path, _ := c.Spec["path"].(string)
		if p := ExposedPathProblem(path); p != "" {
			errs.Add(what+" path", "%s", p)
		} else if other, dup := paths[path]; dup {
			errs.Add(what+" path", "%q is also the path of ExposedAPI %s; a gateway routes a path to one API", path, other)
		} else {
			paths[path] = c.Name
		}
		// The implementation names the Service the gateway routes to (or
		// its DNS name); anything else would route nowhere, or elsewhere.
		impl, _ := c.Spec["implementation"].(string)
		if msgs := validation.IsDNS1123Subdomain(impl); len(msgs) > 0 {
			errs.Add(what+" implementation", "%q is not a Service name: %s", impl, strings.Join(msgs, ", "))
		}
	}
	return errs
}
