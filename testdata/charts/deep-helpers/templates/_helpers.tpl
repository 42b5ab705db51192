{{- define "deep.prefix" -}}{{ .Release.Name }}-{{ .Chart.Name }}{{- end -}}

{{- define "deep.componentName" -}}
{{- $root := index . 0 -}}
{{- $component := index . 1 -}}
{{- printf "%s-%s" (include "deep.prefix" $root) $component.name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "deep.env" -}}
{{- range $key, $value := . }}
- name: {{ $key }}
  value: {{ $value | quote }}
{{- end }}
{{- end -}}

{{- define "deep.container" -}}
{{- $root := index . 0 -}}
{{- $component := index . 1 -}}
- name: {{ $component.name }}
  image: "example/{{ $component.name }}:{{ $root.Chart.AppVersion }}"
  {{- with $component.port }}
  ports:
    - containerPort: {{ . }}
  {{- end }}
  env: {{- include "deep.env" $component.env | indent 2 }}
  resources: {{- toYaml $root.Values.resources | nindent 4 }}
{{- end -}}
