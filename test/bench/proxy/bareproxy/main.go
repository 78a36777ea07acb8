// Command bareproxy is the tuned bare Go reverse proxy the proxy benchmark
// compares Gatehouse with: net/http/httputil's ReverseProxy to one backend,
// with a pooled copy buffer and as many idle backend connections as there
// are clients. It does nothing else.
package main

import (
	"flag"
	"log"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync"
	"time"
)

type pool struct{ p sync.Pool }

func (b *pool) Get() []byte  { return *b.p.Get().(*[]byte) }
func (b *pool) Put(x []byte) { b.p.Put(&x) }

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "address to serve on")
	backend := flag.String("backend", "", "backend URL")
	flag.Parse()
	target, err := url.Parse(*backend)
	if err != nil || target.Host == "" {
		log.Fatalf("--backend %q: %v", *backend, err)
	}
	bufs := &pool{p: sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}}
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.SetXForwarded()
		},
		Transport: &http.Transport{
			MaxIdleConns: 0, MaxIdleConnsPerHost: 1024, IdleConnTimeout: 90 * time.Second,
			DisableCompression: true,
		},
		BufferPool: bufs,
	}
	srv := &http.Server{Addr: *listen, Handler: rp, ReadHeaderTimeout: 10 * time.Second}
	log.Fatal(srv.ListenAndServe())
}
