package snapshot

import (
	"bytes"
	"testing"
)

// marshalApplications must write the very bytes marshal writes: replicas of
// different versions and the version hash depend on it.
func TestMarshalApplicationsIsMarshal(t *testing.T) {
	cases := [][]Application{
		{{Namespace: "team-a", Name: "api", Project: "p", Destination: Destination{Name: "in-cluster", Namespace: "ns"}}},
		{{Namespace: "a", Name: "b", Project: "c"}, {Namespace: "a", Name: "c", Project: "c", Destination: Destination{Server: "https://k:6443"}}},
		{{Namespace: "a", Name: "b", Project: "c", Destination: Destination{Name: "n", Server: "s", Namespace: "x"}}},
		{{Namespace: "a", Name: "b", Project: "q\"uote\\back<html>&", Destination: Destination{Namespace: "tab\there\nnl\u2028ünï\x01\xff"}}},
		{},
	}
	for _, apps := range cases {
		checkMarshalApplications(t, apps)
	}
}

func checkMarshalApplications(t *testing.T, apps []Application) {
	t.Helper()
	want, err := marshal(applicationsDoc{Applications: apps})
	if err != nil {
		t.Fatal(err)
	}
	if got := marshalApplications(apps); !bytes.Equal(got, want) {
		t.Fatalf("marshalApplications(%+v):\n%s\nencoding/json:\n%s", apps, got, want)
	}
}

func FuzzMarshalApplications(f *testing.F) {
	f.Add("team-a", "api", "default", "in-cluster", "", "ns")
	f.Add("a\"", "\\b", "<p>", "\x00", "\u2029", "\xc3")
	f.Fuzz(func(t *testing.T, ns, name, project, dname, server, dns string) {
		checkMarshalApplications(t, []Application{
			{Namespace: ns, Name: name, Project: project, Destination: Destination{Name: dname, Server: server, Namespace: dns}},
			{Namespace: ns, Name: name + "x", Project: project, Destination: Destination{Namespace: dns}},
		})
	})
}

// NewFrom reuses a hash only for the very same bytes at the same path: a
// file whose bytes are new is hashed, so the version is New's.
func TestNewFromHashesWhatChanged(t *testing.T) {
	a, b := []byte("one"), []byte("two")
	prev, err := New([]File{{Path: "a", Data: a}, {Path: "b", Data: b}})
	if err != nil {
		t.Fatal(err)
	}
	files := []File{{Path: "a", Data: a}, {Path: "b", Data: []byte("TWO")}}
	got, err := NewFrom(prev, files)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := New(files)
	if got.Version() != want.Version() || got.Files()[1].SHA256 != Hash([]byte("TWO")) {
		t.Fatalf("NewFrom version %s, New %s", got.Version(), want.Version())
	}
	// The same length at another path, or a copy, is hashed too.
	moved, _ := NewFrom(prev, []File{{Path: "b", Data: a}})
	if moved.Files()[0].SHA256 != Hash(a) {
		t.Fatal("a file's hash was taken from another path")
	}
}

// With AppShards, an Encoder encodes a shard again only when its stamp is
// new, and checks every shard it encodes: an Application in the wrong shard,
// listed twice or without a project is refused.
func TestEncoderAppShards(t *testing.T) {
	app := func(name string) Application { return Application{Namespace: "ns", Name: name, Project: "p"} }
	a, b := app("a"), app("b")
	shardA := ApplicationShard(a.Key())
	var e Encoder
	encode := func(shards map[string]AppShard) ([]File, error) {
		return e.Encode(&Content{AppShards: shards})
	}
	first, err := encode(map[string]AppShard{shardA: {Apps: []Application{a}, Stamp: 1}})
	if err != nil {
		t.Fatal(err)
	}
	again, err := encode(map[string]AppShard{shardA: {Apps: []Application{a}, Stamp: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if &first[0].Data[0] != &again[0].Data[0] {
		t.Fatal("a shard with a seen stamp was encoded again")
	}
	plain, _ := Encode(&Content{Applications: []Application{a}})
	if !bytes.Equal(plain[len(plain)-1].Data, again[len(again)-1].Data) {
		t.Fatal("AppShards gave another index than Applications")
	}
	for name, shards := range map[string]map[string]AppShard{
		"wrong shard": {ApplicationShard(b.Key()) + "x": {Apps: []Application{b}, Stamp: 2}},
		"twice":       {shardA: {Apps: []Application{a, a}, Stamp: 3}},
		"no project":  {shardA: {Apps: []Application{{Namespace: "ns", Name: "a"}}, Stamp: 4}},
		"stamp 0":     {shardA: {Apps: []Application{{Namespace: "ns", Name: "a"}}}},
	} {
		if _, err := encode(shards); err == nil {
			t.Errorf("%s: encoded", name)
		}
	}
	if _, err := e.Encode(&Content{Applications: []Application{a}, AppShards: map[string]AppShard{}}); err == nil {
		t.Error("Applications given both ways: encoded")
	}
}
