package certs

import (
	"bytes"
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// PublisherOptions configure a CAPublisher.
type PublisherOptions struct {
	// Client reads and writes the ConfigMap directly (RBAC grants
	// ConfigMaps of the namespace; no cache holds this one).
	Client          client.Client
	Namespace, Name string
	// File is the CA bundle to publish: ca.crt in the serving directory,
	// which the Rotator writes, or cert-manager's Secret volume holds.
	File string
	// Every is how often the file is read again (default 1 minute).
	Every  time.Duration
	Logger *slog.Logger
}

// CAPublisher keeps a ConfigMap holding the CA bundle (key ca.crt), so that
// whoever verifies Gatehouse's certificates (Prometheus, a Gateway API
// BackendTLSPolicy, an ingress) reads a ConfigMap rather than a Secret that
// also holds keys. Every replica runs one; they publish the same bytes.
type CAPublisher struct {
	o    PublisherOptions
	last []byte // what the ConfigMap was last seen or made to hold
}

// NewPublisher returns a CAPublisher; it does nothing until Publish or
// Start.
func NewPublisher(o PublisherOptions) (*CAPublisher, error) {
	if o.Client == nil || o.Namespace == "" || o.Name == "" || o.File == "" {
		return nil, errors.New("certs: the CA publisher needs a client, a namespace, a ConfigMap name and the bundle's file")
	}
	if o.Every <= 0 {
		o.Every = time.Minute
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &CAPublisher{o: o}, nil
}

// NeedLeaderElection: every replica publishes (the same bundle), so the
// ConfigMap follows a rotation even while no replica leads.
func (p *CAPublisher) NeedLeaderElection() bool { return false }

// Start publishes now and then every Every until ctx ends; a failure is
// logged and tried again at the next tick.
func (p *CAPublisher) Start(ctx context.Context) error {
	t := time.NewTicker(p.o.Every)
	defer t.Stop()
	for {
		if err := p.Publish(ctx); err != nil && ctx.Err() == nil {
			p.o.Logger.Error("publish the CA bundle", "configMap", p.o.Namespace+"/"+p.o.Name, "error", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Publish makes the ConfigMap hold the file's bundle. A file that holds no
// certificate is refused: the ConfigMap keeps the last good bundle rather
// than one nothing verifies with.
func (p *CAPublisher) Publish(ctx context.Context) error {
	bundle, err := os.ReadFile(p.o.File)
	if err != nil {
		return fmt.Errorf("read CA bundle: %w", err)
	}
	if !x509.NewCertPool().AppendCertsFromPEM(bundle) {
		return fmt.Errorf("CA bundle %s holds no PEM certificate; the ConfigMap keeps what it holds", p.o.File)
	}
	if bytes.Equal(bundle, p.last) {
		return nil
	}
	key := types.NamespacedName{Namespace: p.o.Namespace, Name: p.o.Name}
	var cm corev1.ConfigMap
	switch err := p.o.Client.Get(ctx, key, &cm); {
	case apierrors.IsNotFound(err):
		cm = corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name,
				Labels: map[string]string{"app.kubernetes.io/name": "gatehouse", "app.kubernetes.io/component": "ca-bundle"}},
			Data: map[string]string{KeyCACert: string(bundle)},
		}
		// Another replica may create it first: AlreadyExists is retried at
		// the next tick, which then compares.
		if err := p.o.Client.Create(ctx, &cm); err != nil {
			return fmt.Errorf("create ConfigMap %s: %w", key, err)
		}
		p.o.Logger.Info("CA bundle published", "configMap", key.String())
	case err != nil:
		return fmt.Errorf("get ConfigMap %s: %w", key, err)
	case cm.Data[KeyCACert] == string(bundle) && len(cm.Data) == 1 && len(cm.BinaryData) == 0:
	default:
		// Exactly the bundle: anything else put there is dropped, as no
		// reader expects it. The update carries the resourceVersion read.
		cm.Data, cm.BinaryData = map[string]string{KeyCACert: string(bundle)}, nil
		if err := p.o.Client.Update(ctx, &cm); err != nil {
			return fmt.Errorf("update ConfigMap %s: %w", key, err)
		}
		p.o.Logger.Info("CA bundle published", "configMap", key.String())
	}
	p.last = bundle
	return nil
}
