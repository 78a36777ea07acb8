package policies

import (
	"bytes"
	"errors"
	"slices"

	"github.com/open-policy-agent/opa/v1/ast"
)

// FilesAtFault returns the bundle files an error of Load or Check is about,
// so that a bundle assembled from several sources (policy ConfigMaps) can
// blame the ones at fault and only those: module paths named by Rego's
// parse and compile errors, DataFile for the data document (the grant rules
// generated from it included), ManifestFile for the manifest; for a policy
// that defines no decision or decides too slowly, its modules (and the
// manifest that names the entrypoint, or the data when the policy is the
// default one). It returns nil when the error does not say.
func FilesAtFault(err error) []string {
	var fe *fileError
	if errors.As(err, &fe) {
		return slices.Clone(fe.files)
	}
	var errs ast.Errors
	if !errors.As(err, &errs) {
		return nil
	}
	var files []string
	for _, e := range errs {
		if e.Location == nil || e.Location.File == "" {
			continue
		}
		f := e.Location.File
		if f == generatedModulePath {
			f = DataFile
		}
		if !slices.Contains(files, f) {
			files = append(files, f)
		}
	}
	slices.Sort(files)
	return files
}

// fileError is an error about given files of a bundle.
type fileError struct {
	files []string
	err   error
}

func (e *fileError) Error() string { return e.err.Error() }
func (e *fileError) Unwrap() error { return e.err }

// inFile marks err as being about file.
func inFile(file string, err error) error { return &fileError{files: []string{file}, err: err} }

// modulePaths are the paths of b's policy modules (tests left out).
func (b Bundle) modulePaths() []string {
	var paths []string
	for _, m := range b.Modules {
		if !isTestModule(m.Path) {
			paths = append(paths, m.Path)
		}
	}
	return paths
}

// onlyDefaultPolicy reports whether b's only policy module is the embedded
// default policy.
func (b Bundle) onlyDefaultPolicy() bool {
	var own []Module
	for _, m := range b.Modules {
		if !isTestModule(m.Path) {
			own = append(own, m)
		}
	}
	return len(own) == 1 && bytes.Equal(own[0].Source, DefaultPolicy())
}
