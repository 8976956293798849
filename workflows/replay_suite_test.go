package workflows

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"go.temporal.io/sdk/workflow"
)

// lockFile pins the workflow code the recorded histories were made with.
var lockFile = filepath.Join("testdata", "histories", "workflows.lock")

// recordingLock is what lockFile holds.
type recordingLock struct {
	// SourceHash is a hash of the workflow package's code without its
	// comments: a comment edit needs no new recording, any code edit does.
	SourceHash string `json:"sourceHash"`
	// ChangeIDs are the workflow.GetVersion change ids in the code.
	ChangeIDs []string `json:"changeIDs"`
}

// TestWorkflowCodeMatchesItsRecordings fails when the workflow code changed
// since the histories were recorded. Replaying the old recordings
// (TestReplayRecordedHistories) proves a change is compatible with running
// workflows, which needs workflow.GetVersion for any change in behaviour;
// recording afresh (`make record-histories`, which also rewrites the lock)
// puts the new behaviour itself under the replay suite. It also fails when
// a GetVersion change id the recordings depend on was removed.
func TestWorkflowCodeMatchesItsRecordings(t *testing.T) {
	current := currentLock(t)
	if os.Getenv("ODAFLOW_RECORD_HISTORIES") != "" {
		b, _ := json.MarshalIndent(current, "", "  ")
		if err := os.WriteFile(lockFile, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s", lockFile)
		return
	}
	b, err := os.ReadFile(lockFile)
	if err != nil {
		t.Fatalf("read %s: %v (run make record-histories)", lockFile, err)
	}
	var recorded recordingLock
	if err := json.Unmarshal(b, &recorded); err != nil {
		t.Fatalf("%s: %v", lockFile, err)
	}
	for _, id := range recorded.ChangeIDs {
		if !slices.Contains(current.ChangeIDs, id) {
			t.Errorf("the GetVersion change %q is gone from the workflow code: workflows that recorded it can no longer replay; keep it", id)
		}
	}
	if recorded.SourceHash != current.SourceHash {
		t.Errorf("%s", "the workflow code changed since the histories in testdata/histories were recorded.\n"+
			"Put any change in behaviour behind workflow.GetVersion (TestReplayRecordedHistories must still pass on the old recordings),\n"+
			"then record the new behaviour: make record-histories (it rewrites "+lockFile+").")
	}
}

// currentLock hashes the package's non-test Go files without comments and
// collects the GetVersion change ids (string constants named change…).
func currentLock(t *testing.T) recordingLock {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(files)
	h := sha256.New()
	ids := []string{}
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0) // no comments
		if err != nil {
			t.Fatal(err)
		}
		h.Write([]byte(f + "\n"))
		if err := (&printer.Config{Mode: printer.RawFormat}).Fprint(h, fset, file); err != nil {
			t.Fatal(err)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			vs, ok := n.(*ast.ValueSpec)
			if !ok {
				return true
			}
			for i, name := range vs.Names {
				if strings.HasPrefix(name.Name, "change") && i < len(vs.Values) {
					if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
						v, _ := strconv.Unquote(lit.Value)
						ids = append(ids, v)
					}
				}
			}
			return true
		})
	}
	sort.Strings(ids)
	return recordingLock{SourceHash: hex.EncodeToString(h.Sum(nil)), ChangeIDs: ids}
}

// requiredScenarios are the recordings every workflow type must have: its
// main paths, each replayed in CI.
var requiredScenarios = map[string][]string{
	"ComponentWorkflow": {"component-install", "component-upgrade", "component-failure-recovery", "component-delete",
		"component-continue-as-new-first-run", "component-continue-as-new-continued-run"},
	"ExposedAPIWorkflow": {"exposedapi-lifecycle", "exposedapi-upgrade-delete",
		"exposedapi-continue-as-new-first-run", "exposedapi-continue-as-new-continued-run"},
	"IdentityConfigWorkflow": {"identityconfig-install", "identityconfig-rotate-delete",
		"identityconfig-continue-as-new-first-run", "identityconfig-continue-as-new-continued-run"},
	"DependentAPIWorkflow": {"dependentapi-lifecycle",
		"dependentapi-continue-as-new-first-run", "dependentapi-continue-as-new-continued-run"},
	"SecretsManagementWorkflow": {"secretsmanagement-lifecycle",
		"secretsmanagement-continue-as-new-first-run", "secretsmanagement-continue-as-new-continued-run"},
}

// TestEveryWorkflowTypeHasItsScenariosRecorded checks the suite covers
// every registered workflow type and each of its main scenarios, and that
// each file holds the workflow type its name says.
func TestEveryWorkflowTypeHasItsScenariosRecorded(t *testing.T) {
	registered := registeredWorkflowTypes(t)
	for _, wt := range registered {
		if _, ok := requiredScenarios[wt]; !ok {
			t.Errorf("workflow type %s has no scenarios listed for the replay suite", wt)
		}
	}
	for wt, scenarios := range requiredScenarios {
		for _, s := range scenarios {
			path := filepath.Join("testdata", "histories", s+".json")
			got, err := historyWorkflowType(path)
			if err != nil {
				t.Errorf("%s: scenario %s not recorded: %v (run make record-histories)", wt, s, err)
				continue
			}
			if got != wt {
				t.Errorf("%s holds a %s history, want %s", path, got, wt)
			}
		}
	}
}

func historyWorkflowType(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	var h struct {
		Events []struct {
			Attrs *struct {
				WorkflowType struct {
					Name string `json:"name"`
				} `json:"workflowType"`
			} `json:"workflowExecutionStartedEventAttributes"`
		} `json:"events"`
	}
	if err := json.Unmarshal(b, &h); err != nil {
		return "", err
	}
	if len(h.Events) == 0 || h.Events[0].Attrs == nil {
		return "", os.ErrNotExist
	}
	return h.Events[0].Attrs.WorkflowType.Name, nil
}

// typeRecorder is a WorkflowRegistry that only notes the names registered.
type typeRecorder struct{ names []string }

func (r *typeRecorder) RegisterWorkflow(w any) {
	name := runtime.FuncForPC(reflect.ValueOf(w).Pointer()).Name()
	r.names = append(r.names, name[strings.LastIndex(name, ".")+1:])
}

func (r *typeRecorder) RegisterWorkflowWithOptions(w any, o workflow.RegisterOptions) {
	if o.Name != "" {
		r.names = append(r.names, o.Name)
		return
	}
	r.RegisterWorkflow(w)
}

func (r *typeRecorder) RegisterDynamicWorkflow(any, workflow.DynamicRegisterOptions) {}

func registeredWorkflowTypes(t *testing.T) []string {
	t.Helper()
	r := &typeRecorder{}
	Register(r)
	if len(r.names) == 0 {
		t.Fatal("Register registered no workflow")
	}
	return r.names
}
