package server

import (
	"crypto/tls"
	"log/slog"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/servingcert"
)

// tlsFiles serves the certificate, key and optional client CA bundle read
// from files (servingcert), looked at again at most once per checkEvery: a
// change that does not load is logged and the last good set keeps serving.
// Established connections are never touched.
type tlsFiles struct {
	files      *servingcert.Files
	minVersion uint16
}

// defaultCheckEvery bounds the stat calls when many agents reconnect at
// once.
const defaultCheckEvery = time.Second

func newTLSFiles(certFile, keyFile, caFile string, minVersion uint16, checkEvery time.Duration, log *slog.Logger) (*tlsFiles, error) {
	f, err := servingcert.New(servingcert.Options{CertFile: certFile, KeyFile: keyFile, ClientCAFile: caFile, CheckEvery: checkEvery, Logger: log})
	if err != nil {
		return nil, err
	}
	return &tlsFiles{files: f, minVersion: minVersion}, nil
}

// config is the server's base TLS configuration: every handshake gets a
// configuration built from the current files.
func (t *tlsFiles) config() *tls.Config {
	return &tls.Config{
		MinVersion: t.minVersion,
		NextProtos: []string{"h2"},
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			cert, clientCAs := t.files.Current()
			c := &tls.Config{
				MinVersion:   t.minVersion,
				NextProtos:   []string{"h2"},
				Certificates: []tls.Certificate{*cert},
			}
			if clientCAs != nil {
				c.ClientCAs = clientCAs
				c.ClientAuth = tls.RequireAndVerifyClientCert
			}
			return c, nil
		},
	}
}

// notAfter is when the serving certificate expires.
func (t *tlsFiles) notAfter() time.Time { return t.files.NotAfter() }
