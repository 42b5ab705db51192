{{- define "fleet-rs-agent.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "fleet-rs-agent.selector" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* The Secret and key the hub credential comes from, checked. */}}
{{- define "fleet-rs-agent.secret" -}}
{{- if and .Values.registration.tokenSecret .Values.hub.kubeconfigSecret -}}
{{- fail "set registration.tokenSecret or hub.kubeconfigSecret, not both" -}}
{{- else if .Values.registration.tokenSecret -}}
{{- .Values.registration.tokenSecret -}}
{{- else if .Values.hub.kubeconfigSecret -}}
{{- .Values.hub.kubeconfigSecret -}}
{{- else -}}
{{- fail "set registration.tokenSecret (with registration.clusterName) or hub.kubeconfigSecret (with hub.namespace)" -}}
{{- end -}}
{{- end -}}
