package server

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"
)

// tlsFiles serves the certificate, key and optional client CA bundle read
// from files, and re-reads them when they change: on a handshake, at most
// once per checkEvery, it stats the files and reloads if any differs. A
// change that does not load (a key that does not match yet, half-written
// PEM) is logged and the last good set keeps serving; it is tried again when
// the files change again. Established connections are never touched.
type tlsFiles struct {
	certFile, keyFile, caFile string
	minVersion                uint16
	checkEvery                time.Duration
	log                       *slog.Logger
	now                       func() time.Time

	mu        sync.Mutex
	current   *tlsMaterial
	tried     [3]stamp // of the files last tried, good or bad
	lastCheck time.Time
}

type tlsMaterial struct {
	cert     *tls.Certificate
	leaf     *x509.Certificate
	clientCA *x509.CertPool // nil: client certificates are not asked for
}

type stamp struct {
	mod  time.Time
	size int64
	fi   os.FileInfo
}

func statStamp(path string) stamp {
	if path == "" {
		return stamp{}
	}
	fi, err := os.Stat(path)
	if err != nil {
		return stamp{}
	}
	return stamp{mod: fi.ModTime(), size: fi.Size(), fi: fi}
}

func (a stamp) same(b stamp) bool {
	if a.fi == nil || b.fi == nil {
		return a.fi == b.fi
	}
	return a.mod.Equal(b.mod) && a.size == b.size && os.SameFile(a.fi, b.fi)
}

func newTLSFiles(certFile, keyFile, caFile string, minVersion uint16, log *slog.Logger) (*tlsFiles, error) {
	if certFile == "" || keyFile == "" {
		return nil, errors.New("a certificate and key file are required")
	}
	t := &tlsFiles{
		certFile: certFile, keyFile: keyFile, caFile: caFile,
		minVersion: minVersion, checkEvery: time.Second, log: log, now: time.Now,
	}
	t.tried = t.stamps()
	m, err := t.load()
	if err != nil {
		return nil, err
	}
	t.current, t.lastCheck = m, t.now()
	return t, nil
}

func (t *tlsFiles) stamps() [3]stamp {
	return [3]stamp{statStamp(t.certFile), statStamp(t.keyFile), statStamp(t.caFile)}
}

func (t *tlsFiles) load() (*tlsMaterial, error) {
	cert, err := tls.LoadX509KeyPair(t.certFile, t.keyFile)
	if err != nil {
		return nil, fmt.Errorf("load TLS certificate %s and key %s: %w", t.certFile, t.keyFile, err)
	}
	m := &tlsMaterial{cert: &cert, leaf: cert.Leaf}
	if t.caFile != "" {
		pem, err := os.ReadFile(t.caFile)
		if err != nil {
			return nil, fmt.Errorf("load client CA bundle: %w", err)
		}
		m.clientCA = x509.NewCertPool()
		if !m.clientCA.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("load client CA bundle %s: no PEM certificates", t.caFile)
		}
	}
	return m, nil
}

// material returns the current certificate set, reloading it first if the
// files changed since the last check.
func (t *tlsFiles) material() *tlsMaterial {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	if now.Sub(t.lastCheck) < t.checkEvery {
		return t.current
	}
	t.lastCheck = now
	st := t.stamps()
	if st[0].same(t.tried[0]) && st[1].same(t.tried[1]) && st[2].same(t.tried[2]) {
		return t.current
	}
	t.tried = st
	m, err := t.load()
	if err != nil {
		t.log.Error("TLS files changed but do not load; still serving the previous certificate", "error", err)
		return t.current
	}
	t.current = m
	attrs := []any{"cert", t.certFile}
	if m.leaf != nil {
		attrs = append(attrs, "subject", m.leaf.Subject.String(), "notAfter", m.leaf.NotAfter)
	}
	t.log.Info("TLS certificate reloaded", attrs...)
	return m
}

// config is the server's base TLS configuration: every handshake gets a
// configuration built from the current files.
func (t *tlsFiles) config() *tls.Config {
	return &tls.Config{
		MinVersion: t.minVersion,
		NextProtos: []string{"h2"},
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			m := t.material()
			c := &tls.Config{
				MinVersion:   t.minVersion,
				NextProtos:   []string{"h2"},
				Certificates: []tls.Certificate{*m.cert},
			}
			if m.clientCA != nil {
				c.ClientCAs = m.clientCA
				c.ClientAuth = tls.RequireAndVerifyClientCert
			}
			return c, nil
		},
	}
}

// notAfter is when the serving certificate expires.
func (t *tlsFiles) notAfter() time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.current.leaf == nil {
		return time.Time{}
	}
	return t.current.leaf.NotAfter
}
