package proxy

import (
	"io"
	"net/http"

	"github.com/gatehouse-dev/gatehouse/proxy/headers"
)

// Trailers cross the proxy by the header name rule (headers.TrailerCrosses),
// both ways. net/http fills a message's trailer map only when its body has
// been read to the end, with every trailer that arrived, announced or not,
// so the filtering happens there: for a request, into a map of the backend
// request's own; for a response, in the map goproxy copies from after the
// body.

// filterRequestTrailers gives the backend request r its own trailer map,
// of the client's announced trailers that may cross, filled when the
// client's body is read to its end.
func filterRequestTrailers(r *http.Request) {
	if r.Trailer == nil {
		return
	}
	from := r.Trailer
	r.Trailer = headers.RequestTrailer(from)
	if r.Trailer != nil && r.Body != nil {
		r.Body = &requestTrailers{ReadCloser: r.Body, from: from, to: r.Trailer}
	}
}

// requestTrailers is a client's body that, at its end, gives the backend
// request's trailer map the client's values.
type requestTrailers struct {
	io.ReadCloser
	from, to http.Header
}

func (b *requestTrailers) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF {
		headers.FillTrailer(b.to, b.from)
	}
	return n, err
}

// filterResponseTrailers removes the trailers that may not cross from a
// backend's response: those announced now (before goproxy announces them
// to the client), and those that arrived, when its body ends (net/http
// adds them then; goproxy copies them after the body). A body that does not
// end adds none. Only a response that can have
// trailers is wrapped: one with announced trailers, a body of unknown
// length (chunked), or HTTP/2.
func filterResponseTrailers(resp *http.Response) {
	if resp.Trailer == nil && resp.ContentLength >= 0 && resp.ProtoMajor < 2 {
		return
	}
	headers.CleanTrailer(resp.Trailer)
	resp.Body = &responseTrailers{ReadCloser: resp.Body, resp: resp}
}

// responseTrailers is a backend's response body that filters the
// response's trailers at its end.
type responseTrailers struct {
	io.ReadCloser
	resp *http.Response
}

func (b *responseTrailers) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF {
		headers.CleanTrailer(b.resp.Trailer)
	}
	return n, err
}
