package kubeyaml

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"

	"golang.org/x/text/encoding/unicode"
	"golang.org/x/text/transform"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// jsonSniffBytes is how far kubectl looks for a leading "{" to read a file
// as a JSON stream rather than YAML (cli-runtime's StreamVisitor).
const jsonSniffBytes = 4096

// Decode returns the objects in one file's content, as kubectl reads them:
//
//   - a UTF-16 file with a byte order mark is read as UTF-16 and a UTF-8
//     byte order mark is dropped; bytes that are not UTF-8 become U+FFFD;
//   - the content is a stream of YAML documents, or of JSON values when it
//     starts with "{"; documents that are empty, only comments or null are
//     skipped;
//   - every other document must be an object with apiVersion and kind;
//   - a document with an "items" array (or null) is a list, whatever its
//     kind: its items are the objects, and an item that names neither
//     apiVersion nor kind takes the list's apiVersion and its kind less
//     "List" (a v1 ConfigMapList holds ConfigMaps).
//
// Unlike kubectl, which skips what it cannot read and goes on, Decode fails
// on the first document it cannot read: a check must never pass input that
// only partly parsed. It also refuses content whose last line has no
// newline and is a multiple of 4096 bytes long, when that changes what is
// read: apimachinery's YAML line reader, which kubectl and Argo CD use,
// drops such a line, so they would apply something other than what the
// file says, and a fixed reader would apply what it says.
func Decode(path string, data []byte) ([]Object, error) {
	data, _, err := transform.Bytes(unicode.BOMOverride(unicode.UTF8.NewDecoder()), data)
	if err != nil {
		return nil, &Error{Origin: Origin{Path: path}, Err: fmt.Errorf("decode text: %w", err)}
	}
	last := len(data) - 1 - bytes.LastIndexByte(data, '\n')
	if len(data) == 0 || last == 0 {
		return decodeStream(path, data)
	}
	// As the text reads: the line reader ends every line with "\n".
	objs, err := decodeStream(path, append(data[:len(data):len(data)], '\n'))
	if err != nil || last < lineReaderBytes {
		return objs, err
	}
	// Only a last line at least as long as the line reader's buffer can
	// be dropped; see whether it is.
	asRead, err := decodeStream(path, data)
	if err != nil || !sameObjects(asRead, objs) {
		return nil, &Error{Origin: Origin{Path: path}, Err: fmt.Errorf(
			"its last line (%d bytes) has no newline at the end, and kubectl and Argo CD would drop it (a bug of the YAML reader they share), "+
				"applying something other than what the file says: end the file with a newline", last)}
	}
	return objs, nil
}

// lineReaderBytes is the buffer of apimachinery's YAML line reader.
const lineReaderBytes = 4096

func sameObjects(a, b []Object) bool {
	return slices.EqualFunc(a, b, func(x, y Object) bool { return x.Origin == y.Origin && bytes.Equal(x.JSON, y.JSON) })
}

// decodeStream reads the documents of UTF-8 content with the decoder
// kubectl uses.
func decodeStream(path string, data []byte) ([]Object, error) {
	d := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), jsonSniffBytes)
	var objs []Object
	for doc := 1; ; doc++ {
		var ext runtime.RawExtension
		if err := d.Decode(&ext); err != nil {
			if err == io.EOF { //nolint:errorlint // the decoder returns io.EOF itself at the end, as kubectl checks
				return objs, nil
			}
			return nil, &Error{Origin: Origin{Path: path, Document: doc}, Err: fmt.Errorf("parse: %w", err)}
		}
		raw := bytes.TrimSpace(ext.Raw)
		if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
			continue
		}
		got, err := decodeDocument(Origin{Path: path, Document: doc}, raw)
		if err != nil {
			return nil, err
		}
		objs = append(objs, got...)
	}
}

// decodeDocument turns one document into the objects kubectl would send.
func decodeDocument(at Origin, raw []byte) ([]Object, error) {
	if err := checkTypeMeta(raw); err != nil {
		return nil, &Error{Origin: at, Err: err}
	}
	decoded, _, err := unstructured.UnstructuredJSONScheme.Decode(raw, nil, nil)
	if err != nil {
		return nil, &Error{Origin: at, Err: err}
	}
	list, ok := decoded.(*unstructured.UnstructuredList)
	if !ok {
		o, err := newObject(at, decoded.(*unstructured.Unstructured))
		if err != nil {
			return nil, err
		}
		return []Object{o}, nil
	}
	// kubectl reads the list's own metadata too, and refuses it when it
	// does not decode.
	if _, err := decodeMeta(raw); err != nil {
		return nil, &Error{Origin: at, Err: err}
	}
	objs := make([]Object, 0, len(list.Items))
	for i := range list.Items {
		item := &list.Items[i]
		at := Origin{Path: at.Path, Document: at.Document, Item: i + 1}
		if item.IsList() {
			return nil, &Error{Origin: at, Err: errors.New("a list inside a list: kubectl does not apply nested lists; put the items in the outer list")}
		}
		o, err := newObject(at, item)
		if err != nil {
			return nil, err
		}
		objs = append(objs, o)
	}
	return objs, nil
}

// checkTypeMeta is kubectl's own check before anything is sent: the
// document is an object naming its apiVersion and kind (kubectl lets an
// empty apiVersion through to the server; nothing here does).
func checkTypeMeta(raw []byte) error {
	var fields map[string]any
	if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
		return fmt.Errorf("not a Kubernetes object: want a mapping with apiVersion and kind, got %s", describeJSON(raw))
	}
	var errs []error
	for _, key := range []string{"apiVersion", "kind"} {
		switch v, ok := fields[key].(string); {
		case fields[key] == nil:
			errs = append(errs, fmt.Errorf("%s not set", key))
		case !ok:
			errs = append(errs, fmt.Errorf("%s is not a string", key))
		case v == "":
			errs = append(errs, fmt.Errorf("%s is empty", key))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("not a Kubernetes object: %w", err)
	}
	if _, err := schema.ParseGroupVersion(fields["apiVersion"].(string)); err != nil {
		return fmt.Errorf("apiVersion: %w", err)
	}
	return nil
}

func describeJSON(raw []byte) string {
	switch raw[0] {
	case '[':
		return "a sequence"
	case '"':
		return "a string"
	case '{':
		return "a mapping that does not decode"
	default:
		return "a scalar"
	}
}

func newObject(at Origin, u *unstructured.Unstructured) (Object, error) {
	if u.GetAPIVersion() == "" || u.GetKind() == "" {
		return Object{}, &Error{Origin: at, Err: errors.New("not a Kubernetes object: apiVersion and kind are required")}
	}
	if _, err := schema.ParseGroupVersion(u.GetAPIVersion()); err != nil {
		return Object{}, &Error{Origin: at, Err: fmt.Errorf("apiVersion: %w", err)}
	}
	js, err := json.Marshal(u.UnstructuredContent())
	if err != nil {
		return Object{}, &Error{Origin: at, Err: fmt.Errorf("encode: %w", err)}
	}
	meta, err := decodeMeta(js)
	if err != nil {
		return Object{}, &Error{Origin: at, Err: err}
	}
	return Object{Origin: at, APIVersion: u.GetAPIVersion(), Kind: u.GetKind(), Meta: meta, JSON: js}, nil
}

// decodeMeta reads metadata the way kubectl and the API server do; kubectl
// refuses a document whose metadata does not fit ObjectMeta.
func decodeMeta(js []byte) (metav1.ObjectMeta, error) {
	var m struct {
		Metadata metav1.ObjectMeta `json:"metadata"`
	}
	if err := utiljson.Unmarshal(js, &m); err != nil {
		return metav1.ObjectMeta{}, fmt.Errorf("metadata: %w", err)
	}
	return m.Metadata, nil
}
