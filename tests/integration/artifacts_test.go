package integration

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/odaflow/odaflow/internal/doubles/keycloak"
	"github.com/odaflow/odaflow/internal/testartifacts"
)

// sensitiveKey matches the Secret data keys whose values are credentials
// (usernames and CA certificates are not).
var sensitiveKey = regexp.MustCompile(`(?i)(password|secret|token|key)$`)

// collectArtifacts runs after every test of the package, while the servers
// still run: it registers every secret value the run handled (the Keycloak
// admin password, every client secret and token the Keycloak double issued,
// the Vault root token, every credential held in a Kubernetes Secret) and
// dumps every workflow history and copies the servers' logs for the secrets
// scan at the end of `make test` (hack/secretscan). It does nothing unless
// the run collects artifacts.
func collectArtifacts(logDir string) error {
	if testartifacts.Dir() == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	register := func(label, value string) error { return testartifacts.RegisterSecret(label, value) }
	if err := register("Keycloak admin password", stack.keycloakPassword); err != nil {
		return err
	}
	for _, v := range keycloak.Issued() {
		if err := register("Keycloak client secret or token", v); err != nil {
			return err
		}
	}
	if stack.vault != nil {
		if err := register("Vault root token", stack.vault.RootToken()); err != nil {
			return err
		}
	}
	secrets, err := stack.core.CoreV1().Secrets("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list Secrets: %w", err)
	}
	for _, s := range secrets.Items {
		for k, v := range s.Data {
			if sensitiveKey.MatchString(k) {
				if err := register("Secret "+s.Namespace+"/"+s.Name+" "+k, string(v)); err != nil {
					return err
				}
			}
		}
	}
	n, err := testartifacts.DumpHistories(ctx, stack.tc, "integration")
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "integration: %d workflow histories kept for the secrets scan\n", n)
	return copyLogs(logDir, "integration")
}

// copyLogs copies the *.log files under dir (the servers' logs, never their
// data) into the artifacts' logs folder.
func copyLogs(dir, pkg string) error {
	dst, err := testartifacts.Subdir(testartifacts.LogsDir, pkg)
	if err != nil || dst == "" {
		return err
	}
	return filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(d.Name(), ".log") {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		return os.WriteFile(filepath.Join(dst, strings.ReplaceAll(rel, string(filepath.Separator), "_")), b, 0o644)
	})
}
