package vault

import (
	"context"
	"strings"
	"testing"

	vaultapi "github.com/hashicorp/vault/api"

	"github.com/odaflow/odaflow/activities"
	"github.com/odaflow/odaflow/oda"
	"github.com/odaflow/odaflow/secrets"
)

// TestTenantsNeverShareOrTakeAStore, on a real Vault: the pair the
// Canvas's "-" join gave one store get two; deleting one leaves the other's
// data; a mount under a store's name that records no owner is refused and
// outlives the SecretsManagement's deletion untouched; an empty service
// account selector binds `default`, not every service account.
func TestTenantsNeverShareOrTakeAStore(t *testing.T) {
	ctx := context.Background()
	root := vaultAs(t, strings.TrimSpace(mustRead(t, env.vaultSrv.TokenFile)))
	victim := activities.StoreInput{Namespace: "odacompns-team-x", Name: "billing", UID: "uid-victim", Spec: spec("billing")}
	attacker := activities.StoreInput{Namespace: "odacompns-team", Name: "x-billing", UID: "uid-attacker", Spec: spec("")}
	for _, in := range []activities.StoreInput{victim, attacker} {
		if _, err := env.vault.ConfigureStore(ctx, in); err != nil {
			t.Fatalf("configure %s/%s: %v", in.Namespace, in.Name, err)
		}
	}
	vn, an := secrets.NamesFor(victim.Namespace, victim.Name), secrets.NamesFor(attacker.Namespace, attacker.Name)
	if vn.Mount == an.Mount || vn.Policy == an.Policy || vn.Role == an.Role {
		t.Fatalf("the two stores share names: %+v %+v", vn, an)
	}
	secretPath := vn.Mount + "/data/" + secrets.BasePath + "/db"
	if _, err := root.Logical().WriteWithContext(ctx, secretPath, map[string]any{"data": map[string]any{"password": "victim"}}); err != nil {
		t.Fatal(err)
	}
	role, err := root.Logical().ReadWithContext(ctx, "auth/"+env.cfg.AuthPath+"/role/"+an.Role)
	if err != nil || role == nil {
		t.Fatalf("read role: %v", err)
	}
	if got, _ := role.Data["bound_service_account_names"].([]any); len(got) != 1 || got[0] != "default" {
		t.Errorf("an empty service-account selector binds %v, want [default]", got)
	}
	if _, err := env.vault.DeleteStore(ctx, activities.DeleteStoreInput{Namespace: attacker.Namespace, Name: attacker.Name}); err != nil {
		t.Fatal(err)
	}
	sec, err := root.Logical().ReadWithContext(ctx, secretPath)
	if err != nil || sec == nil || sec.Data["data"].(map[string]any)["password"] != "victim" {
		t.Fatalf("the victim's secret did not survive the other store's deletion: %v %v", sec, err)
	}

	// A mount made by hand under a store's name.
	hand := activities.StoreInput{Namespace: "components", Name: "handmade", UID: "uid-h", Spec: spec("default")}
	hn := secrets.NamesFor(hand.Namespace, hand.Name)
	if err := root.Sys().MountWithContext(ctx, hn.Mount, &vaultapi.MountInput{Type: "kv", Options: map[string]string{"version": "2"}, Description: "the platform team's"}); err != nil {
		t.Fatal(err)
	}
	handPath := hn.Mount + "/data/" + secrets.BasePath + "/k"
	_, err = root.Logical().WriteWithContext(ctx, handPath, map[string]any{"data": map[string]any{"v": "1"}})
	wrote := err == nil
	if !wrote {
		// A fresh kv-v2 mount may still be upgrading: the mount itself
		// is still checked below.
		t.Logf("write to the hand-made mount: %v", err)
	}
	_, err = env.vault.ConfigureStore(ctx, hand)
	if typ, nonRetryable := appErrType(t, err); typ != oda.ReasonOwnedElsewhere || !nonRetryable || !strings.Contains(err.Error(), hn.Mount) {
		t.Fatalf("configure over a hand-made mount: %v", err)
	}
	if p, _ := root.Sys().GetPolicyWithContext(ctx, hn.Policy); p != "" {
		t.Errorf("a policy was written for a mount that is not odaflow's: %s", p)
	}
	res, err := env.vault.DeleteStore(ctx, activities.DeleteStoreInput{Namespace: hand.Namespace, Name: hand.Name})
	if err != nil || res.Kept == "" {
		t.Fatalf("delete: %+v %v", res, err)
	}
	mounts, err := root.Sys().ListMountsWithContext(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if m, ok := mounts[hn.Mount+"/"]; !ok || m.Description != "the platform team's" {
		t.Errorf("the hand-made mount was removed or changed: %+v", m)
	}
	if wrote {
		sec, err := root.Logical().ReadWithContext(ctx, handPath)
		if err != nil || sec == nil || sec.Data["data"].(map[string]any)["v"] != "1" {
			t.Errorf("the hand-made mount's data did not survive: %v %v", sec, err)
		}
	}
}
