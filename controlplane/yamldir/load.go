package yamldir

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	gatehousev1 "github.com/gatehouse-dev/gatehouse/api/v1alpha1"
	"github.com/gatehouse-dev/gatehouse/argocd/v1alpha1"
	"github.com/gatehouse-dev/gatehouse/controlplane"
)

// maxFileBytes bounds one file: a directory source is for configuration,
// and a stray multi-gigabyte file should be an error, not an outage.
const maxFileBytes = 64 << 20

// Load reads every .yaml, .yml and .json file below dir (hidden directories
// skipped) into a State. Objects without a namespace are read as in
// controlPlaneNamespace, as `kubectl apply -n <it> -f dir` would place them.
// Kinds other than Application, AppProject, ConfigMap, Secret, PolicyBundle
// and List are ignored, as are AppProjects, ConfigMaps and Secrets of other namespaces:
// the Kubernetes source does not watch them either. Any file that does not
// parse, or an object defined twice, fails the whole load, so a half-edited
// tree never replaces a good one.
func Load(dir, controlPlaneNamespace string) (*controlplane.State, error) {
	l := &loader{ns: controlPlaneNamespace, st: controlplane.NewState(), seen: map[string]string{}}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != dir && strings.HasPrefix(d.Name(), ".") {
				return fs.SkipDir
			}
			return nil
		}
		switch strings.ToLower(filepath.Ext(path)) {
		case ".yaml", ".yml", ".json":
			return l.file(path)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", dir, err)
	}
	return l.st, nil
}

type loader struct {
	ns   string
	st   *controlplane.State
	seen map[string]string // "<kind>/<namespace>/<name>" → file:document
}

func (l *loader) file(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if info, err := f.Stat(); err != nil {
		return err
	} else if info.Size() > maxFileBytes {
		return fmt.Errorf("%s: %d bytes, more than the %d a configuration file may have", path, info.Size(), maxFileBytes)
	}
	r := utilyaml.NewYAMLReader(bufio.NewReader(io.LimitReader(f, maxFileBytes)))
	for n := 1; ; n++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: document %d: %w", path, n, err)
		}
		if err := l.document(doc, fmt.Sprintf("%s: document %d", path, n)); err != nil {
			return err
		}
	}
}

// header is what every object has.
type header struct {
	metav1.TypeMeta `json:",inline"`
	Metadata        struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"metadata"`
	Items []json.RawMessage `json:"items"`
}

func (l *loader) document(doc []byte, where string) error {
	if len(bytes.TrimSpace(doc)) == 0 {
		return nil
	}
	var h header
	if err := yaml.Unmarshal(doc, &h); err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	if h.Kind == "" && h.APIVersion == "" && len(h.Items) == 0 {
		if isComments(doc) {
			return nil
		}
		return fmt.Errorf("%s: not a Kubernetes object (no apiVersion and kind)", where)
	}
	if h.APIVersion == "v1" && h.Kind == "List" {
		for i, item := range h.Items {
			if err := l.document(item, fmt.Sprintf("%s: item %d", where, i)); err != nil {
				return err
			}
		}
		return nil
	}
	ns := h.Metadata.Namespace
	if ns == "" {
		ns = l.ns
	}
	if h.Metadata.Name == "" {
		return fmt.Errorf("%s: %s has no metadata.name", where, h.Kind)
	}
	id := h.Kind + " " + ns + "/" + h.Metadata.Name
	add := func() error {
		if prev, ok := l.seen[id]; ok {
			return fmt.Errorf("%s: %s is also defined at %s: keep one", where, id, prev)
		}
		l.seen[id] = where
		return nil
	}
	switch {
	case h.APIVersion == v1alpha1.GroupVersion.String() && h.Kind == "Application":
		var a v1alpha1.Application
		if err := yaml.Unmarshal(doc, &a); err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
		a.Namespace = ns
		p := controlplane.ProjectApplication(&a)
		l.st.Applications[p.Key()] = p
		return add()
	case ns != l.ns:
		return nil
	case h.APIVersion == v1alpha1.GroupVersion.String() && h.Kind == "AppProject":
		var p v1alpha1.AppProject
		if err := yaml.Unmarshal(doc, &p); err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
		l.st.Projects[p.Name] = controlplane.ProjectAppProject(&p)
		return add()
	case h.APIVersion == "v1" && h.Kind == "ConfigMap":
		var c corev1.ConfigMap
		if err := yaml.Unmarshal(doc, &c); err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
		if controlplane.RelevantConfigMap(c.Name, c.Labels) {
			l.st.ConfigMaps[c.Name] = controlplane.ProjectConfigMap(&c)
		}
		key, ref := controlplane.ConfigMapFetchRef(&c)
		l.st.FetchRefs[key] = ref
		return add()
	case h.APIVersion == "v1" && h.Kind == "Secret":
		var s corev1.Secret
		if err := yaml.Unmarshal(doc, &s); err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
		// The API server merges stringData into data on write.
		for k, v := range s.StringData {
			if s.Data == nil {
				s.Data = map[string][]byte{}
			}
			s.Data[k] = []byte(v)
		}
		l.st.Secrets[s.Name] = controlplane.ProjectSecret(&s)
		key, ref := controlplane.SecretFetchRef(&s)
		l.st.FetchRefs[key] = ref
		return add()
	case h.APIVersion == gatehousev1.GroupVersion.String() && h.Kind == gatehousev1.KindPolicyBundle:
		var b gatehousev1.PolicyBundle
		if err := yaml.Unmarshal(doc, &b); err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
		l.st.PolicyBundles[b.Name] = b.Spec
		return add()
	}
	return nil
}

// isComments reports whether a document holds only comments and blank lines.
func isComments(doc []byte) bool {
	for _, line := range bytes.Split(doc, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) > 0 && line[0] != '#' && !bytes.Equal(line, []byte("---")) {
			return false
		}
	}
	return true
}
