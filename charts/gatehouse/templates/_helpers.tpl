{{/*
The labels every object carries: the same as manifests/base's, so objects
installed by kustomize and by this chart are selected alike.
*/}}
{{- define "gatehouse.labels" -}}
app.kubernetes.io/name: gatehouse
app.kubernetes.io/part-of: gatehouse
{{- end }}

{{/* image returns registry/<name>:tag for the image name given. */}}
{{- define "gatehouse.image" -}}
{{- $root := index . 0 -}}
{{- printf "%s/%s:%s" $root.Values.image.registry (index . 1) ($root.Values.image.tag | default $root.Chart.AppVersion) -}}
{{- end }}

{{/* pullPolicy renders imagePullPolicy when image.pullPolicy is set. */}}
{{- define "gatehouse.pullPolicy" -}}
{{- with .Values.image.pullPolicy }}
imagePullPolicy: {{ . }}
{{- end }}
{{- end }}

{{/* scheduling renders a component's priority class and placement. */}}
{{- define "gatehouse.scheduling" -}}
{{- with .priorityClassName }}
priorityClassName: {{ . }}
{{- end }}
{{- with .nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{/* tracingArgs renders --otlp-endpoint when tracing.otlpEndpoint is set. */}}
{{- define "gatehouse.tracingArgs" -}}
{{- with .Values.tracing.otlpEndpoint }}
- --otlp-endpoint={{ . }}
{{- end }}
{{- end }}

{{/* criticalPriority is "true" when a component runs at a critical class. */}}
{{- define "gatehouse.criticalPriority" -}}
{{- $critical := list "system-cluster-critical" "system-node-critical" -}}
{{- if or (has .Values.controller.priorityClassName $critical) (has .Values.proxy.priorityClassName $critical) -}}
true
{{- end -}}
{{- end }}
