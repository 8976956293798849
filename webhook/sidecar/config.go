package sidecar

// ConfigurationName is the MutatingWebhookConfiguration's name.
const ConfigurationName = "odaflow-secrets-sidecar"

// WebhookName is the webhook's name inside it.
const WebhookName = "sidecar.secretsmanagement.odaflow.oda.tmforum.org"
