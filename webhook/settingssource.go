package webhook

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/gatehouse-dev/gatehouse/internal/argocd/settings"
)

// settingsSource keeps Argo CD's settings current from argocd-cmd-params-cm
// and argocd-cm in the watch cache. Each change builds a new Settings value
// and swaps it in whole, so a request never sees half of an update.
type settingsSource struct {
	cache     cache.Cache
	namespace string
	overrides settings.Overrides
	logger    *slog.Logger
	current   atomic.Pointer[settings.Settings]
	loaded    atomic.Bool
}

// newSettingsSource starts from the overrides alone until Start reads the
// ConfigMaps.
func newSettingsSource(c cache.Cache, controlPlaneNamespace string, o settings.Overrides, logger *slog.Logger) *settingsSource {
	s := &settingsSource{cache: c, namespace: controlPlaneNamespace, overrides: o, logger: logger}
	initial, _ := settings.Build(controlPlaneNamespace, nil, nil, o)
	s.current.Store(initial)
	return s
}

// NeedLeaderElection is false: every replica answers admission reviews.
func (s *settingsSource) NeedLeaderElection() bool { return false }

// Current returns the settings in force.
func (s *settingsSource) Current() *settings.Settings { return s.current.Load() }

// Ready is a readiness check: nil once the ConfigMaps have been read.
func (s *settingsSource) Ready(*http.Request) error {
	if !s.loaded.Load() {
		return errors.New("settings from the Argo CD ConfigMaps not loaded yet")
	}
	return nil
}

// Start registers for ConfigMap events and loads the settings once the cache
// has synced. It returns when ctx ends (a manager.Runnable).
func (s *settingsSource) Start(ctx context.Context) error {
	inf, err := s.cache.GetInformer(ctx, &corev1.ConfigMap{})
	if err != nil {
		return fmt.Errorf("watch ConfigMaps in %q: %w", s.namespace, err)
	}
	reload := func(obj any) {
		if cm, ok := obj.(*corev1.ConfigMap); ok && !s.relevant(cm.Namespace, cm.Name) {
			return
		}
		s.reload(ctx)
	}
	_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    reload,
		UpdateFunc: func(_, obj any) { reload(obj) },
		DeleteFunc: func(obj any) {
			if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			reload(obj)
		},
	})
	if err != nil {
		return fmt.Errorf("watch ConfigMaps in %q: %w", s.namespace, err)
	}
	if !s.cache.WaitForCacheSync(ctx) {
		return ctx.Err()
	}
	s.reload(ctx)
	s.loaded.Store(true)
	<-ctx.Done()
	return nil
}

func (s *settingsSource) relevant(ns, name string) bool {
	return ns == s.namespace && (name == settings.CmdParamsConfigMap || name == settings.ArgoCDConfigMap)
}

func (s *settingsSource) reload(ctx context.Context) {
	cmdParams, err1 := s.data(ctx, settings.CmdParamsConfigMap)
	argocdCM, err2 := s.data(ctx, settings.ArgoCDConfigMap)
	if err1 != nil || err2 != nil {
		s.logger.Error("read Argo CD settings; keeping the previous ones", "namespace", s.namespace, "error", fmt.Sprint(err1, err2))
		return
	}
	next, problems := settings.Build(s.namespace, cmdParams, argocdCM, s.overrides)
	for _, p := range problems {
		s.logger.Warn("Argo CD setting ignored", "namespace", s.namespace, "problem", p.Error())
	}
	prev := s.current.Swap(next)
	if !sameSettings(prev, next) {
		s.logger.Info("Argo CD settings loaded", "controlPlaneNamespace", next.ControlPlaneNamespace,
			"applicationNamespaces", next.ApplicationNamespaces, "trackingMethod", next.TrackingMethod)
	}
}

func (s *settingsSource) data(ctx context.Context, name string) (map[string]string, error) {
	var cm corev1.ConfigMap
	err := s.cache.Get(ctx, types.NamespacedName{Namespace: s.namespace, Name: name}, &cm)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("get ConfigMap %s/%s: %w", s.namespace, name, err)
	}
	return cm.Data, nil
}

func sameSettings(a, b *settings.Settings) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.TrackingMethod == b.TrackingMethod && fmt.Sprint(a.ApplicationNamespaces) == fmt.Sprint(b.ApplicationNamespaces)
}
