package kubeyaml

import (
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// StdinPath is the path that means standard input, as with kubectl -f -.
const StdinPath = "-"

// Origin says where an object was read.
type Origin struct {
	// Path is the file as found (a directory argument joined with the
	// file's path below it), or "-" for standard input.
	Path string
	// Document is the 1-based position of the YAML document or JSON
	// value in the file.
	Document int
	// Item is the 1-based position in the items of the List the document
	// holds, or 0 when the document is the object itself.
	Item int
}

func (o Origin) String() string {
	s := o.Path
	if o.Document > 0 {
		s += fmt.Sprintf(": document %d", o.Document)
	}
	if o.Item > 0 {
		s += fmt.Sprintf(": item %d", o.Item)
	}
	return s
}

// Object is one object kubectl would send to the API server.
type Object struct {
	Origin Origin
	// APIVersion and Kind as written, or inherited from the List that held
	// the object (kubectl does so for items that name neither).
	APIVersion, Kind string
	// Meta is metadata, decoded as the API server decodes it (field names
	// are case-sensitive). Meta.Namespace is empty when the object names
	// none; kubectl would fill in its default namespace.
	Meta metav1.ObjectMeta
	// JSON is the object as kubectl would send it, before the default
	// namespace is filled in.
	JSON []byte
}

// GroupKind is the object's API group and kind.
func (o *Object) GroupKind() schema.GroupKind {
	return schema.FromAPIVersionAndKind(o.APIVersion, o.Kind).GroupKind()
}

// Is reports whether the object has exactly this apiVersion and kind.
func (o *Object) Is(apiVersion, kind string) bool {
	return o.APIVersion == apiVersion && o.Kind == kind
}

// Namespace returns the object's namespace, or def when it names none.
func (o *Object) Namespace(def string) string {
	if o.Meta.Namespace != "" {
		return o.Meta.Namespace
	}
	return def
}

// ID names the object as "<Kind> <namespace>/<name>", with def standing in
// for a namespace the object does not name.
func (o *Object) ID(def string) string {
	return fmt.Sprintf("%s %s/%s", o.Kind, o.Namespace(def), o.Meta.Name)
}

// Into decodes the object into v the way the API server reads a request
// body: JSON field names match case-sensitively, so a key such as
// "sourcenamespaces" is not taken for "sourceNamespaces" (encoding/json
// would take it; the API server drops it).
func (o *Object) Into(v any) error {
	if err := utiljson.Unmarshal(o.JSON, v); err != nil {
		return fmt.Errorf("decode %s: %w", o.Kind, err)
	}
	return nil
}

// Error is input that cannot be read: it names the file and, when the file
// was read, the document (and List item) at fault.
type Error struct {
	Origin Origin
	Err    error
}

func (e *Error) Error() string { return fmt.Sprintf("%s: %v", e.Origin, e.Err) }

func (e *Error) Unwrap() error { return e.Err }

// errNoObjects is returned (wrapped in an *Error naming the path) when a
// path holds no object at all: a check pointed at the wrong folder must not
// pass. (kubectl refuses only when all its paths together hold none.)
var errNoObjects = errors.New("no Kubernetes objects found")
