package conversion

import "encoding/json"

// The ConversionReview wire types of apiextensions.k8s.io/v1 (the same JSON as
// v1beta1). They are declared here, field for field with the JSON names of
// k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1, so that the
// webhook does not depend on the apiextensions module.

// ConversionReviewKind is the kind of a ConversionReview.
const ConversionReviewKind = "ConversionReview"

// ConversionReview API versions the handler understands; the answer uses the
// version of the request.
const (
	ReviewAPIVersionV1      = "apiextensions.k8s.io/v1"
	ReviewAPIVersionV1beta1 = "apiextensions.k8s.io/v1beta1"
)

// ConversionReview is sent by the API server with Request set and answered
// with Response set.
type ConversionReview struct {
	APIVersion string              `json:"apiVersion,omitempty"`
	Kind       string              `json:"kind,omitempty"`
	Request    *ConversionRequest  `json:"request,omitempty"`
	Response   *ConversionResponse `json:"response,omitempty"`
}

// ConversionRequest asks for Objects to be converted to DesiredAPIVersion.
type ConversionRequest struct {
	UID               string            `json:"uid"`
	DesiredAPIVersion string            `json:"desiredAPIVersion"`
	Objects           []json.RawMessage `json:"objects"`
}

// ConversionResponse carries the converted objects, in request order, or a
// failure in Result.
type ConversionResponse struct {
	UID              string            `json:"uid"`
	ConvertedObjects []json.RawMessage `json:"convertedObjects"`
	Result           Status            `json:"result"`
}

// Status is the subset of metav1.Status a conversion result uses.
type Status struct {
	Status  string `json:"status,omitempty"`
	Message string `json:"message,omitempty"`
	Reason  string `json:"reason,omitempty"`
	Code    int32  `json:"code,omitempty"`
}

// Values of Status.Status (metav1.StatusSuccess and metav1.StatusFailure).
const (
	StatusSuccess = "Success"
	StatusFailure = "Failure"
)
