package integration

// The real Istio and Gateway API CRDs that localstack.GatewayCRDs installs
// come from these modules; the imports keep them in go.mod.
import (
	_ "istio.io/api/networking/v1"
	_ "sigs.k8s.io/gateway-api/apis/v1"
)
