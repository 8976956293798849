// Package gateway holds the pure decisions of API exposure: the gateway
// objects an ExposedAPI needs, and its URL from the ingress.
//
// It re-implements the desired state of the Canvas API operators
// (oda-behaviour §2.2): the Istio operator (VirtualService, ServiceMonitor),
// the Kong operator (HTTPRoute, ReferenceGrant, KongPlugins, or Kong Admin
// API entities for kong-admin) and the APISIX operator (ApisixRoute,
// ApisixPluginConfig). Nothing here does I/O: the callers fetch (the ingress
// Service, a policy template) and apply (server-side apply of the returned
// objects, deletion of the objects no longer desired). Objects are
// map[string]any with JSON-compatible values only (string, int64, bool,
// []any, map[string]any), so they can be wrapped in
// unstructured.Unstructured as they are.
//
// Deliberate differences from the Python operators (§5.2):
//   - every spec field is re-applied on every reconcile, not only name, path,
//     port and implementation;
//   - a disabled policy is absent from the desired set, so the caller deletes
//     its plugin (the Canvas left it in place);
//   - a missing or non-numeric rate limit is an error naming the field, the
//     rate-limit interval is honoured on Kong, and absent CORS fields get
//     their defaults instead of crashing;
//   - the Kong parent Gateway, the backend Service and the namespaces that
//     the Canvas hard-codes are configuration;
//   - metrics APIs get their ServiceMonitor under every gateway (the Canvas
//     Kong operator never created one);
//   - APISIX gets no oas-validation plugin, which open-source APISIX does not
//     have.
package gateway
