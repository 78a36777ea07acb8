package contract

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/gatehouse-dev/gatehouse/sidecar"
)

// TestProxyStateWireFormat: the proxy's admin state and what the agent's
// --confirm-url reads are one type, sidecar.ProxyState (the proxy may not
// import the agent, nor the agent the proxy). Its JSON is pinned here: a
// proxy and an agent of different releases may meet in one Pod, and an
// empty rejection is left out.
func TestProxyStateWireFormat(t *testing.T) {
	tests := []struct {
		state sidecar.ProxyState
		json  string
	}{
		{sidecar.ProxyState{ServedVersion: "v2", RejectedVersion: "v3", RejectedReason: "policy: does not compile"},
			`{"servedVersion":"v2","rejectedVersion":"v3","rejectedReason":"policy: does not compile"}`},
		{sidecar.ProxyState{ServedVersion: "v2"}, `{"servedVersion":"v2"}`},
		{sidecar.ProxyState{}, `{"servedVersion":""}`},
	}
	for _, tt := range tests {
		raw, err := json.Marshal(tt.state)
		if err != nil {
			t.Fatal(err)
		}
		if string(raw) != tt.json {
			t.Errorf("the proxy writes %s, want %s", raw, tt.json)
		}
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		var read sidecar.ProxyState
		if err := dec.Decode(&read); err != nil || read != tt.state {
			t.Errorf("the agent reads %+v (%v) from %s, want %+v", read, err, raw, tt.state)
		}
	}
}
