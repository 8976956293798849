{{/* Chart name, overridable. */}}
{{- define "odaflow.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Fully qualified app name, truncated so that "<fullname>-watcher" stays within
63 characters.
*/}}
{{- define "odaflow.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 55 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 55 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 55 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "odaflow.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels on every object. */}}
{{- define "odaflow.labels" -}}
helm.sh/chart: {{ include "odaflow.chart" . }}
app.kubernetes.io/name: {{ include "odaflow.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: odaflow
{{- end }}

{{/* Selector labels of one component: include with (dict "ctx" $ "component" "worker"). */}}
{{- define "odaflow.selectorLabels" -}}
app.kubernetes.io/name: {{ include "odaflow.name" .ctx }}
app.kubernetes.io/instance: {{ .ctx.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{/* All labels of one component: include with (dict "ctx" $ "component" "worker"). */}}
{{- define "odaflow.componentLabels" -}}
{{ include "odaflow.labels" .ctx }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{/* Service account name of one component: include with (dict "ctx" $ "component" "worker"). */}}
{{- define "odaflow.serviceAccountName" -}}
{{- $sa := (index .ctx.Values .component).serviceAccount }}
{{- if $sa.create }}
{{- default (printf "%s-%s" (include "odaflow.fullname" .ctx) .component) $sa.name }}
{{- else }}
{{- default "default" $sa.name }}
{{- end }}
{{- end }}

{{/*
The umbrella's registry: global.image.registry (the Canvas writes it with a
trailing slash, "myreg.io/"), or global.imageRegistry, the Bitnami spelling.
Empty when neither is set.
*/}}
{{- define "odaflow.globalRegistry" -}}
{{- $global := .Values.global | default dict }}
{{- if and (kindIs "map" $global.image) $global.image.registry }}
{{- trimSuffix "/" $global.image.registry }}
{{- else if $global.imageRegistry }}
{{- trimSuffix "/" $global.imageRegistry }}
{{- end }}
{{- end }}

{{/*
Image reference. Follows the Canvas umbrella convention: the global registry,
when set, wins over image.registry. A digest wins over the tag; the tag
defaults to the chart's appVersion and, as in the Canvas's charts, gets
"-<prereleaseSuffix>" appended when prereleaseSuffix is set.
*/}}
{{- define "odaflow.image" -}}
{{- $registry := include "odaflow.globalRegistry" . | default .Values.image.registry }}
{{- $ref := .Values.image.repository }}
{{- if $registry }}
{{- $ref = printf "%s/%s" (trimSuffix "/" $registry) .Values.image.repository }}
{{- end }}
{{- if .Values.image.digest }}
{{- printf "%s@%s" $ref .Values.image.digest }}
{{- else }}
{{- $tag := default .Chart.AppVersion .Values.image.tag | toString }}
{{- with .Values.prereleaseSuffix }}
{{- $tag = printf "%s-%s" $tag (toString .) }}
{{- end }}
{{- printf "%s:%s" $ref $tag }}
{{- end }}
{{- end }}

{{/*
Pull policy of odaflow's image: Always with a prereleaseSuffix (a
pre-release tag is pushed again under the same name, which is why the Canvas's
charts pull it every time), image.pullPolicy otherwise.
*/}}
{{- define "odaflow.imagePullPolicy" -}}
{{- if .Values.prereleaseSuffix }}Always{{ else }}{{ .Values.image.pullPolicy }}{{ end }}
{{- end }}

{{/*
The secrets sidecar's image: webhook.sidecarInjection.image under the global
registry when one is set, as the Canvas prefixes its sidecar image.
*/}}
{{- define "odaflow.sidecarImage" -}}
{{- $image := required "webhook.sidecarInjection.image is required" .Values.webhook.sidecarInjection.image }}
{{- with include "odaflow.globalRegistry" . }}
{{- printf "%s/%s" . $image }}
{{- else }}
{{- $image }}
{{- end }}
{{- end }}

{{/*
imagePullSecrets: global.imagePullSecrets followed by imagePullSecrets, each
entry a name or an object {name: ...}; duplicates removed.
*/}}
{{- define "odaflow.imagePullSecrets" -}}
{{- $names := list }}
{{- $global := list }}
{{- if .Values.global }}{{ $global = .Values.global.imagePullSecrets | default list }}{{ end }}
{{- range (concat $global (.Values.imagePullSecrets | default list)) }}
{{- if kindIs "map" . }}
{{- $names = append $names .name }}
{{- else }}
{{- $names = append $names . }}
{{- end }}
{{- end }}
{{- with ($names | uniq) }}
imagePullSecrets:
{{- range . }}
  - name: {{ . | quote }}
{{- end }}
{{- end }}
{{- end }}

{{/*
Comma-separated watched namespaces (empty = all). monitoredNamespaces, the
Canvas operators' comma-separated string, wins when it is not empty, so that
Canvas values given as they are mean what they meant to the Canvas;
otherwise the watchNamespaces list.
*/}}
{{- define "odaflow.namespaces" -}}
{{- $list := .Values.watchNamespaces | default list }}
{{- with .Values.monitoredNamespaces }}
{{- $list = list }}
{{- range (splitList "," .) }}
{{- with trim . }}{{ $list = append $list . }}{{ end }}
{{- end }}
{{- end }}
{{- join "," $list }}
{{- end }}

{{/*
The Service Inventory's API base (--service-inventory-url), empty for none.
serviceInventory.url wins; otherwise, when the Canvas's values enable its
Info service (canvas-info-service.enabled, the umbrella's condition), its
serverUrl: the Canvas's dependency operator sends its TMF638 requests to
<serverUrl>/service (CANVAS_INFO_ENDPOINT), so odaflow's records land where
the Canvas's components look them up.
*/}}
{{- define "odaflow.serviceInventoryURL" -}}
{{- $info := index .Values "canvas-info-service" | default dict }}
{{- if .Values.serviceInventory.url }}
{{- .Values.serviceInventory.url }}
{{- else if and $info.enabled $info.serverUrl }}
{{- trimSuffix "/" $info.serverUrl }}
{{- end }}
{{- end }}

{{/* The watched namespaces as a list (odaflow.namespaces split). */}}
{{- define "odaflow.namespaceList" -}}
{{- compact (splitList "," (include "odaflow.namespaces" .)) | toJson }}
{{- end }}

{{/* true when any watched namespace is a glob. */}}
{{- define "odaflow.namespacesHaveGlob" -}}
{{- $glob := false }}
{{- range (include "odaflow.namespaceList" . | fromJsonArray) }}
{{- if regexMatch "[*?\\[]" . }}{{ $glob = true }}{{ end }}
{{- end }}
{{- $glob }}
{{- end }}

{{/* Validates the rbac.scope value against watchNamespaces. */}}
{{- define "odaflow.validateRBACScope" -}}
{{- if not (has .Values.rbac.scope (list "cluster" "namespaced")) }}
{{- fail (printf "rbac.scope must be cluster or namespaced, not %q" .Values.rbac.scope) }}
{{- end }}
{{- if eq .Values.rbac.scope "namespaced" }}
{{- if not (include "odaflow.namespaces" .) }}
{{- fail "rbac.scope=namespaced needs watched namespaces (watchNamespaces or monitoredNamespaces)" }}
{{- end }}
{{- if eq (include "odaflow.namespacesHaveGlob" .) "true" }}
{{- fail "rbac.scope=namespaced cannot grant access to glob namespaces; list literal names or use rbac.scope=cluster" }}
{{- end }}
{{- end }}
{{- end }}

{{/*
Environment and arguments common to the worker and the watcher. The odaflow
binary reads each flag from the env var named here (see README.md).
*/}}
{{- define "odaflow.commonEnv" -}}
- name: ODAFLOW_TEMPORAL_ADDRESS
  value: {{ required "temporal.address is required" .Values.temporal.address | quote }}
- name: ODAFLOW_TEMPORAL_NAMESPACE
  value: {{ .Values.temporal.namespace | quote }}
- name: ODAFLOW_TASK_QUEUE
  value: {{ .Values.temporal.taskQueue | quote }}
- name: ODAFLOW_NAMESPACES
  value: {{ include "odaflow.namespaces" . | quote }}
- name: ODAFLOW_HTTP_ADDRESS
  value: ":8080"
- name: ODAFLOW_LOG_LEVEL
  value: {{ .Values.logLevel | quote }}
{{- end }}

{{/* Temporal TLS and API-key flags (files only: secrets never go to env). */}}
{{- define "odaflow.temporalArgs" -}}
{{- if .Values.temporal.tls.enabled }}
{{- $_ := required "temporal.tls.existingSecret is required when temporal.tls.enabled" .Values.temporal.tls.existingSecret }}
- --temporal-tls-cert=/var/run/secrets/odaflow/temporal-tls/tls.crt
- --temporal-tls-key=/var/run/secrets/odaflow/temporal-tls/tls.key
{{- with .Values.temporal.tls.caKey }}
- --temporal-tls-ca=/var/run/secrets/odaflow/temporal-tls/{{ . }}
{{- end }}
{{- with .Values.temporal.tls.serverName }}
- --temporal-tls-server-name={{ . }}
{{- end }}
{{- end }}
{{- with .Values.temporal.apiKey.existingSecret }}
- --temporal-api-key-file=/var/run/secrets/odaflow/temporal-api-key/{{ $.Values.temporal.apiKey.key }}
{{- end }}
{{- include "odaflow.payloadKeyArgs" . }}
{{- include "odaflow.statusKeyArgs" . }}
{{- end }}

{{/* The status seal's key (--status-key-file): worker and watcher, the
same key in both (docs/tenancy.md). */}}
{{- define "odaflow.statusKeySecret" -}}
{{- default (printf "%s-status-key" (include "odaflow.fullname" .)) .Values.statusProtection.existingSecret }}
{{- end }}

{{- define "odaflow.statusKeyArgs" -}}
{{- if .Values.statusProtection.seal }}
- --status-key-file=/var/run/secrets/odaflow/status-key/{{ .Values.statusProtection.key }}
{{- end }}
{{- end }}

{{/* The payload codec's flags: worker, watcher and codec server. */}}
{{- define "odaflow.payloadKeyArgs" -}}
{{- if .Values.payloadEncryption.existingSecret }}
- --payload-keys-dir=/var/run/secrets/odaflow/payload-keys
{{- with .Values.payloadEncryption.currentKeyID }}
- --payload-key-id={{ . }}
{{- end }}
{{- end }}
{{- end }}

{{- define "odaflow.payloadKeyVolumes" -}}
{{- with .Values.payloadEncryption.existingSecret }}
- name: payload-keys
  secret:
    secretName: {{ . }}
    defaultMode: 0440
{{- end }}
{{- end }}

{{- define "odaflow.payloadKeyVolumeMounts" -}}
{{- if .Values.payloadEncryption.existingSecret }}
- name: payload-keys
  mountPath: /var/run/secrets/odaflow/payload-keys
  readOnly: true
{{- end }}
{{- end }}

{{- define "odaflow.temporalVolumes" -}}
{{- if .Values.temporal.tls.enabled }}
- name: temporal-tls
  secret:
    secretName: {{ .Values.temporal.tls.existingSecret }}
    defaultMode: 0440
{{- end }}
{{- with .Values.temporal.apiKey.existingSecret }}
- name: temporal-api-key
  secret:
    secretName: {{ . }}
    defaultMode: 0440
{{- end }}
{{- include "odaflow.payloadKeyVolumes" . }}
{{- if .Values.statusProtection.seal }}
- name: status-key
  secret:
    secretName: {{ include "odaflow.statusKeySecret" . }}
    defaultMode: 0440
{{- end }}
{{- end }}

{{- define "odaflow.temporalVolumeMounts" -}}
{{- if .Values.temporal.tls.enabled }}
- name: temporal-tls
  mountPath: /var/run/secrets/odaflow/temporal-tls
  readOnly: true
{{- end }}
{{- if .Values.temporal.apiKey.existingSecret }}
- name: temporal-api-key
  mountPath: /var/run/secrets/odaflow/temporal-api-key
  readOnly: true
{{- end }}
{{- include "odaflow.payloadKeyVolumeMounts" . }}
{{- if .Values.statusProtection.seal }}
- name: status-key
  mountPath: /var/run/secrets/odaflow/status-key
  readOnly: true
{{- end }}
{{- end }}

{{/* Pod annotations for Prometheus scraping of /metrics on the http port. */}}
{{- define "odaflow.metricsAnnotations" -}}
{{- if .Values.metrics.podAnnotations }}
prometheus.io/scrape: "true"
prometheus.io/port: "8080"
prometheus.io/path: /metrics
{{- end }}
{{- end }}

{{/* Container port, probes and security context shared by both Deployments. */}}
{{- define "odaflow.containerCommon" -}}
ports:
  - name: http
    containerPort: 8080
    protocol: TCP
# /healthz answers once the process has started; liveness and readiness
# begin only after it has.
startupProbe:
  httpGet:
    path: /healthz
    port: http
  {{- toYaml .Values.probes.startup | nindent 2 }}
livenessProbe:
  httpGet:
    path: /healthz
    port: http
  {{- toYaml .Values.probes.liveness | nindent 2 }}
readinessProbe:
  httpGet:
    path: /readyz
    port: http
  {{- toYaml .Values.probes.readiness | nindent 2 }}
securityContext:
  {{- toYaml .Values.securityContext | nindent 2 }}
{{- end }}

{{/* namespace/name of the Keycloak admin Secret (--keycloak-admin-secret). */}}
{{- define "odaflow.keycloakAdminSecret" -}}
{{- $name := required "keycloak.adminSecret.name (an existing Secret with username and password) is required when keycloak.enabled" .Values.keycloak.adminSecret.name }}
{{- printf "%s/%s" (.Values.keycloak.adminSecret.namespace | default .Release.Namespace) $name }}
{{- end }}

{{/*
Vault settings the worker and the webhook share: the address, the sidecars'
kubernetes auth mount and TLS verification. Flag names: see
cmd/odaflow/webhook.go (webhook) and the worker's Vault flags.
*/}}
{{- define "odaflow.vaultEnv" -}}
- name: ODAFLOW_VAULT_ADDRESS
  value: {{ required "vault.address is required when vault.enabled" .Values.vault.address | quote }}
- name: ODAFLOW_VAULT_AUTH_PATH
  value: {{ .Values.vault.sidecarAuthPath | quote }}
- name: ODAFLOW_VAULT_SKIP_VERIFY
  value: {{ .Values.vault.skipVerify | toString | quote }}
{{- end }}

{{/* --listener-base-url: identityListener.baseURL, else the worker Service. */}}
{{- define "odaflow.listenerBaseURL" -}}
{{- if .Values.identityListener.baseURL -}}
{{- .Values.identityListener.baseURL -}}
{{- else -}}
{{- printf "http://%s-worker.%s.svc:%v" (include "odaflow.fullname" .) .Release.Namespace .Values.identityListener.service.port -}}
{{- end -}}
{{- end }}
