package contract

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/gatehouse-dev/gatehouse/agent/client"
	"github.com/gatehouse-dev/gatehouse/proxy"
)

// TestProxyStateMatchesTheAgent: the proxy's admin state (proxy.State) and
// what the agent's --confirm-url reads (client.ProxyState) are one JSON
// document. The proxy may not import the agent's client (it links gRPC),
// so the two types are kept in step here: the same JSON fields, and a
// state the proxy writes reads back whole, strictly, in the agent.
func TestProxyStateMatchesTheAgent(t *testing.T) {
	fields := func(v any) map[string]string {
		out := map[string]string{}
		rt := reflect.TypeOf(v)
		for i := range rt.NumField() {
			f := rt.Field(i)
			out[f.Tag.Get("json")] = f.Type.String()
		}
		return out
	}
	if p, a := fields(proxy.State{}), fields(client.ProxyState{}); !reflect.DeepEqual(p, a) {
		t.Fatalf("proxy.State's JSON fields %v, the agent's ProxyState %v: change both together", p, a)
	}
	written := proxy.State{ServedVersion: "v2", RejectedVersion: "v3", RejectedReason: "policy: does not compile"}
	raw, err := json.Marshal(written)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var read client.ProxyState
	if err := dec.Decode(&read); err != nil {
		t.Fatalf("the agent cannot read the proxy's state %s: %v", raw, err)
	}
	if read.ServedVersion != written.ServedVersion || read.RejectedVersion != written.RejectedVersion || read.RejectedReason != written.RejectedReason {
		t.Fatalf("the agent read %+v from %s", read, raw)
	}
}
