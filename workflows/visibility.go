package workflows

import (
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// The custom search attributes odaflow keeps on its workflows, so that the
// Temporal Web UI and `temporal workflow list --query` read like the ODA
// lifecycle: `DeploymentStatus = "Failed"` lists every broken resource,
// `OdaComponent = "x"` everything a component is made of. The watcher sets
// the first three when it starts a workflow; the workflow keeps
// DeploymentStatus current. All are Keyword: exact-match values.
var (
	SearchAttrOdaComponent     = temporal.NewSearchAttributeKeyKeyword("OdaComponent")
	SearchAttrK8sNamespace     = temporal.NewSearchAttributeKeyKeyword("K8sNamespace")
	SearchAttrOdaKind          = temporal.NewSearchAttributeKeyKeyword("OdaKind")
	SearchAttrDeploymentStatus = temporal.NewSearchAttributeKeyKeyword("DeploymentStatus")
)

// SearchAttributeNames are the names above, which must be registered on the
// Temporal namespace (as Keyword) before a workflow can carry them.
var SearchAttributeNames = []string{
	SearchAttrOdaComponent.GetName(),
	SearchAttrK8sNamespace.GetName(),
	SearchAttrOdaKind.GetName(),
	SearchAttrDeploymentStatus.GetName(),
}

// SearchAttributeTypes maps each of SearchAttributeNames to its type, as a
// Temporal server takes them when it registers them (--search-attribute
// name=Keyword).
func SearchAttributeTypes() map[string]string {
	m := make(map[string]string, len(SearchAttributeNames))
	for _, name := range SearchAttributeNames {
		m[name] = "Keyword"
	}
	return m
}

// SearchAttributesInput is a workflow input that can ask its workflow to
// keep DeploymentStatus current. The watcher switches it on only when the
// attributes are registered: an upsert of an unknown attribute fails the
// workflow task.
type SearchAttributesInput interface {
	WithSearchAttributes(on bool) any
}

// visibility keeps a workflow's DeploymentStatus search attribute equal to
// the phase it last reported. A nil *visibility does nothing.
type visibility struct {
	on   bool
	last string
}

// newVisibility decides, once per run and before any other command, whether
// this run upserts search attributes. The decision rests on the input
// only, so a replay takes the same branch.
func newVisibility(ctx workflow.Context, on bool) *visibility {
	v := &visibility{}
	if !on {
		return v
	}
	v.on = true
	// Continue-As-New carries the attributes over: no need to write the
	// same value again in the new run.
	v.last, _ = workflow.GetTypedSearchAttributes(ctx).GetKeyword(SearchAttrDeploymentStatus)
	return v
}

// publish upserts DeploymentStatus when it changed; one history event per
// change of phase, none per reconcile.
func (v *visibility) publish(ctx workflow.Context, status string) {
	if v == nil || !v.on || status == "" || status == v.last {
		return
	}
	if err := workflow.UpsertTypedSearchAttributes(ctx, SearchAttrDeploymentStatus.ValueSet(status)); err != nil {
		// Only a programming error gets here (the SDK validates locally);
		// the lifecycle itself must not stop over a Web UI filter.
		workflow.GetLogger(ctx).Warn("could not upsert DeploymentStatus", "status", status, "err", err)
		return
	}
	v.last = status
}
