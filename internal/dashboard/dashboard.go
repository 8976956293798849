// Package dashboard reads a Grafana dashboard: the PromQL of its panels and
// variables, and the metric names each expression selects. The chart's
// dashboard is checked with it against the metrics a running worker and
// watcher serve.
package dashboard

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// Query is one PromQL expression of a dashboard and where it is.
type Query struct {
	Where string // panel title (or variable name) and refId
	Expr  string
}

type panel struct {
	Title   string  `json:"title"`
	Panels  []panel `json:"panels"`
	Targets []struct {
		RefID string `json:"refId"`
		Expr  string `json:"expr"`
	} `json:"targets"`
}

type board struct {
	Panels     []panel `json:"panels"`
	Templating struct {
		List []struct {
			Name  string          `json:"name"`
			Type  string          `json:"type"`
			Query json.RawMessage `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

// Queries returns every PromQL expression of a dashboard: the panels'
// targets (rows' nested panels included) and the query variables'
// label_values(metric, label) selectors.
func Queries(dashboardJSON []byte) ([]Query, error) {
	var b board
	if err := json.Unmarshal(dashboardJSON, &b); err != nil {
		return nil, fmt.Errorf("dashboard: %w", err)
	}
	var out []Query
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			for _, t := range p.Targets {
				if strings.TrimSpace(t.Expr) != "" {
					out = append(out, Query{Where: p.Title + "/" + t.RefID, Expr: t.Expr})
				}
			}
			walk(p.Panels)
		}
	}
	walk(b.Panels)
	for _, v := range b.Templating.List {
		if v.Type != "query" {
			continue
		}
		// The query is a string, or an object with a "query" string.
		var q string
		if err := json.Unmarshal(v.Query, &q); err != nil {
			var obj struct {
				Query string `json:"query"`
			}
			if err := json.Unmarshal(v.Query, &obj); err != nil {
				return nil, fmt.Errorf("variable %s: query is neither a string nor an object", v.Name)
			}
			q = obj.Query
		}
		inner, ok := strings.CutPrefix(strings.TrimSpace(q), "label_values(")
		if !ok {
			return nil, fmt.Errorf("variable %s: only label_values(metric, label) queries are read, got %q", v.Name, q)
		}
		// label_values(selector, label): the selector is what precedes the
		// last comma outside braces.
		depth, cut := 0, -1
		for i, r := range inner {
			switch r {
			case '{':
				depth++
			case '}':
				depth--
			case ',':
				if depth == 0 {
					cut = i
				}
			}
		}
		if cut < 0 {
			return nil, fmt.Errorf("variable %s: label_values without a metric: %q", v.Name, q)
		}
		out = append(out, Query{Where: "variable " + v.Name, Expr: inner[:cut]})
	}
	return out, nil
}

// keywords are PromQL words that are never metric names: operators, and
// the aggregations, which may stand before "by (...)" instead of "(". Any
// other word before "(" is a function.
var keywords = map[string]bool{
	"and": true, "or": true, "unless": true, "bool": true, "offset": true,
	"inf": true, "nan": true,
	"sum": true, "min": true, "max": true, "avg": true, "group": true, "stddev": true, "stdvar": true,
	"count": true, "count_values": true, "bottomk": true, "topk": true, "quantile": true,
	"limitk": true, "limit_ratio": true,
}

// groupings take a parenthesised list of label names.
var groupings = map[string]bool{
	"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true,
}

func isIdentStart(c byte) bool {
	return c == '_' || c == ':' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

func isIdentPart(c byte) bool { return isIdentStart(c) || (c >= '0' && c <= '9') }

// MetricNames returns, sorted and once each, the metric names a PromQL
// expression selects. It knows PromQL's lexical structure (strings, label
// matchers, ranges, durations, grouping lists, functions) without a full
// parser. Grafana variables ($var, ${var}, [$__rate_interval]) are taken as
// opaque. A selector by {__name__=...} is refused: its name cannot be
// checked.
func MetricNames(expr string) ([]string, error) {
	seen := map[string]bool{}
	i, n := 0, len(expr)
	// skipString moves past a quoted string starting at i.
	skipString := func() error {
		q := expr[i]
		for i++; i < n; i++ {
			if expr[i] == '\\' && q != '`' {
				i++
				continue
			}
			if expr[i] == q {
				i++
				return nil
			}
		}
		return fmt.Errorf("unterminated string in %q", expr)
	}
	// skipTo moves past the bracket matching open at i, skipping strings.
	skipTo := func(open, closing byte) error {
		depth := 0
		for i < n {
			switch expr[i] {
			case '"', '\'', '`':
				if err := skipString(); err != nil {
					return err
				}
				continue
			case open:
				depth++
			case closing:
				depth--
				if depth == 0 {
					i++
					return nil
				}
			}
			i++
		}
		return fmt.Errorf("unbalanced %c in %q", open, expr)
	}
	nextNonSpace := func(j int) byte {
		for ; j < n; j++ {
			if c := expr[j]; c != ' ' && c != '\t' && c != '\n' && c != '\r' {
				return c
			}
		}
		return 0
	}
	parens := 0
	for i < n {
		c := expr[i]
		switch {
		case c == '(' || c == ')':
			if c == '(' {
				parens++
			} else if parens--; parens < 0 {
				return nil, fmt.Errorf("unbalanced ) in %q", expr)
			}
			i++
		case c == '"' || c == '\'' || c == '`':
			if err := skipString(); err != nil {
				return nil, err
			}
		case c == '{':
			start := i
			if err := skipTo('{', '}'); err != nil {
				return nil, err
			}
			if strings.Contains(expr[start:i], "__name__") {
				return nil, fmt.Errorf("a selector by __name__ cannot be checked: %q", expr)
			}
		case c == '[':
			if err := skipTo('[', ']'); err != nil {
				return nil, err
			}
		case c == '#':
			for i < n && expr[i] != '\n' {
				i++
			}
		case c == '$':
			// A Grafana variable: $name or ${name...}.
			i++
			if i < n && expr[i] == '{' {
				if err := skipTo('{', '}'); err != nil {
					return nil, err
				}
				continue
			}
			for i < n && isIdentPart(expr[i]) {
				i++
			}
		case (c >= '0' && c <= '9') || c == '.':
			// A number or a duration (5m, 1h30m, 1e3, 0x1f).
			for i < n && (isIdentPart(expr[i]) || expr[i] == '.') {
				i++
			}
		case isIdentStart(c):
			start := i
			for i < n && isIdentPart(expr[i]) {
				i++
			}
			word := expr[start:i]
			next := nextNonSpace(i)
			switch {
			case groupings[strings.ToLower(word)]:
				if next == '(' {
					for expr[i] != '(' {
						i++
					}
					if err := skipTo('(', ')'); err != nil {
						return nil, err
					}
				}
			case keywords[strings.ToLower(word)]:
			case next == '(':
				// A function or an aggregation.
			default:
				seen[word] = true
			}
		default:
			i++
		}
	}
	if parens != 0 {
		return nil, fmt.Errorf("unbalanced ( in %q", expr)
	}
	names := make([]string, 0, len(seen))
	for name := range seen {
		names = append(names, name)
	}
	sort.Strings(names)
	return names, nil
}
