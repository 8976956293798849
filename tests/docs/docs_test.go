// Package docs holds the checks that keep the user documentation true to
// the tree: a doc that names a file, a make target or an odaflow command
// that does not exist fails the build, and so does a picture in docs/ that
// no page shows.
package docs

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/odaflow/odaflow/internal/localstack"
)

// page is one Markdown file of the user documentation.
type page struct {
	path string // relative to the repository root
	text string
}

func pages(t *testing.T, root string) []page {
	t.Helper()
	files := []string{"README.md", "CHANGELOG.md", "charts/odaflow/README.md"}
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range docs {
		rel, _ := filepath.Rel(root, d)
		files = append(files, rel)
	}
	var out []page
	for _, f := range files {
		raw, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, page{path: f, text: string(raw)})
	}
	return out
}

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := localstack.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

var (
	// A Markdown link or image: [text](target).
	linkRE = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	// A code span.
	codeRE = regexp.MustCompile("`([^`\n]+)`")
	// A fence line of a code block.
	fenceRE = regexp.MustCompile("^\\s*```")
	// A shell command's separators.
	separatorRE = regexp.MustCompile(`&&|\|\||[|;]`)
)

// commands are the shell commands a page shows: each code span and each
// line of a fenced sh block, split at && || | and ;, without a leading
// prompt or environment assignments. (An unlabelled block is output, such
// as a banner, not commands.)
func commands(text string) [][]string {
	var snippets []string
	for _, m := range codeRE.FindAllStringSubmatch(text, -1) {
		snippets = append(snippets, m[1])
	}
	inBlock, shell := false, false
	for _, line := range strings.Split(text, "\n") {
		if fenceRE.MatchString(line) {
			inBlock = !inBlock
			lang := strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(line), "`"))
			shell = inBlock && (lang == "sh" || lang == "bash" || lang == "shell" || lang == "console")
			continue
		}
		if shell {
			snippets = append(snippets, line)
		}
	}
	var out [][]string
	for _, s := range snippets {
		for _, part := range separatorRE.Split(s, -1) {
			words := strings.Fields(part)
			for len(words) > 0 && (words[0] == "$" || words[0] == "#" || strings.Contains(words[0], "=")) {
				words = words[1:]
			}
			if len(words) > 0 {
				out = append(out, words)
			}
		}
	}
	return out
}

// topLevel are the repository's own top-level folders and files, as git
// tracks them: a code span that starts with one of them names a path in the
// tree. Build outputs (bin/, .dev/) are git-ignored and so not among them.
func topLevel(t *testing.T, root string) []string {
	t.Helper()
	cmd := exec.Command("git", "ls-files")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	seen := map[string]bool{}
	var tops []string
	for _, f := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		top, rest, isDir := strings.Cut(f, "/")
		if isDir && rest != "" {
			top += "/"
		}
		if !seen[top] {
			seen[top] = true
			tops = append(tops, top)
		}
	}
	return tops
}

// TestDocsNameOnlyWhatExists: every relative link, every path in a code
// span, every `make` target and every `odaflow` command a page names
// exists.
func TestDocsNameOnlyWhatExists(t *testing.T) {
	root := repoRoot(t)
	tops := topLevel(t, root)
	targets := makeTargets(t, root)
	subcommands := odaflowCommands(t, root)
	checked := 0
	for _, p := range pages(t, root) {
		dir := filepath.Dir(p.path)
		for _, m := range linkRE.FindAllStringSubmatch(p.text, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "#") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			target, _, _ = strings.Cut(target, "#")
			checked++
			if _, err := os.Stat(filepath.Join(root, dir, target)); err != nil {
				t.Errorf("%s links to %s, which does not exist", p.path, m[1])
			}
		}
		for _, m := range codeRE.FindAllStringSubmatch(p.text, -1) {
			for _, word := range strings.Fields(m[1]) {
				if !namesRepoPath(word, tops) {
					continue
				}
				checked++
				path := strings.TrimRight(strings.TrimSuffix(word, "/..."), ".,:;")
				if matches, _ := filepath.Glob(filepath.Join(root, path)); len(matches) == 0 {
					t.Errorf("%s names %s, which is not in the tree", p.path, word)
				}
			}
		}
		for _, cmd := range commands(p.text) {
			switch filepath.Base(cmd[0]) {
			case "make":
				for _, target := range cmd[1:] {
					if strings.ContainsAny(target, "=-#") {
						break
					}
					checked++
					if !slices.Contains(targets, target) {
						t.Errorf("%s runs make %s, which the Makefile does not have", p.path, target)
					}
				}
			case "odaflow":
				if len(cmd) < 2 || strings.HasPrefix(cmd[1], "-") || strings.ContainsAny(cmd[1], "<[") {
					continue
				}
				checked++
				if !slices.Contains(subcommands, cmd[1]) {
					t.Errorf("%s runs odaflow %s, which is not a command (odaflow -h)", p.path, cmd[1])
				}
			}
		}
	}
	if checked < 50 {
		t.Fatalf("only %d names checked: the page walk is broken", checked)
	}
}

// namesRepoPath tells whether a word of a code span is a path in this
// repository: it starts with a top-level folder or file of the tree, and is
// not a placeholder, a URL or a path in some other tree.
func namesRepoPath(word string, tops []string) bool {
	if strings.ContainsAny(word, "<>{}$=") || strings.Contains(word, "://") {
		return false
	}
	word = strings.TrimPrefix(word, "./")
	for _, top := range tops {
		if strings.HasSuffix(top, "/") && strings.HasPrefix(word, top) && len(word) > len(top) {
			return true
		}
		if !strings.HasSuffix(top, "/") && strings.TrimRight(word, ".,:;") == top {
			return true
		}
	}
	return false
}

// makeTargets are the Makefile's rules.
func makeTargets(t *testing.T, root string) []string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range regexp.MustCompile(`(?m)^([a-z][a-z0-9-]*):`).FindAllStringSubmatch(string(raw), -1) {
		out = append(out, m[1])
	}
	return out
}

// odaflowCommands are the commands odaflow's usage lists.
func odaflowCommands(t *testing.T, root string) []string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(root, "cmd", "odaflow", "main.go"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range regexp.MustCompile(`(?m)^  odaflow ([a-z][a-z-]*)`).FindAllStringSubmatch(string(raw), -1) {
		out = append(out, m[1])
	}
	if len(out) < 5 {
		t.Fatalf("found %d commands in odaflow's usage: the parse is broken", len(out))
	}
	return out
}

// TestEveryPictureIsShown: each image in docs/ is shown by some page.
func TestEveryPictureIsShown(t *testing.T) {
	root := repoRoot(t)
	images, err := filepath.Glob(filepath.Join(root, "docs", "*.png"))
	if err != nil {
		t.Fatal(err)
	}
	all := ""
	for _, p := range pages(t, root) {
		all += p.text
	}
	for _, img := range images {
		if !strings.Contains(all, filepath.Base(img)+")") {
			t.Errorf("docs/%s is shown by no page", filepath.Base(img))
		}
	}
}
