package activities

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/Nerzal/gocloak/v13"
	"go.temporal.io/sdk/temporal"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"

	"github.com/odaflow/odaflow/identity"
	"github.com/odaflow/odaflow/oda"
)

// Error types of the identity activities; the workflow's Keycloak retry
// policy lists the non-retryable ones.
const (
	// ErrTypeKeycloakUnauthorized: Keycloak refused the admin credentials.
	// Retrying with the same Secret cannot help, and hammering the token
	// endpoint with a wrong password can lock the admin account (brute
	// force detection), so it never retries within the activity.
	ErrTypeKeycloakUnauthorized = "KeycloakUnauthorized"
	// ErrTypeKeycloakMisconfigured: the realm, the canvassystem client or
	// the admin Secret is missing, or the admin lacks permissions.
	ErrTypeKeycloakMisconfigured = "KeycloakMisconfigured"
	// ErrTypeKeycloakRejected: Keycloak refused a request for its content.
	ErrTypeKeycloakRejected = "KeycloakRejected"
	// ErrTypeKeycloakUnavailable: Keycloak is down, unreachable or answered
	// 5xx; retryable.
	ErrTypeKeycloakUnavailable = "KeycloakUnavailable"
	// ErrTypeOwnedElsewhere: the client or the credentials Secret the
	// IdentityConfig names belongs to another resource, or records no owner
	// and was not adopted. Not retried: the other tenant's object stays as
	// it is until its owner or an administrator acts.
	ErrTypeOwnedElsewhere = oda.ReasonOwnedElsewhere
)

// LabelManagedBy marks the Secrets odaflow writes, so that a cluster
// install can confine what it watches and an administrator can list them.
const (
	LabelManagedBy = "app.kubernetes.io/managed-by"
	ManagedByValue = "odaflow"
)

// AnnotationRotatedFor, on a credentials Secret, records the value of the
// IdentityConfig's rotate-credentials annotation that the current secret
// answers, so a retried or repeated activity rotates only once per request.
const AnnotationRotatedFor = oda.AnnotationPrefix + "rotated-for"

// KeycloakConfig says where Keycloak is and where its admin credentials
// are. The credentials themselves are read from the Secret inside each
// activity, so they never enter workflow inputs, results or history.
type KeycloakConfig struct {
	// URL is Keycloak's base URL (with /auth for Keycloak before 17 or a
	// legacy http-relative-path, as the Canvas's KEYCLOAK_BASE). When the
	// admin login answers 404 here, the same URL with /auth added (or
	// removed) is tried, and used if Keycloak answers there.
	URL string
	// Realm is where component clients live (the Canvas's `odari`).
	Realm string
	// AdminRealm is where the admin user logs in (default `master`).
	AdminRealm string
	// AdminSecretNamespace/AdminSecretName hold keys `username` and
	// `password`, or the Canvas's `KEYCLOAK_USER` and `KEYCLOAK_PASSWORD`
	// (AdminCredentials).
	AdminSecretNamespace string
	AdminSecretName      string
	// Timeout bounds each HTTP request (default 20 s).
	Timeout time.Duration
}

// Identity runs the identity step against Keycloak.
type Identity struct {
	Kube   *Kube
	Config KeycloakConfig
	// Hub configures the dynamic-role hub subscriptions (identity_hub.go);
	// zero leaves IdentityConfigs that declare hubs Failed with the reason.
	Hub HubConfig
	Log *slog.Logger

	// session is the admin login shared by the activities of this worker:
	// one token for many components instead of a Secret read and a login
	// per activity.
	session adminSession
}

// adminSession caches the admin client and token. It is trusted until the
// token is 15 s from expiry or the Secret was read a minute ago (so a
// changed admin password is picked up within a minute), and dropped when
// Keycloak answers 401 (a restarted Keycloak, a revoked session).
type adminSession struct {
	mu      sync.Mutex
	kc      *gocloak.GoCloak
	token   string
	validTo time.Time
}

func (s *adminSession) get(now time.Time) (*gocloak.GoCloak, string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.kc == nil || !now.Before(s.validTo) {
		return nil, "", false
	}
	return s.kc, s.token, true
}

func (s *adminSession) put(kc *gocloak.GoCloak, token string, validTo time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.kc, s.token, s.validTo = kc, token, validTo
}

func (s *adminSession) drop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.kc, s.token = nil, ""
}

// NewIdentity builds the identity activities.
func NewIdentity(kube *Kube, cfg KeycloakConfig, log *slog.Logger) *Identity {
	return &Identity{Kube: kube, Config: cfg, Log: log}
}

// EnsureIdentityInput is one IdentityConfig's desired Keycloak state.
type EnsureIdentityInput struct {
	Ref     oda.Ref          `json:"ref"`
	Desired identity.Desired `json:"desired"`
	// PreviousRoles are the roles the last successful run declared; they
	// are deleted when no longer declared even without odaflow's marker.
	PreviousRoles []string `json:"previousRoles,omitempty"`
	// UID is the IdentityConfig's uid, recorded on the client.
	UID string `json:"uid,omitempty"`
	// Adopt: the IdentityConfig asks to take over a client the Python
	// Canvas created for it (oda.AdoptRequested).
	Adopt bool `json:"adopt,omitempty"`
}

// EnsureIdentityResult says what had to change (nothing, on a run that
// found Keycloak as desired).
type EnsureIdentityResult struct {
	ClientUUID    string `json:"clientUuid"`
	ClientCreated bool   `json:"clientCreated,omitempty"`
	// Adopted: an existing client without an owner record was taken over
	// (oda.AnnotationAdopt) and now records this IdentityConfig.
	Adopted            bool     `json:"adopted,omitempty"`
	RolesCreated       []string `json:"rolesCreated,omitempty"`
	RolesDeleted       []string `json:"rolesDeleted,omitempty"`
	CanvasRoleCreated  bool     `json:"canvasRoleCreated,omitempty"`
	CanvasMappingAdded bool     `json:"canvasMappingAdded,omitempty"`
}

// Changed is true when the run had to repair or create something.
func (r EnsureIdentityResult) Changed() bool {
	return r.ClientCreated || len(r.RolesCreated) > 0 || len(r.RolesDeleted) > 0 || r.CanvasRoleCreated || r.CanvasMappingAdded
}

// EnsureIdentity makes Keycloak match one IdentityConfig (§2.3 steps 2-6,
// §5.3.2 and §5.3.4): the component client exists with service accounts;
// the canvasSystemRole and every componentRole exist on it; a role with the
// canvasSystemRole's name exists on the canvassystem client (what the BDD
// test checks); the canvassystem service account is really granted the
// component's canvasSystemRole; roles odaflow created that are no longer
// declared are deleted. Every step reads before it writes, so a run against
// a Keycloak already in the desired state makes no writes.
func (a *Identity) EnsureIdentity(ctx context.Context, in EnsureIdentityInput) (EnsureIdentityResult, error) {
	var res EnsureIdentityResult
	kc, token, err := a.login(ctx)
	if err != nil {
		return res, err
	}
	realm := a.Config.Realm
	d := in.Desired
	c, err := a.findClient(ctx, kc, token, d.ClientID)
	if err != nil {
		return res, err
	}
	if c == nil {
		_, err := kc.CreateClient(ctx, token, realm, gocloak.Client{
			ClientID:               gocloak.StringP(d.ClientID),
			ServiceAccountsEnabled: gocloak.BoolP(true),
			PublicClient:           gocloak.BoolP(false),
			Attributes:             ptrTo(clientAttributes(nil, in.owner())),
		})
		// 409: another run created it meanwhile; find it below.
		if err != nil && codeOf(err) != http.StatusConflict {
			return res, a.keycloakError("create client "+d.ClientID, err)
		}
		res.ClientCreated = err == nil
		if c, err = a.findClient(ctx, kc, token, d.ClientID); err != nil {
			return res, err
		}
		if c == nil {
			return res, temporal.NewApplicationError(fmt.Sprintf("Keycloak client %s was created but is not listed", d.ClientID), ErrTypeKeycloakUnavailable)
		}
	}
	// Checked after a create too: a 409 means another run created the
	// client, and that run may have been another tenant's.
	if res.Adopted, err = a.claimClient(ctx, kc, token, c, in.Ref, in.owner(), in.Adopt); err != nil {
		return res, err
	}
	res.ClientUUID = *c.ID

	existing, err := a.clientRoles(ctx, kc, token, *c.ID)
	if err != nil {
		return res, err
	}
	diff := identity.DiffRoles(d.Roles, existing, in.PreviousRoles)
	for _, r := range diff.Create {
		role := gocloak.Role{Name: gocloak.StringP(r.Name), Attributes: &map[string][]string{identity.ManagedAttribute: {identity.ManagedValue}}}
		if r.Description != "" {
			role.Description = gocloak.StringP(r.Description)
		}
		_, err := kc.CreateClientRole(ctx, token, realm, *c.ID, role)
		if err != nil && codeOf(err) != http.StatusConflict {
			return res, a.keycloakError(fmt.Sprintf("create role %s on client %s", r.Name, d.ClientID), err)
		}
		res.RolesCreated = append(res.RolesCreated, r.Name)
	}
	for _, name := range diff.Delete {
		err := kc.DeleteClientRole(ctx, token, realm, *c.ID, name)
		if err != nil && codeOf(err) != http.StatusNotFound {
			return res, a.keycloakError(fmt.Sprintf("delete role %s from client %s", name, d.ClientID), err)
		}
		res.RolesDeleted = append(res.RolesDeleted, name)
	}

	canvas, err := a.findClient(ctx, kc, token, identity.CanvasSystemClient)
	if err != nil {
		return res, err
	}
	if canvas == nil {
		return res, temporal.NewNonRetryableApplicationError(fmt.Sprintf("Keycloak realm %s has no %s client: install the Canvas's Keycloak prerequisites", realm, identity.CanvasSystemClient), ErrTypeKeycloakMisconfigured, nil)
	}
	if _, err := kc.GetClientRole(ctx, token, realm, *canvas.ID, d.CanvasSystemRole); codeOf(err) == http.StatusNotFound {
		_, err := kc.CreateClientRole(ctx, token, realm, *canvas.ID, gocloak.Role{Name: gocloak.StringP(d.CanvasSystemRole)})
		if err != nil && codeOf(err) != http.StatusConflict {
			return res, a.keycloakError(fmt.Sprintf("create role %s on client %s", d.CanvasSystemRole, identity.CanvasSystemClient), err)
		}
		res.CanvasRoleCreated = err == nil
	} else if err != nil {
		return res, a.keycloakError("read role "+d.CanvasSystemRole+" of client "+identity.CanvasSystemClient, err)
	}

	added, err := a.grantCanvasRole(ctx, kc, token, *canvas.ID, *c.ID, d)
	if err != nil {
		return res, err
	}
	res.CanvasMappingAdded = added
	return res, nil
}

// grantCanvasRole maps the component client's canvasSystemRole to the
// canvassystem service-account user, the real grant the Python operator
// never made (§5.3.2).
func (a *Identity) grantCanvasRole(ctx context.Context, kc *gocloak.GoCloak, token, canvasID, clientID string, d identity.Desired) (bool, error) {
	realm := a.Config.Realm
	sa, err := kc.GetClientServiceAccount(ctx, token, realm, canvasID)
	if err != nil {
		if codeOf(err) == http.StatusBadRequest {
			return false, temporal.NewNonRetryableApplicationError(fmt.Sprintf("the %s client has no service account: enable service accounts on it", identity.CanvasSystemClient), ErrTypeKeycloakMisconfigured, nil)
		}
		return false, a.keycloakError("read the "+identity.CanvasSystemClient+" service account", err)
	}
	mapped, err := kc.GetClientRolesByUserID(ctx, token, realm, clientID, *sa.ID)
	if err != nil {
		return false, a.keycloakError("read role mappings of "+gocloak.PString(sa.Username), err)
	}
	for _, r := range mapped {
		if gocloak.PString(r.Name) == d.CanvasSystemRole {
			return false, nil
		}
	}
	role, err := kc.GetClientRole(ctx, token, realm, clientID, d.CanvasSystemRole)
	if err != nil {
		return false, a.keycloakError(fmt.Sprintf("read role %s of client %s", d.CanvasSystemRole, d.ClientID), err)
	}
	if err := kc.AddClientRolesToUser(ctx, token, realm, clientID, *sa.ID, []gocloak.Role{*role}); err != nil {
		return false, a.keycloakError(fmt.Sprintf("grant role %s of client %s to %s", d.CanvasSystemRole, d.ClientID, gocloak.PString(sa.Username)), err)
	}
	return true, nil
}

// EnsureCredentialsInput names the IdentityConfig whose client credentials
// go to its Secret.
type EnsureCredentialsInput struct {
	Ref      oda.Ref `json:"ref"`
	UID      string  `json:"uid"`
	ClientID string  `json:"clientId"`
	// Rotate is the rotate-credentials annotation's value ("" for none).
	Rotate string `json:"rotate,omitempty"`
	// Fresh says this lifecycle has not provisioned the identity before:
	// with no rotation asked for, there is nothing in an existing Secret to
	// keep (odaflow's rotated-for annotation only follows a rotation), so
	// the Secret is applied without reading it first, one request instead
	// of two on every install.
	Fresh bool `json:"fresh,omitempty"`
	// Adopt: the IdentityConfig asks to take over an existing Secret of
	// its name that records no owner.
	Adopt bool `json:"adopt,omitempty"`
}

// EnsureCredentialsResult says what happened, never the secret itself.
type EnsureCredentialsResult struct {
	SecretName string `json:"secretName"`
	Written    bool   `json:"written,omitempty"`
	Rotated    bool   `json:"rotated,omitempty"`
}

// EnsureCredentials keeps the Secret `<identityconfig>-secret` (keys
// client_id and client_secret, owned by the IdentityConfig) equal to the
// client's credentials in Keycloak (§2.4, fixing §5.3.7: it updates rather
// than fails on an existing Secret, and rotates on request). A rotation
// regenerates the secret in Keycloak, then updates the Secret in place, so
// pods that mount it see the new value without a restart; the rotated-for
// annotation makes a repeated run rotate only once per request.
func (a *Identity) EnsureCredentials(ctx context.Context, in EnsureCredentialsInput) (EnsureCredentialsResult, error) {
	res := EnsureCredentialsResult{SecretName: identity.SecretName(in.Ref.Name)}
	kc, token, err := a.login(ctx)
	if err != nil {
		return res, err
	}
	c, err := a.findClient(ctx, kc, token, in.ClientID)
	if err != nil {
		return res, err
	}
	if c == nil {
		return res, temporal.NewApplicationError("Keycloak client "+in.ClientID+" does not exist yet", ErrTypeKeycloakUnavailable)
	}
	owner := oda.OwnerRecord{Namespace: in.Ref.Namespace, Name: in.Ref.Name, UID: in.UID}
	// Only a client that already records this IdentityConfig: its secret
	// is read or regenerated below. EnsureIdentity records the owner (or
	// adopts) first.
	if _, err := a.claimClient(ctx, kc, token, c, in.Ref, owner, false); err != nil {
		return res, err
	}
	secrets := a.Kube.Core.CoreV1().Secrets(in.Ref.Namespace)
	var current *corev1.Secret
	readCurrent := func() error {
		err := throughOutage(ctx, func() (err error) {
			current, err = secrets.Get(ctx, res.SecretName, metav1.GetOptions{})
			return err
		})
		if apierrors.IsNotFound(err) {
			current, err = nil, nil
		}
		if err != nil {
			return kubeError("read Secret "+in.Ref.Namespace+"/"+res.SecretName, err)
		}
		return nil
	}
	if !in.Fresh || in.Rotate != "" {
		if err := readCurrent(); err != nil {
			return res, err
		}
		if err := secretClaim(current, owner, in.Adopt); err != nil {
			return res, err
		}
	}
	handled := ""
	if current != nil {
		handled = current.Annotations[AnnotationRotatedFor]
	}
	var cred *gocloak.CredentialRepresentation
	if identity.RotationNeeded(in.Rotate, handled) {
		cred, err = kc.RegenerateClientSecret(ctx, token, a.Config.Realm, *c.ID)
		if err != nil {
			return res, a.keycloakError("regenerate the secret of client "+in.ClientID, err)
		}
		res.Rotated = true
	} else if cred, err = kc.GetClientSecret(ctx, token, a.Config.Realm, *c.ID); err != nil {
		return res, a.keycloakError("read the secret of client "+in.ClientID, err)
	}
	value := gocloak.PString(cred.Value)
	if value == "" {
		return res, temporal.NewNonRetryableApplicationError("Keycloak returned no secret for client "+in.ClientID+" (is it a public client?)", ErrTypeKeycloakRejected, nil)
	}
	rotatedFor := handled
	if res.Rotated {
		rotatedFor = in.Rotate
	}
	upToDate := func(current *corev1.Secret, rotatedFor, handled string) bool {
		return current != nil && string(current.Data["client_id"]) == in.ClientID &&
			subtle.ConstantTimeCompare(current.Data["client_secret"], []byte(value)) == 1 &&
			rotatedFor == handled && ownedBy(current.OwnerReferences, in.UID)
	}
	if upToDate(current, rotatedFor, handled) {
		return res, nil
	}
	ac := corev1ac.Secret(res.SecretName, in.Ref.Namespace).
		WithLabels(map[string]string{oda.LabelComponentName: in.Ref.Name, LabelManagedBy: ManagedByValue}).
		WithOwnerReferences(metav1ac.OwnerReference().
			WithAPIVersion(oda.APIVersion).WithKind(oda.KindIdentityConfig.Name).
			WithName(in.Ref.Name).WithUID(types.UID(in.UID)).
			WithController(true).WithBlockOwnerDeletion(true)).
		WithType("Opaque").
		WithData(map[string][]byte{"client_id": []byte(in.ClientID), "client_secret": []byte(value)})
	if rotatedFor != "" {
		ac.WithAnnotations(map[string]string{AnnotationRotatedFor: rotatedFor})
	}
	if current == nil {
		// Nothing was read (a fresh install) or nothing was there: create,
		// so that a Secret of this name made meanwhile, or by someone
		// else, is refused by the apiserver instead of overwritten.
		err = throughOutage(ctx, func() error {
			_, err := secrets.Create(ctx, secretOf(ac), metav1.CreateOptions{FieldManager: oda.FieldManager})
			return err
		})
		if err == nil {
			res.Written = true
			return res, nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return res, kubeError("create Secret "+in.Ref.Namespace+"/"+res.SecretName, err)
		}
		// A repeated attempt whose create landed, or a Secret that is
		// someone else's: read it and decide.
		if err := readCurrent(); err != nil {
			return res, err
		}
		if current == nil {
			return res, temporal.NewApplicationError("Secret "+in.Ref.Namespace+"/"+res.SecretName+" was deleted while being written", ErrTypeKeycloakUnavailable)
		}
		if err := secretClaim(current, owner, in.Adopt); err != nil {
			return res, err
		}
		if prev := current.Annotations[AnnotationRotatedFor]; rotatedFor == "" && prev != "" {
			rotatedFor = prev
			ac.WithAnnotations(map[string]string{AnnotationRotatedFor: prev})
		}
		if upToDate(current, rotatedFor, current.Annotations[AnnotationRotatedFor]) {
			return res, nil
		}
	}
	err = throughOutage(ctx, func() error {
		_, err := secrets.Apply(ctx, ac, metav1.ApplyOptions{FieldManager: oda.FieldManager, Force: true})
		return err
	})
	if err != nil {
		// The apiserver's error names the object, never the data.
		return res, kubeError("write Secret "+in.Ref.Namespace+"/"+res.SecretName, err)
	}
	res.Written = true
	return res, nil
}

func ownedBy(refs []metav1.OwnerReference, uid string) bool {
	for _, r := range refs {
		if string(r.UID) == uid {
			return true
		}
	}
	return false
}

// DeleteIdentityInput names the IdentityConfig being deleted.
type DeleteIdentityInput struct {
	Ref      oda.Ref `json:"ref"`
	ClientID string  `json:"clientId"`
	// UID is the IdentityConfig's: only a Secret it controls is deleted.
	UID string `json:"uid,omitempty"`
	// Adopt: as in EnsureIdentityInput, for a Python Canvas client never
	// reconciled by odaflow.
	Adopt bool `json:"adopt,omitempty"`
}

// DeleteIdentityResult says what was still there.
type DeleteIdentityResult struct {
	ClientDeleted bool `json:"clientDeleted,omitempty"`
	SecretDeleted bool `json:"secretDeleted,omitempty"`
	// Kept says why a client or Secret of this name was left alone: it
	// belongs to another resource or records no owner.
	Kept []string `json:"kept,omitempty"`
}

// DeleteIdentity deletes the component client (with its roles and their
// mappings) and the credentials Secret; both may already be gone. The
// same-named role on the canvassystem client stays: other components with
// the same canvasSystemRole share it.
func (a *Identity) DeleteIdentity(ctx context.Context, in DeleteIdentityInput) (DeleteIdentityResult, error) {
	var res DeleteIdentityResult
	kc, token, err := a.login(ctx)
	if err != nil {
		return res, err
	}
	c, err := a.findClient(ctx, kc, token, in.ClientID)
	if err != nil {
		return res, err
	}
	owner := oda.OwnerRecord{Namespace: in.Ref.Namespace, Name: in.Ref.Name, UID: in.UID}
	if c != nil {
		// The deletion of this IdentityConfig goes ahead either way: a
		// client that is not its own was never its to clean up.
		if _, err := a.claimClient(ctx, kc, token, c, in.Ref, owner, in.Adopt); err != nil {
			if !isErrType(err, ErrTypeOwnedElsewhere) {
				return res, err
			}
			res.Kept = append(res.Kept, messageOfErr(err))
			a.log().Warn("left a Keycloak client that is not this IdentityConfig's", "identityConfig", in.Ref.String(), "client", in.ClientID)
			c = nil
		}
	}
	if c != nil {
		err := kc.DeleteClient(ctx, token, a.Config.Realm, *c.ID)
		if err != nil && codeOf(err) != http.StatusNotFound {
			return res, a.keycloakError("delete client "+in.ClientID, err)
		}
		res.ClientDeleted = err == nil
	}
	name := identity.SecretName(in.Ref.Name)
	secrets := a.Kube.Core.CoreV1().Secrets(in.Ref.Namespace)
	var current *corev1.Secret
	err = throughOutage(ctx, func() (err error) {
		current, err = secrets.Get(ctx, name, metav1.GetOptions{})
		return err
	})
	if apierrors.IsNotFound(err) {
		return res, nil
	}
	if err != nil {
		return res, kubeError("read Secret "+in.Ref.Namespace+"/"+name, err)
	}
	if in.UID == "" || !ownedBy(current.OwnerReferences, in.UID) {
		res.Kept = append(res.Kept, "Secret "+in.Ref.Namespace+"/"+name+" is not controlled by this IdentityConfig")
		return res, nil
	}
	// The precondition makes sure the Secret deleted is the one checked.
	uid := current.UID
	err = throughOutage(ctx, func() error {
		return secrets.Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return res, kubeError("delete Secret "+in.Ref.Namespace+"/"+name, err)
	}
	res.SecretDeleted = err == nil
	return res, nil
}

func (in EnsureIdentityInput) owner() oda.OwnerRecord {
	return oda.OwnerRecord{Namespace: in.Ref.Namespace, Name: in.Ref.Name, UID: in.UID}
}

// clientAttributes are a client's attributes with the owner record set.
func clientAttributes(current *map[string]string, o oda.OwnerRecord) map[string]string {
	out := map[string]string{}
	if current != nil {
		for k, v := range *current {
			out[k] = v
		}
	}
	out[identity.ManagedAttribute] = "true"
	for k, v := range identity.OwnerAttributes(o) {
		out[k] = v
	}
	return out
}

func ptrTo[T any](v T) *T { return &v }

// claimClient checks that client c is owner's before anything reads its
// secret, changes or deletes it. A client that records no owner is taken
// over only when adopt is set and the IdentityConfig's namespace already
// holds the client's current secret in <name>-secret (what the Python
// Canvas's credentials operator wrote): the annotation alone is something
// any tenant can set, the secret only the tenant the client was made for
// has. Taking over, or finding an older uid of the same resource, writes
// the owner record onto the client. It reports whether it adopted.
func (a *Identity) claimClient(ctx context.Context, kc *gocloak.GoCloak, token string, c *gocloak.Client, ref oda.Ref, owner oda.OwnerRecord, adopt bool) (bool, error) {
	var attrs map[string]string
	if c.Attributes != nil {
		attrs = *c.Attributes
	}
	recorded := identity.OwnerOf(attrs)
	what := "Keycloak client " + gocloak.PString(c.ClientID)
	claim := oda.ClaimOf(recorded, owner, adopt)
	switch claim {
	case oda.ClaimForeign, oda.ClaimUnmarked:
		return false, ownedElsewhere(oda.Refusal(what, claim, recorded, owner))
	case oda.ClaimOwned:
		if owner.UID == "" || recorded.UID == owner.UID {
			return false, nil
		}
	case oda.ClaimAdopt:
		if err := a.provePossession(ctx, kc, token, c, ref); err != nil {
			return false, err
		}
	}
	c.Attributes = ptrTo(clientAttributes(c.Attributes, owner))
	if err := kc.UpdateClient(ctx, token, a.Config.Realm, *c); err != nil {
		return false, a.keycloakError("record the owner on client "+gocloak.PString(c.ClientID), err)
	}
	if claim == oda.ClaimAdopt {
		a.log().Info("adopted a Keycloak client created outside odaflow", "identityConfig", ref.String(), "client", gocloak.PString(c.ClientID))
	}
	return claim == oda.ClaimAdopt, nil
}

// provePossession checks that the IdentityConfig's namespace holds client
// c's current secret in its credentials Secret, controlled by the
// IdentityConfig. The comparison is constant-time and nothing of either
// value leaves this function.
func (a *Identity) provePossession(ctx context.Context, kc *gocloak.GoCloak, token string, c *gocloak.Client, ref oda.Ref) error {
	name := identity.SecretName(ref.Name)
	refuse := func(why string) error {
		return ownedElsewhere(fmt.Sprintf("Keycloak client %s records no owner and cannot be adopted by %s: %s; an administrator can set the client attributes %s and %s in Keycloak instead",
			gocloak.PString(c.ClientID), ref.Namespace+"/"+ref.Name, why, identity.OwnerNamespaceAttribute, identity.OwnerNameAttribute))
	}
	var s *corev1.Secret
	err := throughOutage(ctx, func() (err error) {
		s, err = a.Kube.Core.CoreV1().Secrets(ref.Namespace).Get(ctx, name, metav1.GetOptions{})
		return err
	})
	if apierrors.IsNotFound(err) {
		return refuse("adoption needs the Secret " + name + " the Python Canvas wrote, holding the client's current secret, and there is none")
	}
	if err != nil {
		return kubeError("read Secret "+ref.Namespace+"/"+name, err)
	}
	cred, err := kc.GetClientSecret(ctx, token, a.Config.Realm, *c.ID)
	if err != nil {
		return a.keycloakError("read the secret of client "+gocloak.PString(c.ClientID), err)
	}
	value := []byte(gocloak.PString(cred.Value))
	if len(value) == 0 || string(s.Data["client_id"]) != gocloak.PString(c.ClientID) ||
		subtle.ConstantTimeCompare(s.Data["client_secret"], value) != 1 {
		return refuse("the Secret " + name + " does not hold the client's current secret")
	}
	return nil
}

// secretClaim checks that an existing credentials Secret may be written:
// it is controlled by this IdentityConfig, or records no owner at all and
// the IdentityConfig asked to adopt it. nil (no Secret) may be written.
func secretClaim(s *corev1.Secret, owner oda.OwnerRecord, adopt bool) error {
	if s == nil || (owner.UID != "" && ownedBy(s.OwnerReferences, owner.UID)) {
		return nil
	}
	what := "Secret " + s.Namespace + "/" + s.Name
	if ref := metav1.GetControllerOf(s); ref != nil || len(s.OwnerReferences) > 0 {
		return ownedElsewhere(fmt.Sprintf("%s is owned by another object, not by %s: odaflow does not overwrite it; delete or rename it", what, owner))
	}
	if !adopt {
		return ownedElsewhere(oda.Refusal(what, oda.ClaimUnmarked, nil, owner))
	}
	return nil
}

// secretOf turns the apply configuration of a Secret into the object to
// create.
func secretOf(ac *corev1ac.SecretApplyConfiguration) *corev1.Secret {
	s := &corev1.Secret{Data: ac.Data}
	s.Name, s.Namespace = *ac.Name, *ac.Namespace
	s.Labels, s.Annotations = ac.Labels, ac.Annotations
	if ac.Type != nil {
		s.Type = *ac.Type
	}
	for _, o := range ac.OwnerReferences {
		s.OwnerReferences = append(s.OwnerReferences, metav1.OwnerReference{
			APIVersion: *o.APIVersion, Kind: *o.Kind, Name: *o.Name, UID: *o.UID,
			Controller: o.Controller, BlockOwnerDeletion: o.BlockOwnerDeletion,
		})
	}
	return s
}

func ownedElsewhere(msg string) error {
	return temporal.NewNonRetryableApplicationError(msg, ErrTypeOwnedElsewhere, nil)
}

func isErrType(err error, typ string) bool {
	var appErr *temporal.ApplicationError
	return errors.As(err, &appErr) && appErr.Type() == typ
}

func messageOfErr(err error) string {
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		return appErr.Message()
	}
	return err.Error()
}

// login reads the admin credentials from their Secret and gets a token.
// Neither leaves this function: errors name the Secret, never its data.
func (a *Identity) login(ctx context.Context) (*gocloak.GoCloak, string, error) {
	cfg := a.Config
	if cfg.URL == "" {
		return nil, "", temporal.NewNonRetryableApplicationError("no identity platform is configured: start the worker with --keycloak-url and --keycloak-admin-secret", ErrTypeKeycloakMisconfigured, nil)
	}
	if kc, token, ok := a.session.get(time.Now()); ok {
		return kc, token, nil
	}
	ref := cfg.AdminSecretNamespace + "/" + cfg.AdminSecretName
	// Read through an apiserver restart: the identity activities' retry
	// budget is sized for Keycloak (a quarter of a minute, so that a
	// Keycloak outage shows in the status soon), and would otherwise park
	// the IdentityConfig as Failed over a kube-apiserver that is back in 15 s.
	// Every apiserver call of the identity activities goes so.
	var s *corev1.Secret
	err := throughOutage(ctx, func() (err error) {
		s, err = a.Kube.Core.CoreV1().Secrets(cfg.AdminSecretNamespace).Get(ctx, cfg.AdminSecretName, metav1.GetOptions{})
		return err
	})
	if apierrors.IsNotFound(err) {
		return nil, "", temporal.NewNonRetryableApplicationError("the Keycloak admin Secret "+ref+" does not exist", ErrTypeKeycloakMisconfigured, nil)
	}
	if err != nil {
		return nil, "", kubeError("read the Keycloak admin Secret "+ref, err)
	}
	user, pass, ok := AdminCredentials(s.Data)
	if !ok {
		return nil, "", temporal.NewNonRetryableApplicationError("the Keycloak admin Secret "+ref+" needs keys username and password (or the Canvas's KEYCLOAK_USER and KEYCLOAK_PASSWORD)", ErrTypeKeycloakMisconfigured, nil)
	}
	timeout := cfg.Timeout
	if timeout == 0 {
		timeout = 20 * time.Second
	}
	newClient := func(base string) *gocloak.GoCloak {
		kc := gocloak.NewClient(base)
		kc.RestyClient().SetTimeout(timeout)
		return kc
	}
	adminRealm := cfg.AdminRealm
	if adminRealm == "" {
		adminRealm = "master"
	}
	kc := newClient(cfg.URL)
	tok, err := kc.LoginAdmin(ctx, user, pass, adminRealm)
	if codeOf(err) == http.StatusNotFound {
		// Keycloak before 17, and the Canvas's chart (httpRelativePath
		// /auth/), serve under /auth; Keycloak 17 and later at / by
		// default. A URL with the wrong one answers 404 for every path,
		// so the other base is tried before the realm is called missing.
		alt := AlternateKeycloakBase(cfg.URL)
		if altTok, altErr := newClient(alt).LoginAdmin(ctx, user, pass, adminRealm); altErr == nil || codeOf(altErr) != http.StatusNotFound {
			a.log().Warn("Keycloak answers under another base path than --keycloak-url: set it to the one used", "configured", cfg.URL, "used", alt)
			kc, tok, err = newClient(alt), altTok, altErr
		}
	}
	if err != nil {
		if code := codeOf(err); code == http.StatusUnauthorized || code == http.StatusBadRequest {
			return nil, "", temporal.NewNonRetryableApplicationError(
				fmt.Sprintf("Keycloak at %s refused the admin credentials in Secret %s (realm %s): %s", cfg.URL, ref, adminRealm, messageOf(err)),
				ErrTypeKeycloakUnauthorized, nil)
		}
		return nil, "", a.keycloakError("log in to realm "+adminRealm, err)
	}
	validTo := time.Now().Add(time.Minute)
	if life := time.Duration(tok.ExpiresIn)*time.Second - 15*time.Second; life < time.Minute {
		validTo = time.Now().Add(max(life, 0))
	}
	a.session.put(kc, tok.AccessToken, validTo)
	return kc, tok.AccessToken, nil
}

// AdminCredentials reads the Keycloak admin account from its Secret's
// data: keys username and password, or KEYCLOAK_USER and KEYCLOAK_PASSWORD
// as the Canvas stores them for its identity operator. ok is false unless
// one pair is complete.
func AdminCredentials(data map[string][]byte) (user, password string, ok bool) {
	for _, keys := range [][2]string{{"username", "password"}, {"KEYCLOAK_USER", "KEYCLOAK_PASSWORD"}} {
		user, password = string(data[keys[0]]), string(data[keys[1]])
		if user != "" && password != "" {
			return user, password, true
		}
	}
	return "", "", false
}

// AlternateKeycloakBase is the other of a Keycloak base URL's two usual
// forms: without /auth when it ends in it, with it otherwise.
func AlternateKeycloakBase(base string) string {
	trimmed := strings.TrimRight(base, "/")
	if strings.HasSuffix(trimmed, "/auth") {
		return strings.TrimSuffix(trimmed, "/auth")
	}
	return trimmed + "/auth"
}

// findClient looks a client up by clientId. The clientId filter is an exact
// match, but the lookup still pages: a Keycloak older than 12 ignores the
// filter and returns every client, and the list must not be cut at the
// server's default page size (§5.3.8).
func (a *Identity) findClient(ctx context.Context, kc *gocloak.GoCloak, token, clientID string) (*gocloak.Client, error) {
	const pageSize = 100
	for first := 0; ; first += pageSize {
		f, m := first, pageSize
		page, err := kc.GetClients(ctx, token, a.Config.Realm, gocloak.GetClientsParams{ClientID: gocloak.StringP(clientID), First: &f, Max: &m})
		if err != nil {
			return nil, a.keycloakError("find client "+clientID, err)
		}
		for _, c := range page {
			if gocloak.PString(c.ClientID) == clientID && c.ID != nil {
				return c, nil
			}
		}
		if len(page) < pageSize {
			return nil, nil
		}
	}
}

// clientRoles lists every role of a client, page by page, with attributes
// (briefRepresentation=false) to see odaflow's marker.
func (a *Identity) clientRoles(ctx context.Context, kc *gocloak.GoCloak, token, id string) ([]identity.ExistingRole, error) {
	const pageSize = 100
	var out []identity.ExistingRole
	for first := 0; ; first += pageSize {
		f, m := first, pageSize
		page, err := kc.GetClientRoles(ctx, token, a.Config.Realm, id, gocloak.GetRoleParams{First: &f, Max: &m, BriefRepresentation: gocloak.BoolP(false)})
		if err != nil {
			return nil, a.keycloakError("list roles of client "+id, err)
		}
		for _, r := range page {
			er := identity.ExistingRole{Name: gocloak.PString(r.Name), Description: gocloak.PString(r.Description)}
			if r.Attributes != nil {
				for _, v := range (*r.Attributes)[identity.ManagedAttribute] {
					er.Managed = er.Managed || v == identity.ManagedValue
				}
			}
			out = append(out, er)
		}
		if len(page) < pageSize {
			return out, nil
		}
	}
}

// keycloakError turns a gocloak error into a Temporal error: unreachable
// or 5xx retries, a refusal for content or permissions does not.
func (a *Identity) keycloakError(what string, err error) error {
	code := codeOf(err)
	msg := fmt.Sprintf("Keycloak at %s: %s: %s", a.Config.URL, what, messageOf(err))
	switch {
	case code == 0 || code >= 500 || code == http.StatusTooManyRequests:
		return temporal.NewApplicationError(msg+" (Keycloak is unreachable or failing; retrying)", ErrTypeKeycloakUnavailable)
	case code == http.StatusUnauthorized:
		// The token was accepted moments ago: it expired or Keycloak
		// restarted. A new attempt logs in again.
		a.session.drop()
		return temporal.NewApplicationError(msg, ErrTypeKeycloakUnavailable)
	case code == http.StatusForbidden:
		return temporal.NewNonRetryableApplicationError(msg+" (the admin user lacks permissions)", ErrTypeKeycloakMisconfigured, nil)
	case code == http.StatusNotFound:
		return temporal.NewNonRetryableApplicationError(msg+" (does realm "+a.Config.Realm+" exist?)", ErrTypeKeycloakMisconfigured, nil)
	default:
		return temporal.NewNonRetryableApplicationError(msg, ErrTypeKeycloakRejected, nil)
	}
}

func codeOf(err error) int {
	var e *gocloak.APIError
	if errors.As(err, &e) {
		return e.Code
	}
	return 0
}

// messageOf is gocloak's message: the HTTP status and Keycloak's error
// body, or the transport error (which names the URL, not the form data).
func messageOf(err error) string {
	var e *gocloak.APIError
	if errors.As(err, &e) {
		return e.Message
	}
	return err.Error()
}
