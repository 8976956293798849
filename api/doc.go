// Package api holds Go types for the seven ODA Canvas kinds odaflow handles
// (Component, ExposedAPI, DependentAPI, IdentityConfig, SecretsManagement,
// PublishedNotification, SubscribedNotification) and the one decoder that
// reads them out of the unstructured objects the apiserver returns.
//
// The json tags are the Canvas's field names (the CRDs in
// charts/odaflow/files/crds). A type holds the fields odaflow reads; any
// other field is ignored, as the Canvas ignores it.
//
// Decode never stops at the first problem: it reads every field and returns
// one FieldError per bad field, each naming the field's full path
// (spec.coreFunction.exposedAPIs[0].port). It keeps the Canvas operators'
// leniency, because Helm charts render values loosely:
//   - a null or absent field is unset;
//   - an integer may be written as a decimal string ("8080"), and an empty
//     (or all-space) string is an unset integer;
//   - a Text field takes a number written unquoted (version: 4) as its text;
//   - a policy block that is switched off (enabled: false) is not read
//     further, so its other fields may hold anything.
//
// Everything here is a pure function of its input, so that workflows may
// call it.
package api
