package kubeyaml

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// Default bounds: configuration is small, and a stray huge file (or a link
// to /dev/zero) must be an error, not an outage.
const (
	defaultMaxFileBytes  = 64 << 20
	defaultMaxTotalBytes = 256 << 20
)

// extensions are the file names read below a directory, as kubectl reads
// them (case-sensitive); a file named on the command line is read whatever
// its name.
var extensions = []string{".json", ".yaml", ".yml"}

// Options bound and feed Read.
type Options struct {
	// Stdin is read for the path "-"; nil refuses "-".
	Stdin io.Reader
	// MaxFileBytes bounds one file and MaxTotalBytes all of them together;
	// 0 means defaultMaxFileBytes and defaultMaxTotalBytes.
	MaxFileBytes, MaxTotalBytes int64
}

// Skipped is a file below a directory that kubectl would try to read but
// Read leaves alone.
type Skipped struct {
	Path   string
	Reason string
}

func (s Skipped) String() string { return s.Path + ": " + s.Reason }

// Result is what Read found.
type Result struct {
	// Objects in input order: paths in the order given, files below a
	// directory in lexical order (subdirectories where they sort),
	// documents and list items in file order.
	Objects []Object
	// Files read, in order.
	Files []string
	// Skipped files: named pipes, sockets, devices, links to directories
	// or to nothing. kubectl would hang on or fail at them; none can hold
	// an object it would apply.
	Skipped []Skipped
}

// Read reads the objects kubectl would apply for `kubectl apply -R -f P`
// for each path P: a file (any name), a directory (every file below it
// named *.json, *.yaml or *.yml, hidden ones included, recursively), or "-"
// (standard input). Below a directory it reads regular files only: other
// files are listed in Skipped, symbolic links are followed when they stay
// inside the directory and refused when they leave it, links to directories
// are not followed (kubectl does not follow them either). A named file must
// be a regular file (or a link to one). Any file that cannot be read or
// parsed fails the whole read, and so does a path that holds no object at
// all: a check pointed at the wrong folder must not pass.
//
// Read never blocks on a named pipe or device, and stops at the next file
// when ctx ends; reading standard input stops when ctx ends.
func Read(ctx context.Context, paths []string, o Options) (*Result, error) {
	if o.MaxFileBytes <= 0 {
		o.MaxFileBytes = defaultMaxFileBytes
	}
	if o.MaxTotalBytes <= 0 {
		o.MaxTotalBytes = defaultMaxTotalBytes
	}
	if len(paths) == 0 {
		return nil, &Error{Origin: Origin{Path: "-f"}, Err: errors.New("no files given")}
	}
	r := &reader{ctx: ctx, o: o, res: &Result{}}
	for _, p := range paths {
		objects, files, skipped := len(r.res.Objects), len(r.res.Files), len(r.res.Skipped)
		if err := r.path(p); err != nil {
			return nil, err
		}
		if len(r.res.Objects) == objects {
			return nil, &Error{Origin: Origin{Path: p}, Err: fmt.Errorf("%w (%d files read, %d skipped): check the path",
				errNoObjects, len(r.res.Files)-files, len(r.res.Skipped)-skipped)}
		}
	}
	return r.res, nil
}

type reader struct {
	ctx       context.Context
	o         Options
	res       *Result
	total     int64
	readStdin bool
}

func (r *reader) path(p string) error {
	if err := r.ctx.Err(); err != nil {
		return err
	}
	if p == StdinPath {
		return r.stdin()
	}
	// The user named this path: follow it wherever it points.
	info, err := os.Stat(p)
	if err != nil {
		return &Error{Origin: Origin{Path: p}, Err: pathError(err)}
	}
	switch {
	case info.IsDir():
		root, err := filepath.EvalSymlinks(p)
		if err != nil {
			return &Error{Origin: Origin{Path: p}, Err: pathError(err)}
		}
		if root, err = filepath.Abs(root); err != nil {
			return &Error{Origin: Origin{Path: p}, Err: err}
		}
		return r.dir(p, root)
	case info.Mode().IsRegular():
		return r.file(p, p)
	default:
		return &Error{Origin: Origin{Path: p}, Err: fmt.Errorf("%s, not a regular file: give a file or a directory, or - for standard input", describeMode(info.Mode()))}
	}
}

// dir reads dir (found as path, really root or below it) in lexical order.
func (r *reader) dir(dir, root string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return &Error{Origin: Origin{Path: dir}, Err: pathError(err)}
	}
	for _, e := range entries {
		if err := r.ctx.Err(); err != nil {
			return err
		}
		p := filepath.Join(dir, e.Name())
		t := e.Type()
		switch {
		case t.IsDir():
			if err := r.dir(p, root); err != nil {
				return err
			}
		case !slices.Contains(extensions, filepath.Ext(e.Name())):
			// Not a manifest by its name; kubectl passes it by too.
		case t&fs.ModeSymlink != 0:
			if err := r.link(p, root); err != nil {
				return err
			}
		case t.IsRegular():
			if err := r.file(p, p); err != nil {
				return err
			}
		default:
			r.skip(p, describeMode(t)+", not a regular file")
		}
	}
	return nil
}

// link reads the file a symbolic link below root points to, if it is a
// regular file inside root.
func (r *reader) link(p, root string) error {
	target, err := filepath.EvalSymlinks(p)
	if err != nil {
		r.skip(p, "a symbolic link to nothing")
		return nil //nolint:nilerr // a dangling link holds no object; kubectl could not read it either
	}
	if target, err = filepath.Abs(target); err != nil {
		return &Error{Origin: Origin{Path: p}, Err: err}
	}
	if rel, err := filepath.Rel(root, target); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return &Error{Origin: Origin{Path: p}, Err: fmt.Errorf(
			"a symbolic link to %s, outside %s: refused; give that file with its own -f if it belongs to the input", target, root)}
	}
	info, err := os.Stat(target)
	if err != nil {
		return &Error{Origin: Origin{Path: p}, Err: pathError(err)}
	}
	switch {
	case info.IsDir():
		r.skip(p, "a symbolic link to a directory (not followed, as kubectl does not)")
	case !info.Mode().IsRegular():
		r.skip(p, "a symbolic link to "+describeMode(info.Mode())+", not a regular file")
	default:
		return r.file(p, target)
	}
	return nil
}

func (r *reader) skip(p, reason string) {
	r.res.Skipped = append(r.res.Skipped, Skipped{Path: p, Reason: reason})
}

// file reads the regular file at open, reported as p.
func (r *reader) file(p, open string) error {
	// O_NONBLOCK: should the file have been swapped for a named pipe since
	// it was looked at, opening it must not wait for a writer.
	f, err := os.OpenFile(open, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return &Error{Origin: Origin{Path: p}, Err: pathError(err)}
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return &Error{Origin: Origin{Path: p}, Err: err}
	}
	if !info.Mode().IsRegular() {
		return &Error{Origin: Origin{Path: p}, Err: fmt.Errorf("%s, not a regular file", describeMode(info.Mode()))}
	}
	data, err := r.readBounded(p, f)
	if err != nil {
		return err
	}
	return r.decode(p, data)
}

// stdin reads standard input; ctx ending stops the wait for it.
func (r *reader) stdin() error {
	if r.o.Stdin == nil {
		return &Error{Origin: Origin{Path: StdinPath}, Err: errors.New("standard input is not available here")}
	}
	if r.readStdin {
		return &Error{Origin: Origin{Path: StdinPath}, Err: errors.New("standard input given twice")}
	}
	r.readStdin = true
	type result struct {
		data []byte
		err  error
	}
	done := make(chan result, 1)
	go func() {
		data, err := r.readBounded(StdinPath, r.o.Stdin)
		done <- result{data, err}
	}()
	select {
	case <-r.ctx.Done():
		// The reading goroutine stays blocked until the input closes; the
		// process is ending anyway.
		return r.ctx.Err()
	case res := <-done:
		if res.err != nil {
			return res.err
		}
		return r.decode(StdinPath, res.data)
	}
}

// readBounded reads all of in, refusing more than the file and total bounds.
// It does not touch r.total (stdin is read on another goroutine); decode does.
func (r *reader) readBounded(p string, in io.Reader) ([]byte, error) {
	limit := min(r.o.MaxFileBytes, r.o.MaxTotalBytes-r.total)
	data, err := io.ReadAll(io.LimitReader(in, limit+1))
	if err != nil {
		return nil, &Error{Origin: Origin{Path: p}, Err: err}
	}
	if int64(len(data)) > limit {
		if limit < r.o.MaxFileBytes {
			return nil, &Error{Origin: Origin{Path: p}, Err: fmt.Errorf(
				"the input is larger than %d bytes in all: check the paths, or split the check", r.o.MaxTotalBytes)}
		}
		return nil, &Error{Origin: Origin{Path: p}, Err: fmt.Errorf(
			"larger than %d bytes, the most one file may hold", r.o.MaxFileBytes)}
	}
	return data, nil
}

func (r *reader) decode(p string, data []byte) error {
	r.total += int64(len(data))
	r.res.Files = append(r.res.Files, p)
	objs, err := Decode(p, data)
	if err != nil {
		return err
	}
	r.res.Objects = append(r.res.Objects, objs...)
	return nil
}

// pathError drops the *PathError wrapper, whose path the caller names.
func pathError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

func describeMode(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m.IsDir():
		return "a directory"
	default:
		return "a special file (" + m.Type().String() + ")"
	}
}
