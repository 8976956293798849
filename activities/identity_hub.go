package activities

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/Nerzal/gocloak/v13"
	"go.temporal.io/sdk/temporal"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/odaflow/odaflow/identity"
	"github.com/odaflow/odaflow/oda"
)

// Error types of the hub activities.
const (
	// ErrTypeHubUnavailable: the component's hub is unreachable, timed out
	// or answered 5xx/429; retryable (the component's API pods may still
	// be starting).
	ErrTypeHubUnavailable = "HubUnavailable"
	// ErrTypeHubRejected: the hub refused the subscription (4xx); the same
	// request will be refused again.
	ErrTypeHubRejected = "HubRejected"
	// ErrTypeListenerMisconfigured: the worker has no listener base URL or
	// key, so it cannot give a hub a callback.
	ErrTypeListenerMisconfigured = "ListenerMisconfigured"
	// ErrTypeHubRefused: the hub's Service is not one odaflow calls (an
	// ExternalName alias to a host of the tenant's choosing).
	ErrTypeHubRefused = "HubRefused"
)

// HubConfig is what the hub activities need from the worker's flags.
type HubConfig struct {
	// ListenerBaseURL is where hubs reach the worker's listener, e.g.
	// http://odaflow-worker.canvas.svc.cluster.local:8080.
	ListenerBaseURL string
	// Keys returns the listener keys, the signing key first (read from the
	// mounted Secret file on each call, so a rotated Secret is picked up
	// without a restart). Only the derived per-IdentityConfig token leaves
	// the worker, and only towards the hub.
	Keys func() ([][]byte, error)
	// HTTP is the client for hub calls (default: 10 s timeout).
	HTTP *http.Client
}

// HubSubscription is one registration as the workflow state keeps it. It
// holds no secret: Callback is without its token, KeyID names the key the
// token was derived from.
type HubSubscription struct {
	API      string `json:"api"`
	HubURL   string `json:"hubUrl"`
	Callback string `json:"callback"`
	KeyID    string `json:"keyId"`
	// ID is the hub's subscription id ("" if the hub returned none, in
	// which case it cannot be unregistered).
	ID string `json:"id"`
}

// RegisterHubInput asks for one subscription.
type RegisterHubInput struct {
	Ref oda.Ref      `json:"ref"`
	Hub identity.Hub `json:"hub"`
	// Existing is the subscription the workflow state holds for this API,
	// if any.
	Existing *HubSubscription `json:"existing,omitempty"`
}

// RegisterHubResult is the subscription now in place.
type RegisterHubResult struct {
	Subscription HubSubscription `json:"subscription"`
	// Registered is true when a POST was made (false: Existing was current).
	Registered bool `json:"registered,omitempty"`
	// Replaced is the id of an older subscription this one replaced
	// (another hub URL, listener URL or key); StaleLeft is set when that
	// older one could not be deleted.
	Replaced  string `json:"replaced,omitempty"`
	StaleLeft bool   `json:"staleLeft,omitempty"`
}

// RegisterHub subscribes the IdentityConfig's listener path to a
// component's hub (§2.3 steps 7-8, fixing §5.3.3). It is idempotent on the
// workflow's record: when Existing already names this hub, this callback
// and this signing key, it does nothing at all. Otherwise it POSTs the
// subscription, and only then removes an outdated Existing one, so events
// are never without a subscription.
//
// A hub keeps only a callback URL, so the listener token travels in the
// callback's query (see listener package for the trade-off). It is derived
// here from the worker's key and never returned, logged or put in an
// error.
//
// The one window for a duplicate is a hub that answers 201 and a worker
// that dies before Temporal records the result: the retry registers again.
// Events are idempotent (adding an existing role and removing a missing
// one change nothing), so a duplicate only delivers events twice.
func (a *Identity) RegisterHub(ctx context.Context, in RegisterHubInput) (RegisterHubResult, error) {
	var res RegisterHubResult
	// The tenant's doing first: a refused hub is refused whatever the
	// worker's listener settings.
	if err := a.checkHubService(ctx, in.Ref.Namespace, in.Hub.URL); err != nil {
		return res, err
	}
	key, keyID, err := a.signingKey()
	if err != nil {
		return res, err
	}
	callback := identity.CallbackURL(a.Hub.ListenerBaseURL, in.Ref.Namespace, in.Ref.Name)
	want := HubSubscription{API: in.Hub.API, HubURL: in.Hub.URL, Callback: callback, KeyID: keyID}
	if ex := in.Existing; ex != nil && ex.API == want.API && ex.HubURL == want.HubURL && ex.Callback == want.Callback && ex.KeyID == want.KeyID {
		res.Subscription = *ex
		return res, nil
	}
	token := identity.ListenerToken(key, in.Ref.Namespace, in.Ref.Name)
	body, err := json.Marshal(identity.SubscriptionBody(in.Hub.API, identity.CallbackWithToken(callback, token)))
	if err != nil {
		return res, fmt.Errorf("encode hub subscription: %w", err)
	}
	code, reply, err := a.hubCall(ctx, http.MethodPost, in.Hub.URL, body)
	if err != nil {
		return res, hubTransportError("register with hub "+in.Hub.URL, err)
	}
	if code != http.StatusCreated && code != http.StatusOK {
		return res, hubStatusError("register with hub "+in.Hub.URL, code)
	}
	var created struct {
		ID any `json:"id"`
	}
	// A hub that answers 201 without a readable id has still subscribed:
	// record it (it cannot be unregistered) rather than register again.
	_ = json.Unmarshal(reply, &created)
	switch id := created.ID.(type) {
	case string:
		want.ID = id
	case float64:
		want.ID = fmt.Sprint(id)
	}
	res.Subscription, res.Registered = want, true
	a.log().Info("hub subscription registered", "identityConfig", in.Ref.String(), "hub", in.Hub.URL, "subscription", want.ID)
	if ex := in.Existing; ex != nil && ex.ID != "" {
		res.Replaced = ex.ID
		if _, err := a.unregister(ctx, in.Ref.Namespace, *ex); err != nil {
			// The new subscription is in place; the old one delivers
			// events to a listener path that still verifies only if the
			// key is unchanged, and at worst duplicates them.
			res.StaleLeft = true
			a.log().Warn("could not remove the replaced hub subscription", "identityConfig", in.Ref.String(), "hub", ex.HubURL, "subscription", ex.ID, "err", err)
		}
	}
	return res, nil
}

// UnregisterHubInput names the subscription to remove.
type UnregisterHubInput struct {
	Ref          oda.Ref         `json:"ref"`
	Subscription HubSubscription `json:"subscription"`
}

// UnregisterHubResult says whether the hub still had it.
type UnregisterHubResult struct {
	Deleted bool `json:"deleted,omitempty"`
}

// UnregisterHub DELETEs `<hub>/<id>`; a 404 means it is already gone.
func (a *Identity) UnregisterHub(ctx context.Context, in UnregisterHubInput) (UnregisterHubResult, error) {
	deleted, err := a.unregister(ctx, in.Ref.Namespace, in.Subscription)
	return UnregisterHubResult{Deleted: deleted}, err
}

func (a *Identity) unregister(ctx context.Context, namespace string, s HubSubscription) (bool, error) {
	if s.ID == "" {
		return false, nil
	}
	// The Service may have become an alias since the subscription was made.
	if err := a.checkHubService(ctx, namespace, s.HubURL); err != nil {
		return false, err
	}
	target := strings.TrimRight(s.HubURL, "/") + "/" + url.PathEscape(s.ID)
	code, _, err := a.hubCall(ctx, http.MethodDelete, target, nil)
	if err != nil {
		return false, hubTransportError("unregister from hub "+s.HubURL, err)
	}
	switch {
	case code == http.StatusNotFound:
		return false, nil
	case code >= 200 && code < 300:
		return true, nil
	}
	return false, hubStatusError("unregister subscription "+s.ID+" from hub "+s.HubURL, code)
}

// ApplyRoleEventInput is one dynamic role change the workflow decided to
// apply.
type ApplyRoleEventInput struct {
	Ref      oda.Ref            `json:"ref"`
	ClientID string             `json:"clientId"`
	Event    identity.RoleEvent `json:"event"`
}

// ApplyRoleEventResult says whether Keycloak changed.
type ApplyRoleEventResult struct {
	Changed bool `json:"changed,omitempty"`
}

// ApplyRoleEvent adds or removes one role the listener reported on the
// component client. The role is created without odaflow's static marker,
// so the drift check keeps it; adding a role that exists and removing one
// that does not are successes, which makes repeated events harmless.
func (a *Identity) ApplyRoleEvent(ctx context.Context, in ApplyRoleEventInput) (ApplyRoleEventResult, error) {
	var res ApplyRoleEventResult
	kc, token, err := a.login(ctx)
	if err != nil {
		return res, err
	}
	c, err := a.findClient(ctx, kc, token, in.ClientID)
	if err != nil {
		return res, err
	}
	if c == nil {
		return res, temporal.NewApplicationError("Keycloak client "+in.ClientID+" does not exist (yet)", ErrTypeKeycloakUnavailable)
	}
	// Roles change only on a client that records this IdentityConfig.
	if _, err := a.claimClient(ctx, kc, token, c, in.Ref, oda.OwnerRecord{Namespace: in.Ref.Namespace, Name: in.Ref.Name}, false); err != nil {
		return res, err
	}
	r := in.Event.Role
	switch in.Event.Action {
	case identity.RoleAdd:
		role := gocloak.Role{Name: gocloak.StringP(r.Name), Attributes: &map[string][]string{identity.ManagedAttribute: {"dynamic:" + in.Event.API}}}
		if r.Description != "" {
			role.Description = gocloak.StringP(r.Description)
		}
		_, err := kc.CreateClientRole(ctx, token, a.Config.Realm, *c.ID, role)
		if err != nil && codeOf(err) != http.StatusConflict {
			return res, a.keycloakError(fmt.Sprintf("create role %s on client %s", r.Name, in.ClientID), err)
		}
		res.Changed = err == nil
	case identity.RoleRemove:
		err := kc.DeleteClientRole(ctx, token, a.Config.Realm, *c.ID, r.Name)
		if err != nil && codeOf(err) != http.StatusNotFound {
			return res, a.keycloakError(fmt.Sprintf("delete role %s from client %s", r.Name, in.ClientID), err)
		}
		res.Changed = err == nil
	default:
		return res, temporal.NewNonRetryableApplicationError("role event action "+string(in.Event.Action)+" changes nothing", ErrTypeKeycloakRejected, nil)
	}
	return res, nil
}

func (a *Identity) signingKey() ([]byte, string, error) {
	if a.Hub.ListenerBaseURL == "" || a.Hub.Keys == nil {
		return nil, "", temporal.NewNonRetryableApplicationError(
			"the worker has no identity listener: start it with --listener-base-url and --listener-key-file to register hubs", ErrTypeListenerMisconfigured, nil)
	}
	keys, err := a.Hub.Keys()
	if err != nil {
		// The error names the file, never its content.
		return nil, "", temporal.NewNonRetryableApplicationError("read the listener key: "+err.Error(), ErrTypeListenerMisconfigured, nil)
	}
	if len(keys) == 0 {
		return nil, "", temporal.NewNonRetryableApplicationError("the listener key file holds no key", ErrTypeListenerMisconfigured, nil)
	}
	return keys[0], identity.KeyID(keys[0]), nil
}

// checkHubService refuses a hub whose Service is an ExternalName: the
// cluster DNS answers its name with a CNAME to any host the tenant wrote,
// and the worker, from inside the Canvas, would call it with the listener
// token. A Service not there (yet) is left to the call itself, which fails
// until it exists. Without apiserver clients (unit tests of the HTTP side)
// there is nothing to check; the worker always has them.
func (a *Identity) checkHubService(ctx context.Context, namespace, hubURL string) error {
	if a.Kube == nil || a.Kube.Core == nil {
		return nil
	}
	name, ok := identity.HubService(namespace, hubURL)
	if !ok {
		return temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("hub %s does not name a Service in namespace %s", hubURL, namespace), ErrTypeHubRefused, nil)
	}
	svc, err := a.Kube.Core.CoreV1().Services(namespace).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return temporal.NewApplicationError(fmt.Sprintf("read hub Service %s/%s: %v", namespace, name, err), ErrTypeHubUnavailable)
	case svc.Spec.Type == corev1.ServiceTypeExternalName:
		return temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("hub Service %s is of type ExternalName: odaflow calls only Services that select the component's own pods; make it a ClusterIP Service", name),
			ErrTypeHubRefused, nil)
	}
	return nil
}

// hubCall makes one request and reads at most 64 KiB of the answer. It
// never follows a redirect: the hub URL is built from a tenant's spec to
// name a Service in the tenant's namespace, and a redirect could send the
// worker anywhere (a cloud metadata endpoint, another tenant's Service).
func (a *Identity) hubCall(ctx context.Context, method, target string, body []byte) (int, []byte, error) {
	hc := &http.Client{Timeout: 10 * time.Second}
	if a.Hub.HTTP != nil {
		c := *a.Hub.HTTP
		hc = &c
	}
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, target, rd)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	reply, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return 0, nil, err
	}
	return resp.StatusCode, reply, nil
}

// hubTransportError: the request never got an answer (DNS, refused,
// timeout). net/http names the hub URL, which carries no token: the token
// is in the request body.
func hubTransportError(what string, err error) error {
	return temporal.NewApplicationError(fmt.Sprintf("%s: %v (hub unreachable; retrying)", what, unwrapURLError(err)), ErrTypeHubUnavailable)
}

// hubStatusError reports a hub's answer by its status code only: the body
// is whatever the host at the other end chose to send, and copying it into
// status and Events would turn the worker into a reader of that host for
// whoever can write an IdentityConfig.
func hubStatusError(what string, code int) error {
	msg := fmt.Sprintf("%s: HTTP %d", what, code)
	if code >= 500 || code == http.StatusTooManyRequests || code == http.StatusRequestTimeout {
		return temporal.NewApplicationError(msg+" (hub failing; retrying)", ErrTypeHubUnavailable)
	}
	return temporal.NewNonRetryableApplicationError(msg, ErrTypeHubRejected, nil)
}

func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Errorf("%s %s: %w", ue.Op, ue.URL, ue.Err)
	}
	return err
}

func (a *Identity) log() *slog.Logger {
	if a.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return a.Log
}
