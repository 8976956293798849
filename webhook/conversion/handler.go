package conversion

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"
)

// MaxRequestBytes caps a ConversionReview body. The API server batches a list
// into one review, so this has to allow many Components, but an unbounded body
// would let one client exhaust the webhook's memory.
const MaxRequestBytes = 10 << 20

// NewHandler serves the conversion webhook: POST /convert, and POST / which is
// the path the Canvas CRD's clientConfig points at. Any other method gets 405.
//
// A review that can be decoded is always answered with 200 and a
// ConversionReview: Success with every object converted to
// request.desiredAPIVersion, or Failure with a message naming the first object
// that could not be converted (the API server needs all or nothing). A body
// that is not a ConversionReview gets 400 (413 when it is too large) with a
// plain-text reason.
func NewHandler(logger *slog.Logger) http.Handler {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	h := &handler{log: logger}
	mux := http.NewServeMux()
	mux.Handle("/convert", h)
	mux.Handle("/{$}", h)
	return mux
}

type handler struct {
	log *slog.Logger
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "method "+r.Method+" not allowed: POST a ConversionReview", http.StatusMethodNotAllowed)
		return
	}
	review, status, err := decodeReview(w, r)
	if err != nil {
		h.log.Warn("rejected conversion request", "status", status, "error", err, "remote", r.RemoteAddr)
		http.Error(w, err.Error(), status)
		return
	}

	start := time.Now()
	response := h.convert(review.Request)
	attrs := []any{
		"uid", response.UID,
		"desiredAPIVersion", review.Request.DesiredAPIVersion,
		"objects", len(review.Request.Objects),
		"duration", time.Since(start),
	}
	if response.Result.Status == StatusFailure {
		h.log.Warn("conversion failed", append(attrs, "error", response.Result.Message)...)
	} else {
		// Debug: the API server converts on every read at a non-storage
		// version, so successes are routine.
		h.log.Debug("converted", attrs...)
	}

	apiVersion := review.APIVersion
	if apiVersion == "" {
		apiVersion = ReviewAPIVersionV1
	}
	body, err := json.Marshal(ConversionReview{APIVersion: apiVersion, Kind: ConversionReviewKind, Response: response})
	if err != nil {
		// Only reachable if a converted object cannot be encoded, which the
		// round trip through encoding/json rules out; answer anyway.
		h.log.Error("encoding ConversionReview", "error", err)
		http.Error(w, "encoding ConversionReview: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}

// decodeReview reads and checks the ConversionReview in the request body. On
// error it returns the HTTP status to answer with.
func decodeReview(w http.ResponseWriter, r *http.Request) (*ConversionReview, int, error) {
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxRequestBytes))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return nil, http.StatusRequestEntityTooLarge,
				fmt.Errorf("request body larger than %d bytes", tooLarge.Limit)
		}
		return nil, http.StatusBadRequest, fmt.Errorf("reading request body: %w", err)
	}
	var review ConversionReview
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&review); err != nil {
		return nil, http.StatusBadRequest, fmt.Errorf("decoding ConversionReview: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, http.StatusBadRequest, errors.New("decoding ConversionReview: unexpected data after the JSON object")
	}
	switch {
	case review.Kind != "" && review.Kind != ConversionReviewKind:
		return nil, http.StatusBadRequest, fmt.Errorf("expected kind %s, got %q", ConversionReviewKind, review.Kind)
	case review.APIVersion != "" && review.APIVersion != ReviewAPIVersionV1 && review.APIVersion != ReviewAPIVersionV1beta1:
		return nil, http.StatusBadRequest, fmt.Errorf("unsupported ConversionReview apiVersion %q (want %s)", review.APIVersion, ReviewAPIVersionV1)
	case review.Request == nil:
		return nil, http.StatusBadRequest, errors.New("ConversionReview has no request")
	}
	return &review, http.StatusOK, nil
}

// convert answers one request: every object converted, or a failure.
func (h *handler) convert(req *ConversionRequest) *ConversionResponse {
	fail := func(format string, args ...any) *ConversionResponse {
		return &ConversionResponse{
			UID:    req.UID,
			Result: Status{Status: StatusFailure, Message: fmt.Sprintf(format, args...)},
		}
	}
	if versionIndex(req.DesiredAPIVersion) < 0 {
		return fail("desired apiVersion %q is not supported (supported: %v)", req.DesiredAPIVersion, versions)
	}
	converted := make([]json.RawMessage, 0, len(req.Objects))
	for i, raw := range req.Objects {
		var obj map[string]any
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber() // keep numbers exactly as sent (no float64 rounding)
		if err := dec.Decode(&obj); err != nil {
			return fail("objects[%d]: not a JSON object: %v", i, err)
		}
		out, err := Convert(obj, req.DesiredAPIVersion)
		if err != nil {
			return fail("objects[%d] %s: %v", i, objectName(obj), err)
		}
		h.log.Debug("converted object", "object", objectName(obj), "from", obj["apiVersion"], "to", req.DesiredAPIVersion)
		data, err := json.Marshal(out)
		if err != nil {
			return fail("objects[%d] %s: encoding: %v", i, objectName(obj), err)
		}
		converted = append(converted, data)
	}
	return &ConversionResponse{
		UID:              req.UID,
		ConvertedObjects: converted,
		Result:           Status{Status: StatusSuccess},
	}
}

// objectName is "<namespace>/<name>" (or "<name>") for messages.
func objectName(obj map[string]any) string {
	meta, _ := obj["metadata"].(map[string]any)
	name, _ := meta["name"].(string)
	if ns, _ := meta["namespace"].(string); ns != "" {
		name = ns + "/" + name
	}
	if name == "" {
		return "(unnamed)"
	}
	return fmt.Sprintf("%q", name)
}
