package sidecar

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// carryFiles: v2 changes one file of five and keeps the rest.
func carryFiles(version string) []fileSpec {
	return []fileSpec{
		cfg("config/a.json", `{"a":1}`),
		cfg("config/b.json", `{"b":2}`),
		cfg("config/c.json", `{"c":3}`),
		policy("policy/p.rego", "package p"),
		cfg("config/version.json", `{"v":"`+version+`"}`),
	}
}

// stageV2 begins v2 on w (whose current version is v1) and returns the stage,
// or Begin's error.
func stageV2(t *testing.T, w *Writer) (*Stage, error) {
	t.Helper()
	m, _ := snapshotOf("v2", carryFiles("v2")...)
	st, err := w.Begin(m)
	if err == nil {
		t.Cleanup(st.Abort)
	}
	return st, err
}

// mtimeOf and setMtime read and set a file's modification time: tests that a
// change which keeps it is still caught where the design says it is.
func mtimeOf(t *testing.T, p string) time.Time {
	t.Helper()
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.ModTime()
}

func setMtime(t *testing.T, p string, mt time.Time) {
	t.Helper()
	if err := os.Chtimes(p, mt, mt); err != nil {
		t.Fatal(err)
	}
}

// A file linked from a version this writer proved (wrote, or checked in full)
// carries the proof: nothing is read. One linked from a version nothing proved
// (a writer that has not checked the volume yet) is read and hashed.
func TestStageCarriesProofOnlyFromAVerifiedVersion(t *testing.T) {
	root := t.TempDir()
	w := newTestWriter(t, root)
	mustWrite(t, w, "v1", carryFiles("v1")...)

	st, err := stageV2(t, w)
	if err != nil {
		t.Fatal(err)
	}
	if st.Linked() != 4 || st.Hashed() != 0 {
		t.Fatalf("written by this writer: Linked %d, Hashed %d; want 4, 0", st.Linked(), st.Hashed())
	}
	st.Abort()

	fresh := newTestWriter(t, root) // knows v1 only from its manifest.json
	st, err = stageV2(t, fresh)
	if err != nil {
		t.Fatal(err)
	}
	if st.Linked() != 4 || st.Hashed() != 4 {
		t.Fatalf("unverified source: Linked %d, Hashed %d; want 4, 4", st.Linked(), st.Hashed())
	}
	st.Abort()

	if _, err := fresh.VerifyCurrent(); err != nil {
		t.Fatal(err)
	}
	st, err = stageV2(t, fresh)
	if err != nil {
		t.Fatal(err)
	}
	if st.Linked() != 4 || st.Hashed() != 0 {
		t.Fatalf("after a full check: Linked %d, Hashed %d; want 4, 0", st.Linked(), st.Hashed())
	}
}

// What carries a proof is the very file that was proven: a linked file whose
// source was replaced (another inode, even with the same size, mode and time)
// or written in place (another modification time) is hashed, and a mismatch
// marks the current version damaged, so the next try writes it whole.
func TestStageHashesALinkWhoseSourceChanged(t *testing.T) {
	tests := []struct {
		name   string
		damage func(t *testing.T, p string)
	}{
		{"replaced by another file, time kept", func(t *testing.T, p string) {
			mt := mtimeOf(t, p)
			tmp := p + ".new"
			if err := os.WriteFile(tmp, []byte(`{"a":9}`), 0o640); err != nil {
				t.Fatal(err)
			}
			setMtime(t, tmp, mt)
			if err := os.Rename(tmp, p); err != nil {
				t.Fatal(err)
			}
		}},
		{"written in place", func(t *testing.T, p string) {
			if err := os.WriteFile(p, []byte(`{"a":9}`), 0o640); err != nil {
				t.Fatal(err)
			}
			// The same second as the write that made it, as a fast edit
			// would be: only the nanoseconds tell.
			setMtime(t, p, mtimeOf(t, p).Add(time.Nanosecond))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			w := newTestWriter(t, root)
			mustWrite(t, w, "v1", carryFiles("v1")...)
			tt.damage(t, filepath.Join(root, DirVersions, "v1", "config", "a.json"))

			if _, err := stageV2(t, w); !errors.Is(err, ErrDamaged) {
				t.Fatalf("Begin = %v; want ErrDamaged", err)
			}
			st, err := stageV2(t, w)
			if err != nil {
				t.Fatalf("Begin again: %v", err)
			}
			if st.Linked() != 0 || len(st.Missing()) != 5 {
				t.Fatalf("after the damage: Linked %d, Missing %d; want 0, 5", st.Linked(), len(st.Missing()))
			}
		})
	}
}

// What the check after a write does not see, the full check does: a file
// written in place with its modification time set back keeps its identity,
// so its proof carries (CheckCurrent passes without reading it), and
// VerifyCurrent, which the agent runs on a schedule, finds it; the version is
// then damaged for CheckCurrent too, and written again whole.
func TestFullCheckFindsWhatCarriedProofsMiss(t *testing.T) {
	root := t.TempDir()
	w := newTestWriter(t, root)
	mustWrite(t, w, "v1", carryFiles("v1")...)
	p := filepath.Join(root, DirVersions, "v1", "config", "a.json")
	mt := mtimeOf(t, p)
	f, err := os.OpenFile(p, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("X"), 0); err != nil {
		t.Fatal(err)
	}
	_ = f.Close()
	setMtime(t, p, mt)

	m2, bySHA := snapshotOf("v2", carryFiles("v2")...)
	if err := w.Write(m2, contentFrom(bySHA)); err != nil {
		t.Fatalf("Write v2: %v", err)
	}
	if _, err := w.CheckCurrent(); err != nil {
		t.Fatalf("CheckCurrent reads files it has proofs for: %v", err)
	}
	if _, err := w.VerifyCurrent(); err == nil {
		t.Fatal("VerifyCurrent passes a damaged version")
	}
	if _, err := w.CheckCurrent(); err == nil {
		t.Fatal("CheckCurrent passes a version the full check found damaged")
	}
	if err := w.Write(m2, contentFrom(bySHA)); err != nil {
		t.Fatalf("Write v2 again: %v", err)
	}
	s, err := Load(root, Limits{})
	if err != nil {
		t.Fatalf("Load after the repair: %v", err)
	}
	if got, _ := s.File("config/a.json"); string(got) != `{"a":1}` {
		t.Fatalf("config/a.json = %q after the repair", got)
	}
}
