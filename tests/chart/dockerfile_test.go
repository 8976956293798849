package chart

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/odaflow/odaflow/internal/localstack"
)

// dockerInstr is one Dockerfile instruction, continuation lines joined.
type dockerInstr struct {
	cmd, args string
	stage     int // index of the FROM it belongs to
}

func parseDockerfile(t *testing.T, path string) []dockerInstr {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []dockerInstr
	stage := -1
	var cur strings.Builder
	for _, line := range strings.Split(string(b), "\n") {
		trim := strings.TrimSpace(line)
		if cur.Len() == 0 && (trim == "" || strings.HasPrefix(trim, "#")) {
			continue
		}
		if strings.HasSuffix(trim, "\\") {
			cur.WriteString(strings.TrimSuffix(trim, "\\") + " ")
			continue
		}
		cur.WriteString(trim)
		full := cur.String()
		cur.Reset()
		cmd, args, _ := strings.Cut(full, " ")
		cmd = strings.ToUpper(cmd)
		if cmd == "FROM" {
			stage++
		}
		out = append(out, dockerInstr{cmd: cmd, args: strings.TrimSpace(args), stage: stage})
	}
	return out
}

// TestDockerfile checks the image recipe against the repository and the
// binary: every file it copies from the context exists, the build stage
// builds the odaflow command with the Go version of go.mod, the final image
// runs as a non-root user, and ENTRYPOINT/CMD name a real subcommand.
func TestDockerfile(t *testing.T) {
	root, err := localstack.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	instrs := parseDockerfile(t, filepath.Join(root, "Dockerfile"))
	last := 0
	for _, in := range instrs {
		last = max(last, in.stage)
	}
	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	goVersion := regexp.MustCompile(`(?m)^go (\S+)`).FindSubmatch(gomod)[1]

	var entrypoint, cmd []string
	user := ""
	overridden, labelled := false, false
	builtBinary := ""
	copiedToFinal := map[string]string{} // destination -> source in the build stage
	for _, in := range instrs {
		switch in.cmd {
		case "FROM":
			if in.stage == 0 && !strings.Contains(in.args, "golang:"+string(goVersion)) {
				t.Errorf("build stage %q is not golang:%s (go.mod)", in.args, goVersion)
			}
		case "COPY", "ADD":
			fields := strings.Fields(in.args)
			var srcs []string
			from := false
			for _, f := range fields {
				if strings.HasPrefix(f, "--from=") {
					from = true
				}
				if !strings.HasPrefix(f, "--") {
					srcs = append(srcs, f)
				}
			}
			if len(srcs) < 2 {
				t.Errorf("%s %s: no source and destination", in.cmd, in.args)
				continue
			}
			dst := srcs[len(srcs)-1]
			if from {
				if in.stage == last {
					copiedToFinal[dst] = srcs[0]
				}
				continue
			}
			for _, s := range srcs[:len(srcs)-1] {
				if _, err := os.Stat(filepath.Join(root, s)); err != nil {
					t.Errorf("%s %s: %s is not in the repository", in.cmd, in.args, s)
				}
			}
		case "RUN":
			if m := regexp.MustCompile(`go build .*-o (\S+) (\S+)`).FindStringSubmatch(in.args); m != nil {
				builtBinary = m[1]
				if st, err := os.Stat(filepath.Join(root, m[2])); err != nil || !st.IsDir() {
					t.Errorf("go build of %s: no such package folder", m[2])
				} else if m[2] != "./cmd/odaflow" {
					t.Errorf("the image builds %s, not ./cmd/odaflow", m[2])
				}
				overridden = strings.Contains(in.args, "-X main.")
			}
		case "LABEL":
			if in.stage == last && strings.Contains(in.args, `org.opencontainers.image.version="${VERSION}"`) {
				labelled = true
			}
		case "USER":
			if in.stage == last {
				user = in.args
			}
		case "ENTRYPOINT":
			if in.stage == last && json.Unmarshal([]byte(in.args), &entrypoint) != nil {
				t.Errorf("ENTRYPOINT %s is not exec form", in.args)
			}
		case "CMD":
			if in.stage == last && json.Unmarshal([]byte(in.args), &cmd) != nil {
				t.Errorf("CMD %s is not exec form", in.args)
			}
		}
	}
	if overridden {
		t.Error("go build sets a variable with -X: the version is the VERSION file the binary embeds, and nothing else")
	}
	if !labelled {
		t.Error(`the final stage has no LABEL org.opencontainers.image.version="${VERSION}"`)
	}
	uid, _, _ := strings.Cut(user, ":")
	if uid == "" || uid == "0" || uid == "root" {
		t.Errorf("the final image runs as %q; want a non-root USER", user)
	}
	if len(entrypoint) != 1 {
		t.Fatalf("ENTRYPOINT %v: want the odaflow binary alone", entrypoint)
	}
	if src := copiedToFinal[entrypoint[0]]; src == "" || src != builtBinary {
		t.Errorf("ENTRYPOINT %s is not the binary built at %s (copied: %v)", entrypoint[0], builtBinary, copiedToFinal)
	}
	if len(cmd) == 0 {
		t.Fatal("no CMD: the image would run odaflow without a subcommand")
	}
	checkArgs(t, "Dockerfile CMD", cmd[0], cmd[1:])
}
