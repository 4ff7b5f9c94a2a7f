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

{{/* The image, never "latest": a release must name what it runs. */}}
{{- define "govkit.image" -}}
{{- $tag := .Values.image.tag | default .Chart.AppVersion | toString }}
{{- if or (eq $tag "latest") (eq $tag "") }}
{{- fail "image.tag: name a version (latest is not allowed)" }}
{{- end }}
{{- printf "%s:%s" .Values.image.repository $tag }}
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
