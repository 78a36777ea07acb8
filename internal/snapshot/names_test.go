package snapshot

import "testing"

func TestIsDNSSubdomain(t *testing.T) {
	for s, want := range map[string]bool{
		"web": true, "team-a.web": true, "a.b.c": true, "a1-b": true,
		"": false, ".": false, "a.": false, ".a": false, "a..b": false, "-a": false, "a-": false, "A": false, "a_b": false,
	} {
		if got := IsDNSSubdomain(s); got != want {
			t.Errorf("IsDNSSubdomain(%q) = %v, want %v", s, got, want)
		}
	}
	long := make([]byte, 254)
	for i := range long {
		long[i] = 'a'
		if i%60 == 59 {
			long[i] = '.'
		}
	}
	if IsDNSSubdomain(string(long)) || !IsDNSSubdomain(string(long[:253])) {
		t.Error("the 253-character bound does not hold")
	}
}

// TestIsDNSSubdomainAllocatesNothing: the proxy checks two names with it on
// every request (docs/performance.md, issue 27 §2, second session).
func TestIsDNSSubdomainAllocatesNothing(t *testing.T) {
	name := "team-a.web.frontend"
	if n := testing.AllocsPerRun(100, func() { _ = IsDNSSubdomain(name) }); n != 0 {
		t.Errorf("IsDNSSubdomain allocates %.0f times a call", n)
	}
}
