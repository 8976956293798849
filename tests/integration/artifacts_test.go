package integration

import (
	"context"
	"fmt"
	"os"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/odaflow/odaflow/internal/doubles/keycloak"
	"github.com/odaflow/odaflow/internal/testartifacts"
)

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
	if realKC.kc != nil {
		if err := register("real Keycloak admin password", realKC.kc.AdminPassword()); err != nil {
			return err
		}
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
	if err := testartifacts.RegisterKubeSecrets(secrets.Items); err != nil {
		return err
	}
	n, err := testartifacts.DumpHistories(ctx, stack.tc, "integration")
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "integration: %d workflow histories kept for the secrets scan\n", n)
	return testartifacts.CopyLogs(logDir, "integration")
}
