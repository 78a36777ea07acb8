package servingcert

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

// Options say where the pair is and how often to look at it.
type Options struct {
	CertFile, KeyFile string
	// ClientCAFile, if set, is a PEM bundle of the CAs client certificates
	// must chain to; it is read, and read again, with the pair, so a
	// handshake never sees a pair of one rotation and CAs of another.
	ClientCAFile string
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
	cur       *material
	tried     [3]stamp // of the files last tried, good or bad
	lastCheck time.Time
}

// material is what one read of the files gave.
type material struct {
	cert      *tls.Certificate
	clientCAs *x509.CertPool // nil without ClientCAFile
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
	m, err := f.load()
	if err != nil {
		return nil, err
	}
	f.cur, f.lastCheck = m, o.Now()
	return f, nil
}

// GetCertificate is tls.Config.GetCertificate.
func (f *Files) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return f.current().cert, nil
}

// Current is the pair to serve now and the client CAs read with it (nil
// without ClientCAFile).
func (f *Files) Current() (*tls.Certificate, *x509.CertPool) {
	m := f.current()
	return m.cert, m.clientCAs
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
	if c := f.current().cert; c.Leaf != nil {
		return c.Leaf.NotAfter
	}
	return time.Time{}
}

// current returns what to serve, read again first if the files changed
// since they were last tried. A change that does not load (a key that does
// not match yet, half-written PEM) is logged once and the last good read
// keeps serving; it is tried again when the files change again.
func (f *Files) current() *material {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.o.Now()
	if f.o.CheckEvery > 0 && now.Sub(f.lastCheck) < f.o.CheckEvery {
		return f.cur
	}
	f.lastCheck = now
	st := f.stamps()
	if st[0].same(f.tried[0]) && st[1].same(f.tried[1]) && st[2].same(f.tried[2]) {
		return f.cur
	}
	f.tried = st
	m, err := f.load()
	if err != nil {
		f.o.Logger.Error("serving certificate files changed but do not load; still serving the previous certificate", "error", err)
		return f.cur
	}
	f.cur = m
	attrs := []any{"cert", f.o.CertFile}
	if m.cert.Leaf != nil {
		attrs = append(attrs, "subject", m.cert.Leaf.Subject.String(), "notAfter", m.cert.Leaf.NotAfter)
	}
	f.o.Logger.Info("serving certificate reloaded", attrs...)
	return m
}

func (f *Files) load() (*material, error) {
	c, err := tls.LoadX509KeyPair(f.o.CertFile, f.o.KeyFile)
	if err != nil {
		// LoadX509KeyPair's errors name files and PEM blocks, never key
		// material.
		return nil, fmt.Errorf("load serving certificate %s and key %s: %w", f.o.CertFile, f.o.KeyFile, err)
	}
	m := &material{cert: &c}
	if f.o.ClientCAFile != "" {
		pem, err := os.ReadFile(f.o.ClientCAFile)
		if err != nil {
			return nil, fmt.Errorf("load client CA bundle: %w", err)
		}
		m.clientCAs = x509.NewCertPool()
		if !m.clientCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("load client CA bundle %s: no PEM certificates", f.o.ClientCAFile)
		}
	}
	return m, nil
}

func (f *Files) stamps() [3]stamp {
	return [3]stamp{statStamp(f.o.CertFile), statStamp(f.o.KeyFile), statStamp(f.o.ClientCAFile)}
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
