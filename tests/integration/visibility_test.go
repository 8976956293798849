package integration

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"go.temporal.io/api/workflowservice/v1"

	"github.com/odaflow/odaflow/oda"
	"github.com/odaflow/odaflow/tests/fixtures"
)

// listWorkflows runs a visibility query and returns the workflow IDs.
func listWorkflows(t *testing.T, query string) []string {
	t.Helper()
	resp, err := stack.tc.ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{Namespace: "default", Query: query, PageSize: 100})
	if err != nil {
		t.Fatalf("list %q: %v", query, err)
	}
	var ids []string
	for _, e := range resp.GetExecutions() {
		ids = append(ids, e.GetExecution().GetWorkflowId())
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}

// waitListed waits until the query lists exactly want (visibility is
// eventually consistent).
func waitListed(t *testing.T, query string, want ...string) {
	t.Helper()
	slices.Sort(want)
	eventually(t, 20*time.Second, "visibility query "+query, func() (bool, string) {
		got := listWorkflows(t, query)
		return slices.Equal(got, want), fmt.Sprintf("listed %v, want %v", got, want)
	})
}

// TestSearchAttributesFollowTheLifecycle: the Web UI's filters answer
// "which components are broken" and "what is in this namespace" from the
// search attributes the watcher sets at start and the workflows keep
// current.
func TestSearchAttributesFollowTheLifecycle(t *testing.T) {
	ns := "it-visibility"
	createNamespace(t, ns)
	good, bad := "vis-good", "vis-bad"
	goodID, badID := oda.WorkflowID(oda.KindComponent.Name, ns, good), oda.WorkflowID(oda.KindComponent.Name, ns, bad)

	malformed := fixtures.WithOwnPaths(fixtures.ProductCatalog(ns, bad))
	// Past the CRD schema, refused by odaflow (see badinput_test.go).
	firstAPI(fixtures.Spec(malformed), "coreFunction")["port"] = int64(0)
	create(t, oda.KindComponent, malformed)
	create(t, oda.KindComponent, fixtures.WithOwnPaths(fixtures.WithoutDependentAPIs(fixtures.ProductCatalog(ns, good))))

	waitPhase(t, ns, bad, oda.StatusFailed, 30*time.Second)
	waitListed(t, fmt.Sprintf(`DeploymentStatus = "Failed" AND K8sNamespace = %q`, ns), badID)

	ensureIngress(t)
	setIngressAddress(t, "34.159.217.74")
	for _, svc := range []string{"ctk-prodcatapi", "ctk-promgmtapi", "ctk-productcatalogmanagement-sm", "ctk-partyroleapi"} {
		setEndpoints(t, ns, svc, true)
	}
	waitPhase(t, ns, good, oda.StatusComplete, 45*time.Second)

	waitListed(t, fmt.Sprintf(`DeploymentStatus = "Complete" AND K8sNamespace = %q`, ns), goodID)
	waitListed(t, fmt.Sprintf(`OdaKind = "Component" AND K8sNamespace = %q`, ns), badID, goodID)
	// The children carry their Component and their own phase.
	var exposed []string
	for _, name := range listChildren(t, oda.KindExposedAPI, ns, good) {
		exposed = append(exposed, oda.WorkflowID(oda.KindExposedAPI.Name, ns, name))
	}
	if len(exposed) != 4 {
		t.Fatalf("ExposedAPIs of %s = %v, want 4", good, exposed)
	}
	waitListed(t, fmt.Sprintf(`OdaComponent = %q AND OdaKind = "ExposedAPI" AND DeploymentStatus = "Exposed"`, good), exposed...)
	waitListed(t, fmt.Sprintf(`OdaComponent = %q AND OdaKind = "IdentityConfig" AND DeploymentStatus = "Ready"`, good),
		oda.WorkflowID(oda.KindIdentityConfig.Name, ns, good))

	// The Web UI's summary and details of the workflow.
	desc, err := stack.tc.DescribeWorkflow(context.Background(), goodID, "")
	if err != nil {
		t.Fatalf("describe %s: %v", goodID, err)
	}
	summary, _ := desc.GetStaticSummary()
	details, _ := desc.GetStaticDetails()
	if summary != "Component "+good+" in namespace "+ns {
		t.Errorf("static summary = %q", summary)
	}
	if !strings.Contains(details, "kubectl -n "+ns+" get component "+good) || !strings.Contains(details, "DeploymentStatus") {
		t.Errorf("static details = %q, want the kubectl command and the DeploymentStatus note", details)
	}
}
