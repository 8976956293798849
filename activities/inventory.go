package activities

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"go.temporal.io/sdk/temporal"

	"github.com/odaflow/odaflow/dependency"
	"github.com/odaflow/odaflow/oda"
)

// ErrTypeInventoryRejected marks a request the Service Inventory refused
// for its content (4xx): retrying the same request cannot help.
const ErrTypeInventoryRejected = "InventoryRejected"

// ServiceInventory records resolved dependencies in the Canvas's TMF638
// Service Inventory ("Canvas Info"). With no URL configured it does nothing.
type ServiceInventory struct {
	// URL is the API's base, up to and excluding /service.
	URL  string
	HTTP *http.Client
	// Kube puts odaflow's finalizer on the DependentAPI before its first
	// record is made, so that its deletion removes the record.
	Kube *Kube
}

// RegisterDependencyInput is one dependency to record.
type RegisterDependencyInput struct {
	Registration dependency.Registration `json:"registration"`
	// Ref and UID name the DependentAPI, whose record is the one carrying
	// them (both register and unregister need them); HasFinalizer says
	// whether it already carries odaflow's finalizer.
	Ref          oda.Ref `json:"ref"`
	UID          string  `json:"uid"`
	HasFinalizer bool    `json:"hasFinalizer,omitempty"`
}

// RegisterDependencyResult is the record's id ("" when no inventory is
// configured).
type RegisterDependencyResult struct {
	ID string `json:"id,omitempty"`
}

// RegisterDependency creates or updates the dependency's record. It finds
// the record by its owner characteristics (the DependentAPI's namespace,
// name and uid) rather than trusting a remembered id, so a retry after a
// lost response never creates a second one, and it deletes duplicates of
// its own. Records that name another owner, or none, are never touched.
func (s *ServiceInventory) RegisterDependency(ctx context.Context, in RegisterDependencyInput) (RegisterDependencyResult, error) {
	if s.URL == "" {
		return RegisterDependencyResult{}, nil
	}
	owner, err := ownerOf(in)
	if err != nil {
		return RegisterDependencyResult{}, err
	}
	if !in.HasFinalizer && s.Kube != nil {
		if err := s.Kube.EnsureFinalizer(ctx, EnsureFinalizerInput{Ref: in.Ref, UID: in.UID}); err != nil {
			return RegisterDependencyResult{}, err
		}
	}
	keep, dups, err := s.find(ctx, owner)
	if err != nil {
		return RegisterDependencyResult{}, err
	}
	for _, id := range dups {
		if err := s.delete(ctx, id); err != nil {
			return RegisterDependencyResult{}, err
		}
	}
	body := dependency.ServiceBody(in.Registration, owner)
	if keep == "" {
		var created map[string]any
		if err := s.do(ctx, http.MethodPost, "/service", body, &created, http.StatusCreated); err != nil {
			return RegisterDependencyResult{}, err
		}
		id, _ := created["id"].(string)
		if id == "" {
			return RegisterDependencyResult{}, fmt.Errorf("service inventory: created service has no id")
		}
		return RegisterDependencyResult{ID: id}, nil
	}
	if err := s.do(ctx, http.MethodPatch, "/service/"+url.PathEscape(keep), body, nil, http.StatusOK); err != nil {
		return RegisterDependencyResult{}, err
	}
	return RegisterDependencyResult{ID: keep}, nil
}

// UnregisterDependency deletes the DependentAPI's own record(s); a record
// already gone is success.
func (s *ServiceInventory) UnregisterDependency(ctx context.Context, in RegisterDependencyInput) error {
	if s.URL == "" {
		return nil
	}
	owner, err := ownerOf(in)
	if err != nil {
		return err
	}
	keep, dups, err := s.find(ctx, owner)
	if err != nil {
		return err
	}
	for _, id := range append(dups, keep) {
		if id == "" {
			continue
		}
		if err := s.delete(ctx, id); err != nil {
			return err
		}
	}
	return nil
}

// ownerOf is the DependentAPI the request is for. Without its namespace,
// name and uid no record can be shown to be its own, so nothing is written
// or deleted (a request scheduled by a release before owners were
// recorded: the workflow's retry sends them).
func ownerOf(in RegisterDependencyInput) (dependency.Owner, error) {
	owner := dependency.Owner{Namespace: in.Ref.Namespace, Name: in.Ref.Name, UID: in.UID}
	if !owner.Complete() {
		return owner, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("service inventory: the request names no DependentAPI (namespace %q, name %q, uid %q): no record can be shown to be its own", owner.Namespace, owner.Name, owner.UID),
			ErrTypeInventoryRejected, nil)
	}
	return owner, nil
}

// find lists the records carrying the owner's uid (the inventory filters
// on one characteristic value) and keeps those whose owner
// characteristics are all the owner's.
func (s *ServiceInventory) find(ctx context.Context, owner dependency.Owner) (string, []string, error) {
	var services []map[string]any
	q := url.Values{"serviceCharacteristic.value": {owner.UID}}
	if err := s.do(ctx, http.MethodGet, "/service?"+q.Encode(), nil, &services, http.StatusOK); err != nil {
		return "", nil, err
	}
	keep, dups := dependency.Records(services, owner)
	return keep, dups, nil
}

func (s *ServiceInventory) delete(ctx context.Context, id string) error {
	err := s.do(ctx, http.MethodDelete, "/service/"+url.PathEscape(id), nil, nil, http.StatusNoContent, http.StatusOK, http.StatusNotFound)
	return err
}

// do sends one request and decodes the answer. A refused connection or a
// 5xx is retryable; any other unexpected status is not.
func (s *ServiceInventory) do(ctx context.Context, method, path string, body, out any, ok ...int) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return fmt.Errorf("service inventory: encode %s %s: %w", method, path, err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimSuffix(s.URL, "/")+path, rd)
	if err != nil {
		return fmt.Errorf("service inventory: %s %s: %w", method, path, err)
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		if method == http.MethodPatch {
			req.Header.Set("Content-Type", "application/merge-patch+json")
		} else {
			req.Header.Set("Content-Type", "application/json")
		}
	}
	client := s.HTTP
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return unreachable(s.URL, method, path, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	for _, code := range ok {
		if resp.StatusCode == code {
			if out != nil && len(data) > 0 && resp.StatusCode != http.StatusNotFound {
				if err := json.Unmarshal(data, out); err != nil {
					return fmt.Errorf("service inventory: decode %s %s: %w", method, path, err)
				}
			}
			return nil
		}
	}
	msg := fmt.Sprintf("service inventory: %s %s answered %d: %s", method, path, resp.StatusCode, strings.TrimSpace(string(data)))
	if resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests {
		return fmt.Errorf("%s", msg)
	}
	return temporal.NewNonRetryableApplicationError(msg, ErrTypeInventoryRejected, nil)
}

// unreachable is a request that got no answer, worded for the
// DependentAPI's status and Event: it names the inventory's host, so the
// reader knows which address to check, and drops the URL net/http puts in
// its error, which may carry a user name or password. The cause stays
// wrapped for errors.Is.
func unreachable(base, method, path string, err error) error {
	host := "(unparsable address)"
	if u, perr := url.Parse(base); perr == nil && u.Host != "" {
		host = u.Host
	}
	cause := err
	var uerr *url.Error
	if errors.As(err, &uerr) {
		cause = uerr.Err
	}
	return fmt.Errorf("service inventory at %s unreachable: %s %s: %w", host, method, strings.SplitN(path, "?", 2)[0], cause)
}
