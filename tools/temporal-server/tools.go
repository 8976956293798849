//go:build tools

// Package tools pins the Temporal server that tests/production runs as
// production runs it: the server binary (./cmd/server) backed by PostgreSQL,
// with its schemas applied by temporal-sql-tool (./cmd/tools/sql). It has a
// go.mod of its own because no server version can share one with the SDK the
// project uses (see README). hack/tools.sh builds both binaries from the Go
// module proxy into a cache outside the clone.
package tools

import (
	_ "go.temporal.io/server/cmd/server"
	_ "go.temporal.io/server/cmd/tools/sql"
)
