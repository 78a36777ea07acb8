package tracing

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"time"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// exportPath is the gRPC method OTLP collectors serve traces on.
const exportPath = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"

// exportTimeout bounds one export, whatever the batch processor allows.
const exportTimeout = 10 * time.Second

// maxReply bounds what is read of a collector's reply.
const maxReply = 64 << 10

// grpcClient sends spans to a collector with OTLP's gRPC unary call
// (TraceService/Export), framed by hand over net/http's HTTP/2: gRPC's
// library would double the proxy binary's dependencies for one call. It is
// an otlptrace.Client, so the SDK's own code turns spans into OTLP.
type grpcClient struct {
	url     string
	headers http.Header
	hc      *http.Client
}

func newGRPCClient(o Options) (*grpcClient, error) {
	tr := &http.Transport{
		Proxy:               nil, // a collector is reached directly
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		TLSHandshakeTimeout: 5 * time.Second,
		IdleConnTimeout:     90 * time.Second,
		Protocols:           new(http.Protocols),
	}
	scheme := "https"
	if o.Insecure {
		scheme = "http"
		tr.Protocols.SetUnencryptedHTTP2(true)
	} else {
		tr.Protocols.SetHTTP2(true)
		tc := &tls.Config{MinVersion: tls.VersionTLS12}
		if o.CAFile != "" {
			pem, err := os.ReadFile(o.CAFile)
			if err != nil {
				return nil, fmt.Errorf("--otlp-ca-file: %w", err)
			}
			tc.RootCAs = x509.NewCertPool()
			if !tc.RootCAs.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("--otlp-ca-file %s holds no PEM certificate", o.CAFile)
			}
		}
		tr.TLSClientConfig = tc
	}
	h := http.Header{
		"Content-Type": {"application/grpc"},
		"Te":           {"trailers"},
		"User-Agent":   {"gatehouse-otlp"},
	}
	for k, v := range o.Headers {
		h.Set(k, v)
	}
	u := url.URL{Scheme: scheme, Host: o.Endpoint, Path: exportPath}
	return &grpcClient{url: u.String(), headers: h, hc: &http.Client{Transport: tr}}, nil
}

func (c *grpcClient) Start(context.Context) error { return nil }

func (c *grpcClient) Stop(context.Context) error {
	c.hc.CloseIdleConnections()
	return nil
}

// UploadTraces sends one ExportTraceServiceRequest. The request message is
// written field by field (resource_spans = 1), so that the collector
// package and its gRPC service code are not linked.
func (c *grpcClient) UploadTraces(ctx context.Context, spans []*tracepb.ResourceSpans) error {
	var msg []byte
	for _, rs := range spans {
		b, err := proto.Marshal(rs)
		if err != nil {
			return fmt.Errorf("encode spans: %w", err)
		}
		msg = protowire.AppendTag(msg, 1, protowire.BytesType)
		msg = protowire.AppendBytes(msg, b)
	}
	frame := make([]byte, 5, 5+len(msg))
	binary.BigEndian.PutUint32(frame[1:], uint32(len(msg)))
	frame = append(frame, msg...)

	ctx, cancel := context.WithTimeout(ctx, exportTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(frame))
	if err != nil {
		return err
	}
	req.Header = c.headers.Clone()
	resp, err := c.hc.Do(req)
	if err != nil {
		return fmt.Errorf("export spans to %s: %w", req.URL.Host, err)
	}
	defer resp.Body.Close()
	// The trailers arrive once the body is read.
	if _, err := io.Copy(io.Discard, io.LimitReader(resp.Body, maxReply)); err != nil {
		return fmt.Errorf("export spans to %s: read the reply: %w", req.URL.Host, err)
	}
	return replyError(resp)
}

// replyError is the gRPC call's outcome: grpc-status in the trailers, or in
// the headers of a reply that has no body.
func replyError(resp *http.Response) error {
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("export spans: the collector answered HTTP %d, not gRPC: is --otlp-endpoint its OTLP gRPC port (4317)?", resp.StatusCode)
	}
	status, msg := resp.Trailer.Get("Grpc-Status"), resp.Trailer.Get("Grpc-Message")
	if status == "" {
		status, msg = resp.Header.Get("Grpc-Status"), resp.Header.Get("Grpc-Message")
	}
	if status == "0" {
		return nil
	}
	if status == "" {
		return errors.New("export spans: the collector's reply has no gRPC status")
	}
	if m, err := url.PathUnescape(msg); err == nil {
		msg = m
	}
	code, _ := strconv.Atoi(status)
	return fmt.Errorf("export spans: the collector refused them: gRPC status %d: %s", code, msg)
}
