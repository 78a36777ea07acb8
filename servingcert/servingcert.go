package servingcert

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"
)

// Options say where the pair is and how often to look at it.
type Options struct {
	CertFile, KeyFile string
	// CheckEvery bounds how often the files are looked at; 0 looks on every
	// handshake (two stat calls), which suits listeners whose clients keep
	// their connections.
	CheckEvery time.Duration
	// Logger reports reloads, and changed files that do not load.
	Logger *slog.Logger
	// Now is the clock CheckEvery is measured with (time.Now if nil).
	Now func() time.Time
}

// Files is a certificate and key served from files. Its methods are safe
// for concurrent use.
type Files struct {
	o Options

	mu        sync.Mutex
	cert      *tls.Certificate
	tried     [2]stamp // of the files last tried, good or bad
	lastCheck time.Time
}

// New loads the pair. It fails when the pair does not load now: a listener
// must not start without the certificate it was told to serve.
func New(o Options) (*Files, error) {
	if o.CertFile == "" || o.KeyFile == "" {
		return nil, errors.New("a serving certificate needs both a certificate file and a key file")
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	f := &Files{o: o}
	f.tried = f.stamps()
	c, err := f.load()
	if err != nil {
		return nil, err
	}
	f.cert, f.lastCheck = c, o.Now()
	return f, nil
}

// GetCertificate is tls.Config.GetCertificate.
func (f *Files) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return f.current(), nil
}

// ServerConfig is a server configuration that serves the files' pair, at
// TLS 1.2 or later.
func (f *Files) ServerConfig() *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: f.GetCertificate}
}

// NotAfter is when the pair served now expires. Asking also looks at the
// files, so a metric built on it follows a renewal before any client
// connects.
func (f *Files) NotAfter() time.Time {
	if c := f.current(); c.Leaf != nil {
		return c.Leaf.NotAfter
	}
	return time.Time{}
}

// current returns the pair to serve, read again first if the files changed
// since they were last tried. A change that does not load (a key that does
// not match yet, half-written PEM) is logged once and the last good pair
// keeps serving; it is tried again when the files change again.
func (f *Files) current() *tls.Certificate {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.o.Now()
	if f.o.CheckEvery > 0 && now.Sub(f.lastCheck) < f.o.CheckEvery {
		return f.cert
	}
	f.lastCheck = now
	st := f.stamps()
	if st[0].same(f.tried[0]) && st[1].same(f.tried[1]) {
		return f.cert
	}
	f.tried = st
	c, err := f.load()
	if err != nil {
		f.o.Logger.Error("serving certificate files changed but do not load; still serving the previous certificate", "error", err)
		return f.cert
	}
	f.cert = c
	attrs := []any{"cert", f.o.CertFile}
	if c.Leaf != nil {
		attrs = append(attrs, "subject", c.Leaf.Subject.String(), "notAfter", c.Leaf.NotAfter)
	}
	f.o.Logger.Info("serving certificate reloaded", attrs...)
	return c
}

func (f *Files) load() (*tls.Certificate, error) {
	c, err := tls.LoadX509KeyPair(f.o.CertFile, f.o.KeyFile)
	if err != nil {
		// LoadX509KeyPair's errors name files and PEM blocks, never key
		// material.
		return nil, fmt.Errorf("load serving certificate %s and key %s: %w", f.o.CertFile, f.o.KeyFile, err)
	}
	return &c, nil
}

func (f *Files) stamps() [2]stamp {
	return [2]stamp{statStamp(f.o.CertFile), statStamp(f.o.KeyFile)}
}

// stamp identifies a version of a file without reading it: the kubelet
// replaces a Secret volume's files through a symlink swap, so the file
// behind the name changes even when its time and size happen to match.
type stamp struct {
	mod  time.Time
	size int64
	fi   os.FileInfo
}

func statStamp(path string) stamp {
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
