package workflows

import (
	"github.com/odaflow/odaflow/dependency"
	"github.com/odaflow/odaflow/gateway"
)

// ProviderOf is an ExposedAPI as a DependentAPI may use it, computed the
// way its own lifecycle computes its status: the same exposure problems
// (an invalid spec, a refused host name, a lost path conflict make no
// provider), the same URL (gateway.APIStatus with the Canvas's gateway
// settings and the ingress address), ready when its implementation has a
// ready endpoint. exp is what the watcher reads from its caches for the
// ExposedAPI's own workflow.
//
// The ExposedAPI's status is not an input: these CRDs have no status
// subresource, so a tenant who may edit the ExposedAPI may write its
// status.apiStatus.url and implementation.ready too. statusReady, the
// status's implementation.ready, only withholds: it keeps a provider
// unready until odaflow has exposed it (and while the gateway refuses its
// objects), and a forged true makes nothing ready that is not.
func ProviderOf(namespace, name, component string, spec map[string]any, exp Exposure, cfg gateway.Config, statusReady bool) dependency.Provider {
	p := dependency.Provider{Namespace: namespace, Name: name, Component: component, SpecURLs: dependency.SpecURLs(spec)}
	parsed, err := gateway.ParseSpec(spec)
	if err != nil {
		return p
	}
	p.APIType = parsed.APIType
	if exposureProblem(spec, exp) != nil {
		return p
	}
	var in gateway.Ingress
	if exp.Ingress != nil {
		in = *exp.Ingress
	}
	status, addressed := gateway.APIStatus(cfg, gateway.API{Namespace: namespace, Name: name, Spec: spec}, parsed, in)
	if !addressed {
		return p
	}
	p.URL, _ = status["url"].(string)
	p.Ready = exp.ImplementationReady && statusReady
	return p
}
