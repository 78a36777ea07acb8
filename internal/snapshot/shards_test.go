package snapshot

import (
	"reflect"
	"testing"
)

// TestAppShardGivesBackWhatItPacked: every string of every Application,
// empty ones included, comes back from a packed shard as it went in.
func TestAppShardGivesBackWhatItPacked(t *testing.T) {
	apps := []Application{
		{Namespace: "team-a", Name: "web", Project: "team-a", Destination: Destination{Server: "https://kubernetes.default.svc", Namespace: "web"}},
		{Namespace: "team-a", Name: "", Project: "", Destination: Destination{}},
		{Namespace: "team-b", Name: "db", Project: "shared", Destination: Destination{Name: "in-cluster", Namespace: "db"}},
		{},
		{Namespace: "x", Name: "y", Project: "z", Destination: Destination{Name: "n", Server: "s", Namespace: "ns"}},
	}
	s, ok := packApps(apps)
	if !ok {
		t.Fatal("a small shard did not pack")
	}
	got := s.appendTo([]Application{{Name: "before"}})
	if !reflect.DeepEqual(got[1:], apps) || got[0].Name != "before" {
		t.Fatalf("unpacked %+v, want %+v after the first", got, apps)
	}
	if got := (appShard{}).appendTo(nil); len(got) != 0 {
		t.Fatalf("an empty shard gave %d Applications", len(got))
	}
}

// TestAppShardPacksEveryField: a shard keeps the Application's strings that
// appStrings lists; a field added to Application (or Destination) must be
// added there, or a reused shard would lose it.
func TestAppShardPacksEveryField(t *testing.T) {
	var count func(reflect.Type) int
	count = func(ty reflect.Type) int {
		n := 0
		for f := range ty.Fields() {
			switch f.Type.Kind() {
			case reflect.String:
				n++
			case reflect.Struct:
				n += count(f.Type)
			default:
				t.Fatalf("Application has a %s field %s: pack it in appShard", f.Type, f.Name)
			}
		}
		return n
	}
	if n := count(reflect.TypeFor[Application]()); n != appFields {
		t.Fatalf("Application has %d strings, a shard packs %d", n, appFields)
	}
	var a Application
	seen := map[*string]bool{}
	for _, f := range appStrings(&a) {
		seen[f] = true
	}
	if len(seen) != appFields {
		t.Fatal("appStrings lists a field twice")
	}
}

// TestDecoderKeepsNoPointers: what a Decoder keeps of a shard between
// snapshots is bytes and numbers, which the collector does not scan.
func TestDecoderKeepsNoPointers(t *testing.T) {
	ty := reflect.TypeFor[appShard]()
	for f := range ty.Fields() {
		if f.Type.Kind() != reflect.Slice || hasPointers(f.Type.Elem()) {
			t.Fatalf("appShard.%s (%s) holds pointers for the collector to scan", f.Name, f.Type)
		}
	}
}

func hasPointers(ty reflect.Type) bool {
	switch ty.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return false
	case reflect.Array:
		return hasPointers(ty.Elem())
	case reflect.Struct:
		for f := range ty.Fields() {
			if hasPointers(f.Type) {
				return true
			}
		}
		return false
	}
	return true
}
