{{- define "uc.labels" -}}
app.kubernetes.io/name: uc
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "uc.selector" -}}
app.kubernetes.io/name: uc
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "uc.serviceAccount" -}}
{{- if .Values.serviceAccount.create }}{{ .Values.serviceAccount.name }}{{ else }}{{ .Values.serviceAccount.name | default "default" }}{{ end }}
{{- end }}
