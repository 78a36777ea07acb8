package kubeyaml_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/kubeyaml"
)

const oneCM = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n"

// tree builds a directory: each entry is a file's content, or, when it
// starts with "->", a symbolic link to the rest, or "fifo" / "socket".
func tree(t *testing.T, entries map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range entries {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		var err error
		switch {
		case strings.HasPrefix(content, "->"):
			err = os.Symlink(strings.TrimPrefix(content, "->"), p)
		case content == "fifo":
			err = syscall.Mkfifo(p, 0o644)
		case content == "socket":
			var l net.Listener
			// Socket paths are short; listen from inside the directory.
			l, err = net.Listen("unix", p)
			if err == nil {
				t.Cleanup(func() { l.Close() })
			}
		default:
			err = os.WriteFile(p, []byte(content), 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// readWithin runs Read and fails the test if it has not returned by the
// time its context ends (plus a margin): a read that blocks on a named pipe
// must fail the test, not hang the suite.
func readWithin(t *testing.T, paths []string, o kubeyaml.Options) (*kubeyaml.Result, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	type result struct {
		res *kubeyaml.Result
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := kubeyaml.Read(ctx, paths, o)
		done <- result{res, err}
	}()
	select {
	case r := <-done:
		return r.res, r.err
	case <-ctx.Done():
		select {
		case r := <-done:
			return r.res, r.err
		case <-time.After(5 * time.Second):
			t.Fatal("Read blocked and ignored its context")
			return nil, nil
		}
	}
}

func names(res *kubeyaml.Result, dir string) (objs, skipped []string) {
	for _, o := range res.Objects {
		rel, _ := filepath.Rel(dir, o.Origin.Path)
		objs = append(objs, filepath.ToSlash(rel)+":"+o.Meta.Name)
	}
	for _, s := range res.Skipped {
		rel, _ := filepath.Rel(dir, s.Path)
		skipped = append(skipped, filepath.ToSlash(rel)+": "+s.Reason)
	}
	return objs, skipped
}

func cmNamed(n string) string { return strings.Replace(oneCM, "name: c", "name: "+n, 1) }

func TestReadDirectory(t *testing.T) {
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret.yaml"), []byte(cmNamed("outside")), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name        string
		entries     map[string]string
		wantObjects []string
		wantSkipped []string
		wantErr     string
	}{
		{
			name: "lexical order, recursive, hidden included, names as kubectl matches them",
			entries: map[string]string{
				"b.yaml": cmNamed("b"), "a.json": `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}}`,
				"a/z.yml": cmNamed("az"), ".git/x.yaml": cmNamed("hidden"), "c.YAML": cmNamed("upper"), "README.md": "# docs",
			},
			wantObjects: []string{".git/x.yaml:hidden", "a/z.yml:az", "a.json:a", "b.yaml:b"},
		},
		{
			name:        "special files are skipped and said so",
			entries:     map[string]string{"a.yaml": cmNamed("a"), "pipe.yaml": "fifo", "sock.yaml": "socket", "pipe.txt": "fifo"},
			wantObjects: []string{"a.yaml:a"},
			wantSkipped: []string{"pipe.yaml: a named pipe, not a regular file", "sock.yaml: a socket, not a regular file"},
		},
		{
			name: "links inside the tree are followed, to directories and to nothing skipped",
			entries: map[string]string{
				"real/target.txt": cmNamed("linked"), "link.yaml": "->real/target.txt", "dir.yaml": "->real",
				"gone.yaml": "->nowhere.yaml", "pipe.txt": "fifo", "to-pipe.yaml": "->pipe.txt",
			},
			wantObjects: []string{"link.yaml:linked"},
			wantSkipped: []string{
				"dir.yaml: a symbolic link to a directory (not followed, as kubectl does not)",
				"gone.yaml: a symbolic link to nothing",
				"to-pipe.yaml: a symbolic link to a named pipe, not a regular file",
			},
		},
		{
			name:    "a link out of the tree is refused",
			entries: map[string]string{"a.yaml": cmNamed("a"), "steal.yaml": "->" + filepath.Join(outside, "secret.yaml")},
			wantErr: "steal.yaml: a symbolic link to " + filepath.Join(outside, "secret.yaml") + ", outside ",
		},
		{
			name:    "a link to /dev/zero is refused",
			entries: map[string]string{"zero.yaml": "->/dev/zero"},
			wantErr: "zero.yaml: a symbolic link to /dev/zero, outside ",
		},
		{
			name:    "an empty directory has no objects",
			entries: map[string]string{"README.md": "nothing here", "only-comments.yaml": "# TODO\n---\n"},
			wantErr: "no Kubernetes objects found (1 files read, 0 skipped): check the path",
		},
		{
			name:    "a file that does not parse fails the read",
			entries: map[string]string{"a.yaml": cmNamed("a"), "b.yaml": "kind: ["},
			wantErr: "b.yaml: document 1: parse:",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := tree(t, tt.entries)
			res, err := readWithin(t, []string{dir}, kubeyaml.Options{})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			objs, skipped := names(res, dir)
			if strings.Join(objs, "\n") != strings.Join(tt.wantObjects, "\n") {
				t.Errorf("objects\n  %s\nwant\n  %s", strings.Join(objs, "\n  "), strings.Join(tt.wantObjects, "\n  "))
			}
			if strings.Join(skipped, "\n") != strings.Join(tt.wantSkipped, "\n") {
				t.Errorf("skipped\n  %s\nwant\n  %s", strings.Join(skipped, "\n  "), strings.Join(tt.wantSkipped, "\n  "))
			}
		})
	}
}

func TestReadRefusesRelativeLinkClimbingOut(t *testing.T) {
	root := t.TempDir()
	writeFixtures(t, root, []fixture{{name: "outside/secret.yaml", data: []byte(cmNamed("outside"))}, {name: "tree/a.yaml", data: []byte(cmNamed("a"))}})
	if err := os.MkdirAll(filepath.Join(root, "tree", "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../../outside/secret.yaml", filepath.Join(root, "tree", "sub", "up.yaml")); err != nil {
		t.Fatal(err)
	}
	_, err := readWithin(t, []string{filepath.Join(root, "tree")}, kubeyaml.Options{})
	if err == nil || !strings.Contains(err.Error(), "up.yaml: a symbolic link to "+filepath.Join(root, "outside", "secret.yaml")+", outside") {
		t.Fatalf("error %v", err)
	}
}

func TestReadNamedPaths(t *testing.T) {
	dir := tree(t, map[string]string{
		"a.yaml": cmNamed("a"), "any-name.txt": cmNamed("txt"), "pipe.yaml": "fifo",
		"zero.yaml": "->/dev/zero", "empty.yaml": "", "d/x.yaml": cmNamed("x"), "link-to-dir": "->d",
	})
	p := func(name string) string { return filepath.Join(dir, name) }
	tests := []struct {
		name    string
		paths   []string
		want    []string
		wantErr string
	}{
		{name: "a file is read whatever its name", paths: []string{p("any-name.txt")}, want: []string{"any-name.txt:txt"}},
		{name: "paths in the order given", paths: []string{p("any-name.txt"), p("a.yaml"), p("a.yaml")}, want: []string{"any-name.txt:txt", "a.yaml:a", "a.yaml:a"}},
		{name: "a link to a directory given by name is followed", paths: []string{p("link-to-dir")}, want: []string{"link-to-dir/x.yaml:x"}},
		{name: "a named pipe is refused, not waited on", paths: []string{p("pipe.yaml")}, wantErr: "pipe.yaml: a named pipe, not a regular file"},
		{name: "a link to a device is refused", paths: []string{p("zero.yaml")}, wantErr: "zero.yaml: a character device, not a regular file"},
		{name: "a path that does not exist", paths: []string{p("nope.yaml")}, wantErr: "nope.yaml: no such file or directory"},
		{name: "an empty file has no objects", paths: []string{p("empty.yaml")}, wantErr: "no Kubernetes objects found"},
		{name: "each path must hold objects", paths: []string{p("a.yaml"), p("empty.yaml")}, wantErr: "empty.yaml: no Kubernetes objects found (1 files read, 0 skipped)"},
		{name: "no paths", wantErr: "no files given"},
		{name: "standard input needs a reader", paths: []string{"-"}, wantErr: "-: standard input is not available here"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := readWithin(t, tt.paths, kubeyaml.Options{})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if objs, _ := names(res, dir); strings.Join(objs, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("objects %v, want %v", objs, tt.want)
			}
		})
	}
}

func TestReadBounds(t *testing.T) {
	dir := tree(t, map[string]string{"a.yaml": cmNamed("a"), "b.yaml": cmNamed("b")})
	size := int64(len(cmNamed("a")))
	tests := []struct {
		name    string
		o       kubeyaml.Options
		wantErr string
	}{
		{name: "within both bounds", o: kubeyaml.Options{MaxFileBytes: size, MaxTotalBytes: 2 * size}},
		{name: "a file too large", o: kubeyaml.Options{MaxFileBytes: size - 1}, wantErr: fmt.Sprintf("a.yaml: larger than %d bytes, the most one file may hold", size-1)},
		{name: "too much in all", o: kubeyaml.Options{MaxFileBytes: size, MaxTotalBytes: 2*size - 1}, wantErr: fmt.Sprintf("b.yaml: the input is larger than %d bytes in all", 2*size-1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := readWithin(t, []string{dir}, tt.o)
			if (tt.wantErr == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("error %v, want %q", err, tt.wantErr)
			}
		})
	}
}

func TestReadStdin(t *testing.T) {
	t.Run("read once, with files around it", func(t *testing.T) {
		dir := tree(t, map[string]string{"a.yaml": cmNamed("a")})
		res, err := readWithin(t, []string{filepath.Join(dir, "a.yaml"), "-"}, kubeyaml.Options{Stdin: strings.NewReader(cmNamed("piped"))})
		if err != nil {
			t.Fatal(err)
		}
		if got := summary(res.Objects); len(got) != 2 || res.Objects[1].Origin.String() != "-: document 1" {
			t.Errorf("objects %v, second from %s", got, res.Objects[1].Origin)
		}
	})
	t.Run("not twice", func(t *testing.T) {
		_, err := readWithin(t, []string{"-", "-"}, kubeyaml.Options{Stdin: strings.NewReader(oneCM)})
		if err == nil || !strings.Contains(err.Error(), "standard input given twice") {
			t.Fatalf("error %v", err)
		}
	})
	t.Run("bounded", func(t *testing.T) {
		_, err := readWithin(t, []string{"-"}, kubeyaml.Options{Stdin: strings.NewReader(oneCM), MaxFileBytes: 10})
		if err == nil || !strings.Contains(err.Error(), "larger than 10 bytes") {
			t.Fatalf("error %v", err)
		}
	})
	t.Run("waiting for it ends with the context", func(t *testing.T) {
		r, w := io.Pipe() // never written: a terminal nobody types into
		defer func() { _ = w.Close() }()
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			_, err := kubeyaml.Read(ctx, []string{"-"}, kubeyaml.Options{Stdin: r})
			done <- err
		}()
		cancel()
		select {
		case err := <-done:
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("error %v, want context.Canceled", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("Read kept waiting for standard input after its context ended")
		}
	})
}

func TestReadStopsWhenContextEnds(t *testing.T) {
	dir := tree(t, map[string]string{"a.yaml": cmNamed("a")})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := kubeyaml.Read(ctx, []string{dir}, kubeyaml.Options{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", err)
	}
}
