{{/* Names and labels. */}}

{{- define "hindsight.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "hindsight.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "hindsight.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "hindsight.selectorLabels" -}}
app.kubernetes.io/name: {{ include "hindsight.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "hindsight.labels" -}}
helm.sh/chart: {{ include "hindsight.chart" . }}
{{ include "hindsight.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/component: gateway
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "hindsight.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "hindsight.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "hindsight.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}
{{- end }}

{{/*
The Prometheus `job` label of the gateway's series: the ServiceMonitor's jobLabel reads it from the Service's
app.kubernetes.io/name label (hindsight.selectorLabels), so it is the chart name unless nameOverride changes it.
The shipped alert rules select job="hindsight", as does Compose's scrape config (deploy/prometheus.yml).
*/}}
{{- define "hindsight.jobLabelKey" -}}app.kubernetes.io/name{{- end }}
{{- define "hindsight.job" -}}{{ include "hindsight.name" . }}{{- end }}

{{- define "hindsight.secretName" -}}
{{- default (include "hindsight.fullname" .) .Values.auth.existingSecret }}
{{- end }}

{{/* Where the Secret's keys are mounted as files, the gateway's HINDSIGHT_SECRETS_DIR. */}}
{{- define "hindsight.secretsDir" -}}/etc/hindsight/secrets{{- end }}

{{/* True ("true") when both server backends are configured, i.e. the gateways hold no state. */}}
{{- define "hindsight.external" -}}
{{- if and .Values.config.qdrantUrl .Values.config.redisUrl }}true{{ end }}
{{- end }}

{{/*
Refuse configurations that would run but lose or split data:
- the embedded mode keeps vectors, working memory and rate limits inside one process, so several replicas
  (or an HPA) without both server URLs would each hold a different memory;
- exactly one token key source (existingSecret, jwtSecret, jwtPublicKey, jwksUrl): never a generated one, which
  offline renders (helm template, Argo CD, Flux) would regenerate every time;
- a ReadWriteOnce data volume only makes sense for the embedded single replica.
*/}}
{{- define "hindsight.validate" -}}
{{- $external := include "hindsight.external" . }}
{{- if and (not $external) (or (gt (int .Values.replicaCount) 1) .Values.autoscaling.enabled) }}
{{- fail "hindsight: the embedded mode (config.qdrantUrl or config.redisUrl empty) is single-replica only: set both config.qdrantUrl and config.redisUrl, or set replicaCount=1 and autoscaling.enabled=false" }}
{{- end }}
{{- $keys := 0 }}
{{- range (list .Values.auth.jwtSecret .Values.auth.jwtPublicKey .Values.auth.jwksUrl) }}
{{- if . }}{{ $keys = add1 $keys }}{{ end }}
{{- end }}
{{- if and (not .Values.auth.existingSecret) (eq $keys 0) }}
{{- fail "hindsight: no token key: set auth.existingSecret (the name of a Secret holding HINDSIGHT_JWT_SECRET, for GitOps) or one of auth.jwtSecret (HS256, at least 32 characters), auth.jwtPublicKey, auth.jwksUrl. The chart does not generate a secret: offline renders (helm template, Argo CD) would make a new one every time" }}
{{- end }}
{{- if gt $keys 1 }}
{{- fail "hindsight: set at most one of auth.jwtSecret, auth.jwtPublicKey and auth.jwksUrl" }}
{{- end }}
{{- if and .Values.auth.existingSecret (gt $keys 0) }}
{{- fail "hindsight: auth.existingSecret replaces auth.jwtSecret / jwtPublicKey / jwksUrl: set one or the other" }}
{{- end }}
{{- if and .Values.auth.jwtSecret (lt (len .Values.auth.jwtSecret) 32) }}
{{- fail "hindsight: auth.jwtSecret must be at least 32 characters" }}
{{- end }}
{{- if hasKey .Values.config.extraEnv "HINDSIGHT_MAX_REQUEST_BYTES" }}
{{- fail "hindsight: set config.maxRequestBytes, not config.extraEnv.HINDSIGHT_MAX_REQUEST_BYTES: the Ingress body limit follows config.maxRequestBytes" }}
{{- end }}
{{- if and .Values.persistence.enabled (or (gt (int .Values.replicaCount) 1) .Values.autoscaling.enabled) }}
{{- fail "hindsight: persistence is for the embedded single replica (replicaCount=1, autoscaling.enabled=false); with Qdrant and Redis servers the gateways are stateless" }}
{{- end }}
{{- end }}
