package sidecar

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/odaflow/odaflow/secrets"
)

// ConfigurationName is the MutatingWebhookConfiguration's name.
const ConfigurationName = "odaflow-secrets-sidecar"

// WebhookName is the webhook's name inside it.
const WebhookName = "sidecar.secretsmanagement.odaflow.oda.tmforum.org"

// Configuration is the MutatingWebhookConfiguration of the sidecar webhook
// (the chart renders the same): pods on CREATE, failure policy Fail,
// scoped by the objectSelector to pods labelled for the sidecar and by the
// namespaceSelector away from excludeNamespaces (kube-system and odaflow's
// own namespace, at least).
func Configuration(client admissionregistrationv1.WebhookClientConfig, excludeNamespaces []string) *admissionregistrationv1.MutatingWebhookConfiguration {
	fail := admissionregistrationv1.Fail
	none := admissionregistrationv1.SideEffectClassNone
	equivalent := admissionregistrationv1.Equivalent
	// IfNeeded: when another webhook (Istio's) adds containers after ours,
	// ours runs again; the patch is empty once the sidecar is there.
	reinvoke := admissionregistrationv1.IfNeededReinvocationPolicy
	wh := admissionregistrationv1.MutatingWebhook{
		Name:                    WebhookName,
		ClientConfig:            client,
		AdmissionReviewVersions: []string{"v1"},
		SideEffects:             &none,
		FailurePolicy:           &fail,
		MatchPolicy:             &equivalent,
		ReinvocationPolicy:      &reinvoke,
		TimeoutSeconds:          ptr.To(int32(5)),
		Rules: []admissionregistrationv1.RuleWithOperations{{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
			Rule: admissionregistrationv1.Rule{
				APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"},
				Scope: ptr.To(admissionregistrationv1.NamespacedScope),
			},
		}},
		ObjectSelector: &metav1.LabelSelector{MatchLabels: map[string]string{secrets.LabelSecretsManagement: secrets.LabelSidecarValue}},
	}
	if len(excludeNamespaces) > 0 {
		wh.NamespaceSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
			Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpNotIn, Values: excludeNamespaces,
		}}}
	}
	return &admissionregistrationv1.MutatingWebhookConfiguration{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "MutatingWebhookConfiguration"},
		ObjectMeta: metav1.ObjectMeta{Name: ConfigurationName},
		Webhooks:   []admissionregistrationv1.MutatingWebhook{wh},
	}
}
