package kube

import (
	"context"
	"log/slog"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gatehousev1 "github.com/gatehouse-dev/gatehouse/api/v1alpha1"
	"github.com/gatehouse-dev/gatehouse/internal/configproblem"
)

// maxNote is the longest note events.k8s.io/v1 accepts.
const maxNote = 1024

// EventReporter records each configuration problem as an Event on the
// object at fault, so `kubectl describe configmap argocd-cm` shows why an
// extension is not served.
type EventReporter struct {
	recorder events.EventRecorder
	reader   client.Reader
	ns       string
	log      *slog.Logger
}

// NewEventReporter reports on objects of controlPlaneNamespace; reader (the
// cache) supplies their UIDs, which kubectl describe matches Events by.
func NewEventReporter(recorder events.EventRecorder, reader client.Reader, controlPlaneNamespace string, log *slog.Logger) *EventReporter {
	return &EventReporter{recorder: recorder, reader: reader, ns: controlPlaneNamespace, log: log}
}

// Report implements controlplane.Reporter.
func (r *EventReporter) Report(ctx context.Context, problems []configproblem.Problem) {
	for _, p := range problems {
		obj := r.object(ctx, p)
		if obj == nil {
			continue
		}
		typ := corev1.EventTypeWarning
		note := p.Error()
		if len(note) > maxNote {
			note = note[:maxNote-3] + "..."
		}
		r.recorder.Eventf(obj, nil, typ, p.Reason, "BuildSnapshot", "%s", note)
	}
}

func (r *EventReporter) object(ctx context.Context, p configproblem.Problem) client.Object {
	var obj client.Object
	gvk := corev1.SchemeGroupVersion.WithKind(p.Kind)
	switch p.Kind {
	case gatehousev1.KindConfigMap:
		obj = &corev1.ConfigMap{}
	case gatehousev1.KindSecret:
		obj = &corev1.Secret{}
	case gatehousev1.KindPolicyBundle:
		obj, gvk = &gatehousev1.PolicyBundle{}, gatehousev1.GroupVersion.WithKind(p.Kind)
	default:
		return nil
	}
	if err := r.reader.Get(ctx, client.ObjectKey{Namespace: r.ns, Name: p.Name}, obj); err != nil {
		r.log.Debug("no object to record the problem on", "kind", p.Kind, "name", p.Name, "error", err)
		return nil
	}
	// The cache strips type information; the recorder needs it for the reference.
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	return obj
}
