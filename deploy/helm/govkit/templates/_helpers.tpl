{{/* Chart name, release-scoped full name (63 characters at most). */}}
{{- define "govkit.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "govkit.fullname" -}}
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

{{/* Selector labels of one component: docplatform, notify-primary, notify-secondary. */}}
{{- define "govkit.selectorLabels" -}}
app.kubernetes.io/name: {{ include "govkit.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{- define "govkit.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .root.Chart.Name .root.Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "govkit.selectorLabels" . }}
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
{{- end }}

{{- define "govkit.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "govkit.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The image: a repository you pushed to, never "latest". */}}
{{- define "govkit.image" -}}
{{- $repo := required "image.repository: name the registry and repository you pushed govkit's image to (docker build -t REGISTRY/govkit:TAG . && docker push REGISTRY/govkit:TAG; no image is published for you)" .Values.image.repository }}
{{- $tag := .Values.image.tag | default .Chart.AppVersion | toString }}
{{- if or (eq $tag "latest") (eq $tag "") }}
{{- fail "image.tag: name a version (latest is not allowed)" }}
{{- end }}
{{- printf "%s:%s" $repo $tag }}
{{- end }}

{{/* How many notify nodes run: the primary and the secondaries. */}}
{{- define "govkit.notifyNodes" -}}
{{- if .Values.autoscaling.enabled }}{{ add 1 (max 1 .Values.autoscaling.minReplicas) }}{{ else }}{{ add 1 .Values.replicaCount }}{{ end }}
{{- end }}

{{/* How many platform replicas may run. */}}
{{- define "govkit.platformReplicas" -}}
{{- $d := .Values.docplatform }}
{{- if $d.autoscaling.enabled }}{{ max 2 $d.autoscaling.maxReplicas }}{{ else }}{{ $d.replicaCount }}{{ end }}
{{- end }}

{{/* The Redis URL of the platform, or "" without a Redis. */}}
{{- define "govkit.platformRedisURL" -}}
{{- if .Values.docplatform.redisURL }}{{ .Values.docplatform.redisURL }}
{{- else if .Values.redis.host }}
{{- if (include "govkit.redisSecret" . | fromJson).name }}{{ printf "redis://:$(REDIS_PASSWORD)@%s:%v/0" .Values.redis.host .Values.redis.port }}
{{- else }}{{ printf "redis://%s:%v/0" .Values.redis.host .Values.redis.port }}{{ end }}
{{- end }}
{{- end }}

{{/* notify's httpHost: the value, else the first ingress host. */}}
{{- define "govkit.httpHost" -}}
{{- if .Values.httpHost }}{{ .Values.httpHost }}
{{- else if and .Values.ingress.enabled .Values.ingress.hosts }}
{{- printf "%s://%s" (ternary "https" "http" (gt (len .Values.ingress.tls) 0)) (first .Values.ingress.hosts).host }}
{{- end }}
{{- end }}

{{/* prometheus.io annotations of a pod whose metrics are on port, as YAML. */}}
{{- define "govkit.metricsAnnotations" -}}
{{- if and .root.Values.metrics.enabled .root.Values.metrics.podAnnotations }}
prometheus.io/scrape: "true"
prometheus.io/port: {{ .port | quote }}
prometheus.io/path: /metrics
{{- end }}
{{- end }}

{{/* Refusals: settings that would start pods that cannot work together. */}}
{{- define "govkit.validate" -}}
{{- $d := .Values.docplatform }}
{{- if and $d.enabled (gt (int (include "govkit.platformReplicas" .)) 1) }}
{{- $missing := list }}
{{- if not (and $d.existingSecret (has "DATABASE_URL" $d.secretKeys)) }}{{ $missing = append $missing "DATABASE_URL (a PostgreSQL URL in docplatform.existingSecret, listed in docplatform.secretKeys)" }}{{ end }}
{{- if not (and $d.existingSecret (has "COOKIE_SECRET" $d.secretKeys)) }}{{ $missing = append $missing "COOKIE_SECRET (in docplatform.existingSecret, listed in docplatform.secretKeys)" }}{{ end }}
{{- if not (include "govkit.platformRedisURL" .) }}{{ $missing = append $missing "REDIS_URL (redis.host or docplatform.redisURL)" }}{{ end }}
{{- if not (hasPrefix "s3://" (toString ($d.env.DOCUMENT_STORAGE | default ""))) }}{{ $missing = append $missing "DOCUMENT_STORAGE=s3://bucket/prefix (docplatform.env)" }}{{ end }}
{{- if $missing }}
{{- fail (printf "docplatform: more than one replica needs shared state, or each pod keeps its own SQLite, documents and counters on an emptyDir; missing: %s. Set them, or docplatform.replicaCount: 1 with autoscaling off." (join "; " $missing)) }}
{{- end }}
{{- end }}
{{- if not (or .Values.mongodb.hosts .Values.mongodb.uriSecret.name) }}
{{- fail "mongodb: notify needs a MongoDB replica set: set mongodb.hosts (with mongodb.auth) or mongodb.uriSecret; this chart installs none" }}
{{- end }}
{{- if and (gt (int (include "govkit.notifyNodes" .)) 1) (not .Values.redis.host) }}
{{- fail (printf "redis.host: notify runs %s nodes (a primary and replicaCount or autoscaling secondaries), which share their queue in Redis; set redis.host (and redis.auth), or replicaCount: 0 for one node" (include "govkit.notifyNodes" .)) }}
{{- end }}
{{- if not (or .Values.smtp.host (contains "smtp" (index .Values.configMap "config.local.js" | default ""))) }}
{{- fail "smtp.host: notify in production sends through an SMTP server of yours (it refuses to start on the public test-mail service): set smtp.host, smtp.port, smtp.user and smtp.existingSecret" }}
{{- end }}
{{- if and .Values.smtp.user (not .Values.smtp.existingSecret) }}
{{- fail "smtp.existingSecret: smtp.user needs its password from a Secret (key smtp.passwordKey)" }}
{{- end }}
{{- end }}

{{/* Pod and container security contexts: the chart's hardening, with the values merged over it. */}}
{{- define "govkit.podSecurityContext" -}}
{{- $d := dict "runAsNonRoot" true "runAsUser" 65532 "runAsGroup" 65532 "fsGroup" 65532 "seccompProfile" (dict "type" "RuntimeDefault") }}
{{- toYaml (mustMergeOverwrite $d (deepCopy (.Values.podSecurityContext | default dict))) }}
{{- end }}

{{- define "govkit.securityContext" -}}
{{- $d := dict "runAsNonRoot" true "readOnlyRootFilesystem" true "allowPrivilegeEscalation" false "capabilities" (dict "drop" (list "ALL")) }}
{{- toYaml (mustMergeOverwrite $d (deepCopy (.Values.securityContext | default dict))) }}
{{- end }}

{{/* The Secret and key holding the Redis password, or nothing without one. */}}
{{- define "govkit.redisSecret" -}}
{{- if .Values.redis.auth.existingSecret }}
{{- dict "name" .Values.redis.auth.existingSecret "key" (.Values.redis.auth.existingSecretPasswordKey | default "redis-password") | toJson }}
{{- else if .Values.redis.auth.password }}
{{- dict "name" (printf "%s-redis" (include "govkit.fullname" .)) "key" "redis-password" | toJson }}
{{- else }}
{{- dict | toJson }}
{{- end }}
{{- end }}

{{/* REDIS_PASSWORD from its Secret, when Redis has one. */}}
{{- define "govkit.redisPasswordEnv" -}}
{{- $s := include "govkit.redisSecret" . | fromJson }}
{{- if $s.name }}
- name: REDIS_PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ $s.name }}
      key: {{ $s.key }}
{{- end }}
{{- end }}

{{/* Probes on the health endpoint. Liveness is lenient (2 minutes of
failures) so that a database outage makes pods unready, not restarted. */}}
{{- define "govkit.probes" -}}
startupProbe:
  httpGet: {path: /api/health, port: http}
  periodSeconds: 5
  failureThreshold: 60
readinessProbe:
  httpGet: {path: /api/health, port: http}
  periodSeconds: 10
  timeoutSeconds: 5
  failureThreshold: 3
livenessProbe:
  httpGet: {path: /api/health, port: http}
  periodSeconds: 20
  timeoutSeconds: 5
  failureThreshold: 6
{{- end }}

{{/* Writable directories of a read-only container. */}}
{{- define "govkit.scratchVolumes" -}}
- name: data
  emptyDir: {}
- name: tmp
  emptyDir: {}
{{- end }}

{{- define "govkit.scratchMounts" -}}
- name: data
  mountPath: /data
- name: tmp
  mountPath: /tmp
{{- end }}
