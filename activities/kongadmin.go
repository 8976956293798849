package activities

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/kong/go-kong/kong"
	"go.temporal.io/sdk/temporal"

	"github.com/odaflow/odaflow/gateway"
)

// ErrTypeKongUnavailable is the (retryable) application error type of a
// Kong Admin API that cannot be reached or answers 5xx.
const ErrTypeKongUnavailable = "KongUnavailable"

// kongPageSize is the page size of the tag listings; Kong allows up to 1000.
const kongPageSize = 100

// KongAdmin configures Kong directly through its Admin API (gateway
// kong-admin): one service, one route and the policies' plugins per
// ExposedAPI, every entity tagged "odaflow" and with the API's tag
// (gateway.KongAdminAPITag), so that what odaflow owns can be found and
// removed by tag without state of its own.
type KongAdmin struct {
	client *kong.Client
	url    string
}

// NewKongAdmin returns a KongAdmin for the Admin API at adminURL. tokenFile,
// when set, is a file holding the admin token (the chart mounts a Secret);
// it is read on every request, so a rotated Secret applies without a
// restart, and sent as the Kong-Admin-Token header. The token is never
// logged or put in errors. hc may be nil (a client with a 10 s timeout).
func NewKongAdmin(adminURL, tokenFile string, hc *http.Client) (*KongAdmin, error) {
	if adminURL == "" {
		return nil, errors.New("kong admin: the Admin API URL is required")
	}
	if tokenFile != "" {
		// Fail at start rather than on the first API call.
		if _, err := readToken(tokenFile); err != nil {
			return nil, err
		}
	}
	if hc == nil {
		hc = &http.Client{Timeout: 10 * time.Second}
	}
	c := *hc
	base := c.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	if tokenFile != "" {
		c.Transport = &tokenTransport{file: tokenFile, base: base}
	}
	kc, err := kong.NewClient(&adminURL, &c)
	if err != nil {
		return nil, fmt.Errorf("kong admin: client for %s: %w", adminURL, err)
	}
	return &KongAdmin{client: kc, url: adminURL}, nil
}

func readToken(file string) (string, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("kong admin: read the admin token file %s: %w", file, err)
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" {
		return "", fmt.Errorf("kong admin: the admin token file %s is empty", file)
	}
	return tok, nil
}

type tokenTransport struct {
	file string
	base http.RoundTripper
}

func (t *tokenTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	tok, err := readToken(t.file)
	if err != nil {
		return nil, err
	}
	r = r.Clone(r.Context())
	r.Header.Set("Kong-Admin-Token", tok)
	return t.base.RoundTrip(r)
}

// KongSyncInput is one ExposedAPI to publish in Kong.
type KongSyncInput struct {
	Config gateway.Config `json:"config"`
	API    gateway.API    `json:"api"`
}

// KongSyncResult names what Kong holds for the API afterwards.
type KongSyncResult struct {
	ServiceID string   `json:"serviceId"`
	RouteID   string   `json:"routeId"`
	PluginIDs []string `json:"pluginIds,omitempty"`
	// Deleted counts the entities of the API that were no longer desired.
	Deleted int `json:"deleted"`
}

// Sync makes Kong hold exactly the API's entities: it upserts the service,
// the route and the plugins (PUT by name and instance_name, so a repeat is a
// no-op and a lost response is harmless) and deletes the API's other
// tagged entities (a disabled policy's plugin, anything left by an earlier
// naming). Plugins no longer desired go before the desired ones are written,
// so that a plugin of the same kind under another instance name cannot
// collide with them on Kong's one-plugin-per-route rule.
func (k *KongAdmin) Sync(ctx context.Context, in KongSyncInput) (KongSyncResult, error) {
	var res KongSyncResult
	spec, err := gateway.ParseSpec(in.API.Spec)
	if err != nil {
		return res, temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeInvalid, err)
	}
	svc, route, plugins, err := gateway.KongAdminEntities(in.Config, in.API, spec)
	if err != nil {
		return res, temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeInvalid, err)
	}
	tag := gateway.KongAdminAPITag(in.API)

	var gotSvc kong.Service
	if err := k.put(ctx, "/services/"+url.PathEscape(svc.Name), svc, &gotSvc); err != nil {
		return res, k.classify("upsert service "+svc.Name, err)
	}
	res.ServiceID = deref(gotSvc.ID)
	route.Service = gateway.KongRef{ID: res.ServiceID}
	var gotRoute kong.Route
	if err := k.put(ctx, "/routes/"+url.PathEscape(route.Name), route, &gotRoute); err != nil {
		return res, k.classify("upsert route "+route.Name, err)
	}
	res.RouteID = deref(gotRoute.ID)

	want := map[string]bool{}
	for _, p := range plugins {
		want[p.InstanceName] = true
	}
	existing, err := k.listPlugins(ctx, tag)
	if err != nil {
		return res, err
	}
	for _, p := range existing {
		if p.InstanceName != nil && want[*p.InstanceName] {
			continue
		}
		if err := k.client.Plugins.Delete(ctx, p.ID); err != nil && !kong.IsNotFoundErr(err) {
			return res, k.classify("delete plugin "+describePlugin(p), err)
		}
		res.Deleted++
	}
	for _, p := range plugins {
		p.Route = gateway.KongRef{ID: res.RouteID}
		var got kong.Plugin
		if err := k.put(ctx, "/plugins/"+url.PathEscape(p.InstanceName), p, &got); err != nil {
			return res, k.classify("upsert plugin "+p.InstanceName, err)
		}
		res.PluginIDs = append(res.PluginIDs, deref(got.ID))
	}

	n, err := k.deleteTagged(ctx, tag, route.Name, svc.Name)
	res.Deleted += n
	return res, err
}

// KongRemoveInput names an ExposedAPI whose Kong entities go.
type KongRemoveInput struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

// Remove deletes every Kong entity tagged for the API: plugins, then
// routes, then services (Kong refuses to delete a service a route still
// uses). Entities already gone are fine.
func (k *KongAdmin) Remove(ctx context.Context, in KongRemoveInput) error {
	tag := gateway.KongAdminAPITagFor(in.Namespace, in.Name)
	plugins, err := k.listPlugins(ctx, tag)
	if err != nil {
		return err
	}
	for _, p := range plugins {
		if err := k.client.Plugins.Delete(ctx, p.ID); err != nil && !kong.IsNotFoundErr(err) {
			return k.classify("delete plugin "+describePlugin(p), err)
		}
	}
	_, err = k.deleteTagged(ctx, tag, "", "")
	return err
}

// deleteTagged deletes the routes and services carrying tag, except those
// named keepRoute and keepService.
func (k *KongAdmin) deleteTagged(ctx context.Context, tag, keepRoute, keepService string) (int, error) {
	deleted := 0
	var routes []*kong.Route
	opt := &kong.ListOpt{Size: kongPageSize, Tags: []*string{&tag}}
	for opt != nil {
		page, next, err := k.client.Routes.List(ctx, opt)
		if err != nil {
			return deleted, k.classify("list routes tagged "+tag, err)
		}
		routes, opt = append(routes, page...), next
	}
	for _, r := range routes {
		if keepRoute != "" && deref(r.Name) == keepRoute {
			continue
		}
		if err := k.client.Routes.Delete(ctx, r.ID); err != nil && !kong.IsNotFoundErr(err) {
			return deleted, k.classify("delete route "+r.FriendlyName(), err)
		}
		deleted++
	}
	var services []*kong.Service
	opt = &kong.ListOpt{Size: kongPageSize, Tags: []*string{&tag}}
	for opt != nil {
		page, next, err := k.client.Services.List(ctx, opt)
		if err != nil {
			return deleted, k.classify("list services tagged "+tag, err)
		}
		services, opt = append(services, page...), next
	}
	for _, s := range services {
		if keepService != "" && deref(s.Name) == keepService {
			continue
		}
		if err := k.client.Services.Delete(ctx, s.ID); err != nil && !kong.IsNotFoundErr(err) {
			return deleted, k.classify("delete service "+s.FriendlyName(), err)
		}
		deleted++
	}
	return deleted, nil
}

func (k *KongAdmin) listPlugins(ctx context.Context, tag string) ([]*kong.Plugin, error) {
	var out []*kong.Plugin
	opt := &kong.ListOpt{Size: kongPageSize, Tags: []*string{&tag}}
	for opt != nil {
		page, next, err := k.client.Plugins.List(ctx, opt)
		if err != nil {
			return nil, k.classify("list plugins tagged "+tag, err)
		}
		out, opt = append(out, page...), next
	}
	return out, nil
}

// put sends an Admin API body as it is: gateway's bodies are already the
// Admin API's JSON, and go-kong's typed Create would need ids.
func (k *KongAdmin) put(ctx context.Context, endpoint string, body, out any) error {
	req, err := k.client.NewRequest(http.MethodPut, endpoint, nil, body)
	if err != nil {
		return err
	}
	_, err = k.client.Do(ctx, req, out)
	return err
}

// classify turns a Kong failure into what Temporal should do with it: a
// body Kong refuses (400 schema or foreign key violation, 409 conflict
// with an entity odaflow does not own) will be refused again, so it is not
// retried; anything else (unreachable, 5xx, 401/403 until the token is
// fixed, 429) is retried.
func (k *KongAdmin) classify(what string, err error) error {
	var apiErr *kong.APIError
	if errors.As(err, &apiErr) {
		switch c := apiErr.Code(); c {
		case http.StatusBadRequest, http.StatusConflict, http.StatusUnprocessableEntity:
			return temporal.NewNonRetryableApplicationError(
				fmt.Sprintf("kong admin: Kong refused to %s: %v", what, err), ErrTypeInvalid, err)
		case http.StatusUnauthorized, http.StatusForbidden:
			return temporal.NewApplicationErrorWithCause(
				fmt.Sprintf("kong admin: Kong at %s refused the credentials to %s (HTTP %d); check the admin token", k.url, what, c),
				ErrTypeKongUnavailable, err)
		default:
			return temporal.NewApplicationErrorWithCause(
				fmt.Sprintf("kong admin: Kong at %s failed to %s: %v", k.url, what, err), ErrTypeKongUnavailable, err)
		}
	}
	return temporal.NewApplicationErrorWithCause(
		fmt.Sprintf("kong admin: Kong Admin API at %s unreachable, could not %s: %v", k.url, what, err), ErrTypeKongUnavailable, err)
}

func describePlugin(p *kong.Plugin) string {
	if p.InstanceName != nil {
		return *p.InstanceName
	}
	return deref(p.Name) + " " + deref(p.ID)
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
