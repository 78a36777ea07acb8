//go:build linux

package agentchannel

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/timestamppb"

	agentv1 "github.com/gatehouse-dev/gatehouse/agent/api/v1"
	"github.com/gatehouse-dev/gatehouse/agent/client"
	"github.com/gatehouse-dev/gatehouse/sidecar"
)

// fleet is N agents in this process, each with its own token, agent id and
// gRPC/TLS connection. The first nReal are the real agent/client with a
// real sidecar.Writer on a tmpfs; the others are leanAgents.
type fleet struct {
	addr, caFile, dir string
	n, nReal          int
	light             bool // lean agents dial with lightDial
	acks              *ackRecorder
	problems          *problemLog
	sets              *versionSets
	starters          []func(context.Context)
	conns             []*grpc.ClientConn // the lean agents'
	cancel            context.CancelFunc
	wg                sync.WaitGroup
}

func newFleet(addr, caFile, dir string, n, nReal int) *fleet {
	return &fleet{addr: addr, caFile: caFile, dir: dir, n: n, nReal: min(nReal, n),
		acks: newAckRecorder(), problems: &problemLog{}, sets: &versionSets{m: map[string]*versionSet{}}}
}

// prepare makes everything the agents need (token files, volumes,
// connections not yet dialled), so that launch starts them together.
func (f *fleet) prepare() error {
	pool := x509.NewCertPool()
	ca, err := os.ReadFile(f.caFile)
	if err != nil {
		return err
	}
	if !pool.AppendCertsFromPEM(ca) {
		return errors.New("no CA certificate in " + f.caFile)
	}
	if err := os.MkdirAll(filepath.Join(f.dir, "tokens"), 0o700); err != nil {
		return err
	}
	for i := range f.n {
		if i < f.nReal {
			s, err := f.realAgent(i)
			if err != nil {
				return err
			}
			f.starters = append(f.starters, s)
			continue
		}
		la := &leanAgent{idx: i, f: f}
		opts := []grpc.DialOption{
			grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS13})),
			grpc.WithKeepaliveParams(keepalive.ClientParameters{Time: 30 * time.Second, Timeout: 10 * time.Second}),
			// The real agent's fixed flow-control windows
			// (client.StreamWindowBytes), unless -agentbench.lean-window
			// says otherwise. With gRPC's dynamic ones (up to 16 MB a
			// stream) a thousand lean agents, falling behind reading,
			// buffered a whole 10 MB download each, 10 GB in all.
			grpc.WithStaticStreamWindowSize(int32(*leanWindow)), grpc.WithStaticConnWindowSize(2 * int32(*leanWindow)),
			// As agent/client: no read buffer on top of TLS's.
			grpc.WithReadBufferSize(0),
		}
		opts = append(opts, agentDialer(i))
		if f.light {
			opts = append(opts, lightDial...)
		}
		conn, err := grpc.NewClient(f.addr, opts...)
		if err != nil {
			return err
		}
		f.conns = append(f.conns, conn)
		f.starters = append(f.starters, func(ctx context.Context) {
			defer conn.Close()
			la.run(ctx, agentv1.NewCommanderClient(conn))
		})
	}
	return nil
}

// agentIP is agent i's own source address on the loopback network
// (127.1.0.0 onwards). In a cluster every agent connects from its Pod's
// IP, and the server limits how many handshakes one address may have at
// once (Options.MaxHandshakesPerAddress, 16): with the whole fleet on
// 127.0.0.1 the server closed every connection past the sixteenth and the
// agents retried with backoff, which made most of a cold start. Own
// addresses also give each agent its own ephemeral ports.
func agentIP(i int) net.IP { return net.IPv4(127, byte(1+i>>16), byte(i>>8), byte(i)) }

// agentDialer dials from agentIP(i).
func agentDialer(i int) grpc.DialOption {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: agentIP(i)}}
	return grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
		return d.DialContext(ctx, "tcp", addr)
	})
}

// lightDial makes a lean agent's connection small, for the fleets of up to
// 10,000 (BenchmarkAgentServerScale): 64 KiB flow-control windows (a 100 KB
// snapshot's download takes two window updates) and a 4 KiB write buffer
// instead of 32 KiB. Only this process's memory changes: the server
// sees the same messages, and gRPC's window updates are HTTP/2 frames it
// handles anyway.
var lightDial = []grpc.DialOption{
	grpc.WithStaticStreamWindowSize(64 << 10), grpc.WithStaticConnWindowSize(64 << 10),
	grpc.WithWriteBufferSize(4 << 10),
}

// launch starts every agent at once (a cold start: empty volumes); they
// run until stop.
func (f *fleet) launch() {
	ctx, cancel := context.WithCancel(context.Background())
	f.cancel = cancel
	if f.light {
		// The scale fleets start 500 agents a second: all 10,000 at once
		// overran this machine's two cores with TLS handshakes, the server
		// closed those past its 5 s handshake timeout, and the retries
		// made a storm that measured the machine, not the agent server.
		f.wg.Go(func() {
			tick := time.NewTicker(2 * time.Millisecond)
			defer tick.Stop()
			for _, s := range f.starters {
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
				}
				f.wg.Go(func() { s(ctx) })
			}
		})
		return
	}
	for _, s := range f.starters {
		f.wg.Go(func() { s(ctx) })
	}
}

// realAgent prepares agent i as `gatehouse agent` runs it, minus the admin
// endpoint: client.Agent with a sidecar.Writer of its own.
func (f *fleet) realAgent(i int) (func(context.Context), error) {
	tokenFile := filepath.Join(f.dir, "tokens", benchAgentID(i))
	if err := os.WriteFile(tokenFile, []byte(benchToken(i)+"\n"), 0o600); err != nil {
		return nil, err
	}
	log := slog.New(f.problems)
	w, err := sidecar.NewWriter(filepath.Join(f.dir, "volumes", benchAgentID(i)), sidecar.DefaultLimits(), log)
	if err != nil {
		return nil, err
	}
	a, err := client.New(client.Options{
		Address: f.addr, CAFile: f.caFile, TokenFile: tokenFile, AgentID: benchAgentID(i),
		Pod:     &agentv1.PodRef{Name: fmt.Sprintf("gatehouse-proxy-%05d", i), Namespace: "gatehouse-system"},
		Version: "bench", Writer: w,
		InitialBackoff: 100 * time.Millisecond, MaxBackoff: 2 * time.Second,
		DialOptions: []grpc.DialOption{grpc.WithChainStreamInterceptor(f.acks.interceptor), agentDialer(i)},
		Logger:      log,
	})
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context) { _ = a.Run(ctx) }, nil
}

// stop ends every agent and waits (at most 30 s) for them.
func (f *fleet) stop() {
	defer func() {
		for _, c := range f.conns {
			_ = c.Close() // closing twice only returns an error
		}
	}()
	if f.cancel == nil {
		return
	}
	f.cancel()
	done := make(chan struct{})
	go func() { f.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		f.problems.add("agents did not stop within 30s")
	}
}

// ackRecorder notes when each agent sent APPLIED for a version, on the
// agents' side of the wire (loopback: the server has it microseconds later).
type ackRecorder struct {
	mu   sync.Mutex
	acks map[string][]ack // version → each APPLIED
}

type ack struct {
	at   int64 // unix ns
	real bool  // sent by a real agent (else a lean one)
}

func newAckRecorder() *ackRecorder { return &ackRecorder{acks: map[string][]ack{}} }

func (r *ackRecorder) record(version string, real bool) {
	now := time.Now().UnixNano()
	r.mu.Lock()
	r.acks[version] = append(r.acks[version], ack{now, real})
	r.mu.Unlock()
}

// latencies returns each ack of version, as time since t0, sorted.
func (r *ackRecorder) latencies(version string, t0 int64) []time.Duration {
	return r.latenciesOf(version, t0, func(ack) bool { return true })
}

// latenciesOf is latencies of the real (real true) or lean agents only.
func (r *ackRecorder) latenciesOf(version string, t0 int64, keep func(ack) bool) []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]time.Duration, 0, len(r.acks[version]))
	for _, a := range r.acks[version] {
		if keep(a) {
			out = append(out, time.Duration(a.at-t0))
		}
	}
	slices.Sort(out)
	return out
}

func (r *ackRecorder) count(version string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.acks[version])
}

// interceptor wraps the real agent's CommandChannel to see its APPLIED.
func (r *ackRecorder) interceptor(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	cs, err := streamer(ctx, desc, cc, method, opts...)
	if err != nil || !strings.HasSuffix(method, "/CommandChannel") {
		return cs, err
	}
	return &recordingStream{ClientStream: cs, r: r}, nil
}

type recordingStream struct {
	grpc.ClientStream
	r *ackRecorder
}

func (s *recordingStream) SendMsg(m any) error {
	err := s.ClientStream.SendMsg(m)
	if cmd, ok := m.(*agentv1.Command); ok && err == nil {
		if st := cmd.GetConfigStatus(); st.GetState() == agentv1.ConfigState_CONFIG_STATE_APPLIED {
			s.r.record(st.GetVersion(), true)
		}
	}
	return err
}

// problemLog is a slog.Handler that keeps warnings and errors of the real
// agents (and the fleet's own troubles) for the report.
type problemLog struct {
	mu    sync.Mutex
	n     int
	first []string
}

func (p *problemLog) add(msg string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n++
	if len(p.first) < 5 {
		p.first = append(p.first, msg)
	}
}

func (p *problemLog) summary() (int, string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.n, strings.Join(p.first, "; ")
}

func (p *problemLog) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }

func (p *problemLog) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(r.Message)
	r.Attrs(func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
		return true
	})
	p.add(b.String())
	return nil
}

func (p *problemLog) WithAttrs([]slog.Attr) slog.Handler { return p }

func (p *problemLog) WithGroup(string) slog.Handler { return p }

// versionSet is one version's files and the set of their content hashes.
// Every lean agent that applied a version holds exactly its files, so they
// share one set, built once.
type versionSet struct {
	once   sync.Once
	files  []*agentv1.FileMeta // sorted by path, as announced
	hashes map[string]struct{}
	// distinct is the index of each content's first file: what an agent
	// holding nothing downloads.
	distinct []int
}

type versionSets struct {
	mu    sync.Mutex
	m     map[string]*versionSet
	order []string
}

// get returns the set of version, building it with files() the first time.
func (vs *versionSets) get(version string, files func() []*agentv1.FileMeta) *versionSet {
	vs.mu.Lock()
	s := vs.m[version]
	if s == nil {
		s = &versionSet{}
		vs.m[version] = s
		vs.order = append(vs.order, version)
		if len(vs.order) > 8 { // agents hold their own pointer; this only bounds the index
			delete(vs.m, vs.order[0])
			vs.order = vs.order[1:]
		}
	}
	vs.mu.Unlock()
	s.once.Do(func() {
		s.files = files()
		s.hashes = make(map[string]struct{}, len(s.files))
		for i, f := range s.files {
			if _, dup := s.hashes[f.GetSha256()]; !dup {
				s.distinct = append(s.distinct, i)
			}
			s.hashes[f.GetSha256()] = struct{}{}
		}
	})
	return s
}

// leanAgent speaks the agent protocol as agent/client does — its own
// token and TLS connection with the real agent's flow-control windows and
// no read buffer, connect request with the delta, packed, inline and
// columns capabilities, the newest announcement wins, a full manifest
// decoded and converted to the snapshot model (ManifestColumns.Files) by
// every agent, deltas applied to the version it holds (else a
// ManifestRequest), a Download by bitmap of only the files whose content it
// lacks through the same ContentCodec, every file's SHA-256 and the stream
// checksum verified, WRITTEN then APPLIED — but writes nothing to disk and
// keeps no content, does not validate the manifest against the volume's
// limits (paths, sizes: sidecar.Manifest.Validate), and shares one copy of
// each version's file list with the other lean agents once decoded: what a
// real agent does with the volume is measured by the real agents and by the
// agent process.
type leanAgent struct {
	idx int
	f   *fleet
	// have is the content of the version applied last; only the worker
	// writes it, the session reads it when (re)connecting.
	have    atomic.Pointer[versionSet]
	version atomic.Pointer[string]
}

type leanAnnouncement struct {
	id     string
	config *agentv1.ConfigAvailable
}

func (a *leanAgent) run(ctx context.Context, rpc agentv1.CommanderClient) {
	backoff := 100 * time.Millisecond
	for {
		err := a.session(ctx, rpc)
		if ctx.Err() != nil {
			return
		}
		a.f.problems.add(fmt.Sprintf("%s: session ended: %v", benchAgentID(a.idx), err))
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 2*time.Second)
	}
}

func (a *leanAgent) session(ctx context.Context, rpc agentv1.CommanderClient) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+benchToken(a.idx))
	stream, err := rpc.CommandChannel(ctx)
	if err != nil {
		return err
	}
	var sendMu sync.Mutex
	send := func(cmd *agentv1.Command, correlation string) error {
		cmd.Metadata = &agentv1.Metadata{MessageId: rand.Text(), CorrelationId: correlation,
			AgentId: benchAgentID(a.idx), Timestamp: timestamppb.Now()}
		sendMu.Lock()
		defer sendMu.Unlock()
		return stream.Send(cmd)
	}
	current := ""
	if v := a.version.Load(); v != nil {
		current = *v
	}
	if err := send(&agentv1.Command{Payload: &agentv1.Command_ConnectRequest{ConnectRequest: &agentv1.AgentConnectRequest{
		AgentId: benchAgentID(a.idx), Pod: &agentv1.PodRef{Name: fmt.Sprintf("gatehouse-proxy-%05d", a.idx), Namespace: "gatehouse-system"},
		AgentVersion: "bench-lean", CurrentVersion: current,
		Capabilities: leanCapabilities(),
	}}}, ""); err != nil {
		return err
	}
	first, err := stream.Recv()
	if err != nil {
		return err
	}
	if !first.GetConnectResponse().GetAccepted() {
		return fmt.Errorf("refused: %s", first.GetConnectResponse().GetReason())
	}
	latest := make(chan leanAnnouncement, 1)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	wg.Go(func() {
		for {
			select {
			case <-ctx.Done():
				return
			case an := <-latest:
				a.apply(ctx, rpc, &an, send)
			}
		}
	})
	for {
		cmd, err := stream.Recv()
		if err != nil {
			return err
		}
		if ca := cmd.GetConfigAvailable(); ca != nil {
			an := leanAnnouncement{id: cmd.GetMetadata().GetMessageId(), config: ca}
			for sent := false; !sent; { // replace an unhandled older one
				select {
				case latest <- an:
					sent = true
				default:
					select {
					case <-latest:
					default:
					}
				}
			}
		}
	}
}

// leanCapabilities are a real agent's, less confirm (no proxy here) and
// less columns with -agentbench.columns=false.
func leanCapabilities() []string {
	caps := []string{agentv1.CapabilityDelta, agentv1.CapabilityPacked, agentv1.CapabilityInline}
	if *columns {
		caps = append(caps, agentv1.CapabilityColumns)
	}
	return caps
}

func (a *leanAgent) apply(ctx context.Context, rpc agentv1.CommanderClient, an *leanAnnouncement, send func(*agentv1.Command, string) error) {
	version := an.config.GetVersion()
	status := func(state agentv1.ConfigState, reason string) {
		_ = send(&agentv1.Command{Payload: &agentv1.Command_ConfigStatus{ConfigStatus: &agentv1.ConfigStatus{
			Version: version, State: state, Reason: reason}}}, an.id)
	}
	set := a.versionSet(an.config)
	// For a delta from the version this agent holds, only the changed
	// entries can be missing, as a real agent finds when it links the rest.
	var delta []*agentv1.FileMeta
	var content [][]byte
	if an.config.GetBaseVersion() != "" {
		delta, content = an.config.GetChanged(), an.config.GetContent()
	}
	// The decoded announcement (about 3 MB with a full 10 MB manifest) is
	// not needed any more: let it go before the download, as a thousand
	// agents wait in it.
	an.config = nil
	if set == nil {
		// The delta's base is not the version this agent holds: ask for
		// the full manifest, as agent/client does.
		_ = send(&agentv1.Command{Payload: &agentv1.Command_ManifestRequest{ManifestRequest: &agentv1.ManifestRequest{Version: version}}}, an.id)
		return
	}
	want := a.plan(set, delta)
	if len(content) > 0 {
		// The changed files' content came with the delta: check it as a
		// real agent does (sidecar.FileWriter), download nothing.
		if err := checkInline(delta, content); err != nil {
			a.f.problems.add(fmt.Sprintf("%s: %v", benchAgentID(a.idx), err))
			status(agentv1.ConfigState_CONFIG_STATE_REJECTED, err.Error())
			return
		}
		want = nil
	}
	if len(want) > 0 {
		if err := a.download(ctx, rpc, version, set.files, want); err != nil {
			if ctx.Err() == nil {
				a.f.problems.add(fmt.Sprintf("%s: %v", benchAgentID(a.idx), err))
				status(agentv1.ConfigState_CONFIG_STATE_REJECTED, err.Error())
			}
			return
		}
	}
	a.have.Store(set)
	a.version.Store(&version)
	status(agentv1.ConfigState_CONFIG_STATE_WRITTEN, "")
	status(agentv1.ConfigState_CONFIG_STATE_APPLIED, "")
	a.f.acks.record(version, false)
}

// versionSet returns the announced version's files: the manifest, or the
// delta applied to the version this agent holds (nil if it names another
// base). Lean agents share the result, so a delta is applied once.
func (a *leanAgent) versionSet(c *agentv1.ConfigAvailable) *versionSet {
	if c.GetBaseVersion() == "" {
		files := c.GetManifest().GetFiles()
		if cols := c.GetManifestColumns(); cols != nil {
			// Every agent reads the columns, as a real one does; the
			// set is built once.
			decoded, err := cols.Files()
			if err != nil {
				a.f.problems.add(fmt.Sprintf("%s: %v", benchAgentID(a.idx), err))
				return nil
			}
			return a.f.sets.get(c.GetVersion(), func() []*agentv1.FileMeta { return agentv1.NewManifest(decoded).GetFiles() })
		}
		return a.f.sets.get(c.GetVersion(), func() []*agentv1.FileMeta { return files })
	}
	base := a.have.Load()
	if v := a.version.Load(); base == nil || v == nil || *v != c.GetBaseVersion() {
		return nil
	}
	changed, removed := c.GetChanged(), c.GetRemoved()
	return a.f.sets.get(c.GetVersion(), func() []*agentv1.FileMeta {
		out := make([]*agentv1.FileMeta, 0, len(base.files)+len(changed))
		j, k := 0, 0
		for _, f := range base.files {
			for j < len(changed) && changed[j].GetPath() < f.GetPath() {
				out = append(out, changed[j])
				j++
			}
			switch {
			case k < len(removed) && removed[k] == f.GetPath():
				k++
			case j < len(changed) && changed[j].GetPath() == f.GetPath():
				out = append(out, changed[j])
				j++
			default:
				out = append(out, f)
			}
		}
		return append(out, changed[j:]...)
	})
}

// plan returns the indexes of the files whose content the agent lacks,
// each content once, in manifest order: among the changed entries of a
// delta, or else among all files.
func (a *leanAgent) plan(set *versionSet, changed []*agentv1.FileMeta) []int {
	have := a.have.Load()
	if have == nil && changed == nil {
		// Nothing held: every distinct content, worked out once per version.
		return slices.Clone(set.distinct)
	}
	seen := make(map[string]struct{}, 16)
	var want []int
	consider := func(i int, f *agentv1.FileMeta) {
		h := f.GetSha256()
		if have != nil {
			if _, ok := have.hashes[h]; ok {
				return
			}
		}
		if _, dup := seen[h]; dup {
			return
		}
		seen[h] = struct{}{}
		want = append(want, i)
	}
	if changed == nil {
		for i, f := range set.files {
			consider(i, f)
		}
		return want
	}
	for _, f := range changed {
		i, ok := slices.BinarySearchFunc(set.files, f.GetPath(), func(x *agentv1.FileMeta, p string) int { return strings.Compare(x.GetPath(), p) })
		if ok {
			consider(i, set.files[i])
		}
	}
	slices.Sort(want)
	return want
}

// download fetches the files by bitmap and verifies them as agent/client
// does: the packed content is cut at the manifest's sizes, and each file's
// SHA-256, the total and the stream checksum are checked.
func (a *leanAgent) download(ctx context.Context, rpc agentv1.CommanderClient, version string, files []*agentv1.FileMeta, want []int) error {
	bits := agentv1.NewFileBitmap(len(files))
	for _, i := range want {
		bits.Set(i)
	}
	total := sha256.New()
	var header *agentv1.DownloadHeader
	next := 0
	file := sha256.New()
	var got uint64 // bytes of files[want[next]] so far
	// As sidecar.FileWriter and the agent's receiver: the hash and its
	// checksum line without an allocation per file.
	var sum [sha256.Size]byte
	var hexSum [2 * sha256.Size]byte
	var line []byte
	finish := func() error {
		f := files[want[next]]
		hex.Encode(hexSum[:], file.Sum(sum[:0]))
		if string(hexSum[:]) != f.GetSha256() {
			return fmt.Errorf("file %s does not verify", f.GetPath())
		}
		line = append(append(line[:0], f.GetSha256()...), '\n')
		total.Write(line) // the header's checksum covers the file hashes in order
		file.Reset()
		got = 0
		next++
		return nil
	}
	skipEmpty := func() error {
		for next < len(want) && files[want[next]].GetSize() == 0 {
			if err := finish(); err != nil {
				return err
			}
		}
		return nil
	}
	consume := func(b []byte) error {
		if header == nil {
			return errors.New("download stream out of order")
		}
		for len(b) > 0 {
			if next >= len(want) {
				return errors.New("more content than requested")
			}
			k := min(uint64(len(b)), files[want[next]].GetSize()-got)
			file.Write(b[:k])
			got += k
			b = b[k:]
			if got == files[want[next]].GetSize() {
				if err := finish(); err != nil {
					return err
				}
				if err := skipEmpty(); err != nil {
					return err
				}
			}
		}
		return nil
	}
	// As agent/client: packed content is hashed straight from gRPC's
	// receive buffers.
	codec := &client.ContentCodec{Sink: consume}
	if *protoDecode {
		codec.Sink = nil // every message decoded as protobuf, as before issue 27
	}
	stream, err := rpc.Download(ctx, &agentv1.DownloadRequest{Version: version, Files: bits}, codec.CallOption())
	if err != nil {
		return err
	}
	for {
		c, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if cerr := codec.Err(); cerr != nil {
			return cerr
		}
		if err != nil {
			return err
		}
		if codec.Consumed() {
			continue
		}
		if h := c.GetHeader(); h != nil {
			var size uint64
			for _, i := range want {
				size += files[i].GetSize()
			}
			if header != nil || int(h.GetFileCount()) != len(want) || h.GetTotalBytes() != size {
				return fmt.Errorf("bad download header %v", h)
			}
			header = h
			if err := skipEmpty(); err != nil {
				return err
			}
			continue
		}
		b := c.GetContent()
		if b == nil {
			return errors.New("download stream out of order")
		}
		if err := consume(b); err != nil {
			return err
		}
	}
	if header == nil || next != len(want) || hex.EncodeToString(total.Sum(nil)) != header.GetChecksum() {
		return errors.New("download incomplete or checksum mismatch")
	}
	return nil
}

// checkInline checks a delta's inline content against its changed entries.
func checkInline(changed []*agentv1.FileMeta, content [][]byte) error {
	if len(content) != len(changed) {
		return fmt.Errorf("%d contents for %d changed files", len(content), len(changed))
	}
	for i, f := range changed {
		if sum := sha256.Sum256(content[i]); hex.EncodeToString(sum[:]) != f.GetSha256() || uint64(len(content[i])) != f.GetSize() {
			return fmt.Errorf("inline content of %s does not match its entry", f.GetPath())
		}
	}
	return nil
}
