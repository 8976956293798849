// Package sidecar is the mutating admission webhook that adds the secrets
// sidecar (`smansidecar`, oda-behaviour §2.6) to pods a SecretsManagement
// selects. It mounts on odaflow's webhook server at Path.
//
// Failure policy: Fail. A pod labelled for the sidecar that starts without
// it runs silently without its secrets (the Canvas's Ignore policy, §5.5.7);
// with Fail the pod's creation is refused and its ReplicaSet retries with
// backoff until the webhook answers. The blast radius is kept to those
// pods: the configuration's objectSelector matches only pods labelled
// `oda.tmforum.org/secretsmanagement=sidecar`, and its namespaceSelector
// leaves out kube-system and odaflow's own namespace, so the webhook being
// down never blocks unrelated pods, nor odaflow's own restart.
//
// A labelled pod that no SecretsManagement selects is denied with the
// reason (a Helm release usually creates the Deployment before the
// Component's SecretsManagement exists; the ReplicaSet's retries then
// succeed once it does). Until its cache of SecretsManagements is synced
// the handler answers 503, which the Fail policy turns into a retry rather
// than a wrong denial.
package sidecar

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/odaflow/odaflow/secrets"
)

// Path is where the webhook server serves the handler.
const Path = "/mutate-pod"

// Entry is one SecretsManagement as the webhook needs it.
type Entry struct {
	Namespace string
	Name      string
	Spec      secrets.Spec
	// Err is set when the spec is invalid: pods it would select are
	// denied with this reason.
	Err error
}

// Lister looks SecretsManagements up (from a cache: the webhook answers
// within the apiserver's timeout without calling it).
type Lister interface {
	// Get returns SecretsManagement namespace/name.
	Get(namespace, name string) (Entry, bool)
	// List returns the SecretsManagements of a namespace.
	List(namespace string) []Entry
	// HasSynced reports whether the cache is complete.
	HasSynced() bool
}

// Handler serves AdmissionReview v1 requests for pods.
type Handler struct {
	lister Lister
	cfg    secrets.SidecarConfig
	log    *slog.Logger
}

// NewHandler builds the handler.
func NewHandler(l Lister, cfg secrets.SidecarConfig, log *slog.Logger) *Handler {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Handler{lister: l, cfg: cfg, log: log}
}

// maxBody bounds a request: the apiserver sends at most a few MB of pod.
const maxBody = 8 << 20

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST an AdmissionReview", http.StatusMethodNotAllowed)
		return
	}
	if !h.lister.HasSynced() {
		// A 503 makes the apiserver apply the failure policy (Fail: the
		// pod is retried), never a wrong "no SecretsManagement" denial.
		http.Error(w, "SecretsManagement cache not synced yet", http.StatusServiceUnavailable)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
	if err != nil {
		http.Error(w, "read body: "+err.Error(), http.StatusBadRequest)
		return
	}
	var review admissionv1.AdmissionReview
	if err := json.Unmarshal(body, &review); err != nil || review.Request == nil {
		http.Error(w, "body is not an AdmissionReview with a request", http.StatusBadRequest)
		return
	}
	resp := h.Review(review.Request)
	out := admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Response: resp,
	}
	data, err := json.Marshal(out)
	if err != nil {
		http.Error(w, "encode response: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(data)
}

// Review decides one admission request.
func (h *Handler) Review(req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	resp := &admissionv1.AdmissionResponse{UID: req.UID, Allowed: true}
	if req.Kind.Kind != "Pod" || req.Operation != admissionv1.Create || req.SubResource != "" {
		return resp
	}
	var pod corev1.Pod
	if err := json.Unmarshal(req.Object.Raw, &pod); err != nil {
		return deny(resp, http.StatusBadRequest, "cannot decode the pod: "+err.Error())
	}
	if pod.Namespace == "" {
		pod.Namespace = req.Namespace // not yet defaulted at admission
	}
	info := secrets.PodInfoOf(&pod)
	if !info.WantsSidecar() || info.HasSidecar() {
		return resp
	}
	e, msg := h.find(info)
	if msg != "" {
		h.log.Info("pod denied: no secrets sidecar for it", "namespace", info.Namespace, "pod", podName(info), "reason", msg)
		return deny(resp, http.StatusBadRequest, msg)
	}
	ops := secrets.SidecarPatch(&pod, secrets.NamesFor(e.Namespace, e.Name), e.Spec, h.cfg)
	patch, err := json.Marshal(ops)
	if err != nil {
		return deny(resp, http.StatusInternalServerError, "encode the patch: "+err.Error())
	}
	pt := admissionv1.PatchTypeJSONPatch
	resp.Patch, resp.PatchType = patch, &pt
	resp.AuditAnnotations = map[string]string{"secretsmanagement": e.Namespace + "/" + e.Name}
	return resp
}

// find picks the pod's SecretsManagement: the one named after its
// Component label (as in the Canvas), otherwise the single one in its
// namespace whose selector matches it. It returns a denial message when
// there is none, or more than one.
func (h *Handler) find(info secrets.PodInfo) (Entry, string) {
	label := "pod label " + secrets.LabelSecretsManagement + "=" + secrets.LabelSidecarValue
	if comp, ok := info.Labels[secrets.LabelComponentName]; ok {
		name := strings.ToLower(comp)
		e, ok := h.lister.Get(info.Namespace, name)
		if !ok {
			return e, fmt.Sprintf("%s asks for the secrets sidecar, but SecretsManagement %s/%s (from label %s) does not exist", label, info.Namespace, name, secrets.LabelComponentName)
		}
		if e.Err != nil {
			return e, fmt.Sprintf("SecretsManagement %s/%s is invalid: %v", e.Namespace, e.Name, e.Err)
		}
		if ok, why := e.Spec.PodSelector.Matches(info); !ok {
			return e, fmt.Sprintf("SecretsManagement %s/%s does not select this pod: %s", e.Namespace, e.Name, why)
		}
		return e, ""
	}
	var found []Entry
	for _, e := range h.lister.List(info.Namespace) {
		if e.Err == nil && secrets.Selects(e.Name, e.Spec, info) {
			found = append(found, e)
		}
	}
	switch len(found) {
	case 0:
		return Entry{}, fmt.Sprintf("%s asks for the secrets sidecar, but no SecretsManagement in namespace %s selects it (add label %s to name its Component)", label, info.Namespace, secrets.LabelComponentName)
	case 1:
		return found[0], ""
	}
	names := make([]string, len(found))
	for i, e := range found {
		names[i] = e.Name
	}
	return Entry{}, fmt.Sprintf("SecretsManagements %s all select this pod: add label %s to say which", strings.Join(names, ", "), secrets.LabelComponentName)
}

func podName(p secrets.PodInfo) string {
	if p.Name != "" {
		return p.Name
	}
	return p.GenerateName + "*"
}

func deny(resp *admissionv1.AdmissionResponse, code int32, msg string) *admissionv1.AdmissionResponse {
	resp.Allowed = false
	resp.Result = &metav1.Status{Status: metav1.StatusFailure, Code: code, Reason: metav1.StatusReasonBadRequest, Message: msg}
	if code >= 500 {
		resp.Result.Reason = metav1.StatusReasonInternalError
	}
	return resp
}
