package policies

import (
	"strconv"
	"testing"
	"time"
)

func TestDecisionCacheBounds(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	tests := []struct {
		name string
		size int
		// puts distinct keys k0, k1, ... in that order.
		puts int
		// at is when the lookups happen, after the puts at now.
		at time.Duration
		// kept are the keys that must still be there, gone those that must not.
		kept, gone []int
		// most is the most entries the cache may hold.
		most int
	}{
		{name: "holds what fits", size: 10_000, puts: 100, kept: []int{0, 50, 99}, most: 100},
		{name: "a full shard forgets its oldest key first", size: cacheShards, puts: 20 * cacheShards,
			kept: []int{20*cacheShards - 1}, gone: []int{0, 1, 2}, most: cacheShards},
		{name: "an entry lives for the TTL", size: 100, puts: 3, at: 5*time.Second - time.Nanosecond, kept: []int{0, 1, 2}, most: 3},
		{name: "and not a moment longer", size: 100, puts: 3, at: 5 * time.Second, gone: []int{0, 1, 2}, most: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newDecisionCache(tt.size, 5*time.Second)
			for i := range tt.puts {
				c.put([]byte("k"+strconv.Itoa(i)), Decision{Allow: true, Reason: strconv.Itoa(i)}, now)
			}
			for _, i := range tt.kept {
				d, ok := c.get([]byte("k"+strconv.Itoa(i)), now.Add(tt.at))
				if !ok || d.Reason != strconv.Itoa(i) {
					t.Errorf("k%d: got %+v, %v; want its decision", i, d, ok)
				}
			}
			for _, i := range tt.gone {
				if d, ok := c.get([]byte("k"+strconv.Itoa(i)), now.Add(tt.at)); ok {
					t.Errorf("k%d: still there (%+v)", i, d)
				}
			}
			if n := c.len(); n > tt.most {
				t.Errorf("%d entries, want at most %d", n, tt.most)
			}
			// The cache grows as it fills: no shard keeps room for keys it
			// never had (the garbage collector scans every byte of it).
			for i := range c.shards {
				if s := &c.shards[i]; cap(s.ring) > 2*max(len(s.entries), 4) {
					t.Errorf("shard %d keeps a ring of %d for %d entries", i, cap(s.ring), len(s.entries))
				}
			}
		})
	}
}

func TestDecisionCacheRefreshKeepsOneSlot(t *testing.T) {
	c := newDecisionCache(cacheShards, time.Second)
	now := time.Unix(1_700_000_000, 0)
	for range 100 {
		c.put([]byte("same"), Decision{Allow: true}, now)
	}
	if n := c.len(); n != 1 {
		t.Fatalf("one key put 100 times holds %d entries", n)
	}
	if s := c.shard([]byte("same")); len(s.ring) != 1 {
		t.Fatalf("its shard's ring has %d keys", len(s.ring))
	}
}
