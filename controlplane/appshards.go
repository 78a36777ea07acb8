package controlplane

import (
	"cmp"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/gatehouse-dev/gatehouse/internal/argocd/settings"
	"github.com/gatehouse-dev/gatehouse/internal/snapshot"
)

// appIndex places a State's Applications in the snapshot's application
// shards and stamps a shard with a new generation on every change to one of
// its Applications. The Store keeps it current under its lock; a Builder
// then reads, after a one-Application change, the keys of one shard instead
// of every Application (at 100,000 Applications, grouping and sorting all
// of them was most of a one-change build).
type appIndex struct {
	id     uint64 // distinguishes indexes: generations compare only within one
	next   uint64
	shards map[string]*indexShard
}

// indexShard holds its Applications by key (a copy of the State's: reading
// them from the State's map of every Application cost a tenth of a full
// build in cache misses).
type indexShard struct {
	apps map[string]snapshot.Application
	gen  uint64
}

var appIndexIDs atomic.Uint64

func newAppIndex(apps map[string]snapshot.Application) *appIndex {
	x := &appIndex{id: appIndexIDs.Add(1), shards: map[string]*indexShard{}}
	for key, a := range apps {
		x.touch(key, &a)
	}
	return x
}

// touch records that the Application at key changed to a (nil: was
// deleted).
func (x *appIndex) touch(key string, a *snapshot.Application) {
	path := snapshot.ApplicationShard(key)
	s := x.shards[path]
	if s == nil {
		s = &indexShard{apps: map[string]snapshot.Application{}}
		x.shards[path] = s
	}
	if a != nil {
		s.apps[key] = *a
	} else {
		delete(s.apps, key)
	}
	x.next++
	s.gen = x.next
}

// appShards is the Builder's memory of the shards it listed: a shard's
// list is made again only when its generation or what decides which
// namespaces are enabled changed.
type appShards struct {
	indexID uint64
	enabled string // the settings NamespaceEnabled depends on
	stamp   uint64
	shards  map[string]listedShard
}

type listedShard struct {
	gen  uint64
	list snapshot.AppShard
}

// build returns st's enabled Applications by shard. Without an index (a
// State not kept by a Store) it indexes st first, which costs what every
// build did before the index: one pass over every Application.
func (m *appShards) build(st *State, set *settings.Settings) map[string]snapshot.AppShard {
	x := st.apps
	if x == nil {
		x = newAppIndex(st.Applications)
	}
	enabledKey := set.ControlPlaneNamespace + "\x00" + strings.Join(set.ApplicationNamespaces, "\x00")
	if x.id != m.indexID || enabledKey != m.enabled {
		m.indexID, m.enabled, m.shards = x.id, enabledKey, map[string]listedShard{}
	}
	enabled := map[string]bool{}
	out := make(map[string]snapshot.AppShard, len(x.shards))
	for path, s := range x.shards {
		if old, ok := m.shards[path]; ok && old.gen == s.gen {
			out[path] = old.list
			continue
		}
		apps := make([]snapshot.Application, 0, len(s.apps))
		for _, a := range s.apps {
			ok, seen := enabled[a.Namespace]
			if !seen {
				// A pattern that times out counts as not enabled: fail closed.
				ok, _ = set.NamespaceEnabled(a.Namespace)
				enabled[a.Namespace] = ok
			}
			if ok {
				apps = append(apps, a)
			}
		}
		slices.SortFunc(apps, func(a, b snapshot.Application) int {
			return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name))
		})
		m.stamp++
		l := listedShard{gen: s.gen, list: snapshot.AppShard{Apps: apps, Stamp: m.stamp}}
		m.shards[path], out[path] = l, l.list
	}
	return out
}
