//go:build tools

// Package tools pins the Vault server the integration tests run as
// `vault server -dev` on loopback. Only this go.mod, go.sum and file are in
// the repository: Vault is built from the Go module proxy into a cache outside
// the clone by hack/tools.sh (Vault is BUSL-licensed; no source or binary of
// it is shipped here).
package tools

import _ "github.com/hashicorp/vault"
