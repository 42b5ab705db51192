{{- define "fullname" -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 24 -}}
{{- end -}}
