package webhook

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/gatehouse-dev/gatehouse/argocd/settings"
	"github.com/gatehouse-dev/gatehouse/argocd/v1alpha1"
)

// AdmitOptions configure an offline evaluation (`gatehouse admit`).
type AdmitOptions struct {
	ControlPlaneNamespace string
	// DefaultNamespace is used for objects that name none, as
	// `kubectl apply -n` would; empty means the control-plane namespace.
	DefaultNamespace string
	// Overrides win over argocd-cmd-params-cm / argocd-cm found in the input.
	Overrides settings.Overrides
}

// InputError is input that cannot be read or parsed; it names the file and
// the document.
type InputError struct {
	Path     string
	Document int // 1-based; 0 when the file itself could not be read
	Err      error
}

func (e *InputError) Error() string {
	if e.Document == 0 {
		return fmt.Sprintf("%s: %v", e.Path, e.Err)
	}
	return fmt.Sprintf("%s: document %d: %v", e.Path, e.Document, e.Err)
}

func (e *InputError) Unwrap() error { return e.Err }

// AdmitResult is the verdict on one object of the input.
type AdmitResult struct {
	Kind      string
	Namespace string
	Name      string
	Verdict   Verdict
}

// object is one Application or AppProject read from the input.
type object struct {
	app  *v1alpha1.Application
	proj *v1alpha1.AppProject
}

// Admit reads YAML (or JSON) files and directories, takes the AppProjects
// and Argo CD settings ConfigMaps found there as the cluster, and reviews
// every Application and AppProject as a CREATE with the webhook's rules, in
// input order. Allowed Applications count towards later quota checks, as if
// applied one by one.
func Admit(ctx context.Context, paths []string, o AdmitOptions) ([]AdmitResult, []string, error) {
	if o.ControlPlaneNamespace == "" {
		o.ControlPlaneNamespace = settings.DefaultNamespace
	}
	if o.DefaultNamespace == "" {
		o.DefaultNamespace = o.ControlPlaneNamespace
	}
	files, err := expandPaths(paths)
	if err != nil {
		return nil, nil, err
	}
	in := &admitInput{defaultNS: o.DefaultNamespace, controlPlane: o.ControlPlaneNamespace}
	for _, f := range files {
		if err := in.readFile(f); err != nil {
			return nil, nil, err
		}
	}
	s, problems := settings.Build(o.ControlPlaneNamespace, in.cmdParams, in.argocdCM, o.Overrides)
	var notes []string
	for _, p := range problems {
		notes = append(notes, p.Error())
	}
	cluster := NewMemoryCluster()
	for _, obj := range in.objects {
		if obj.proj != nil {
			cluster.AddProject(obj.proj)
		}
	}
	rules := NewRules(func() *settings.Settings { return s }, cluster)
	results := make([]AdmitResult, 0, len(in.objects))
	for _, obj := range in.objects {
		var r AdmitResult
		var v Verdict
		if obj.app != nil {
			r = AdmitResult{Kind: v1alpha1.KindApplication, Namespace: obj.app.Namespace, Name: obj.app.Name}
			v, err = rules.Application(ctx, Create, obj.app, nil)
			if err == nil && v.Allowed {
				cluster.AddApplication(obj.app)
			}
		} else {
			r = AdmitResult{Kind: v1alpha1.KindAppProject, Namespace: obj.proj.Namespace, Name: obj.proj.Name}
			v, err = rules.AppProject(ctx, Create, obj.proj, nil)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("review %s %s/%s: %w", r.Kind, r.Namespace, r.Name, err)
		}
		r.Verdict = v
		results = append(results, r)
	}
	return results, notes, nil
}

// expandPaths turns files and directories into a file list: directories are
// walked in lexical order for *.yaml, *.yml and *.json.
func expandPaths(paths []string) ([]string, error) {
	if len(paths) == 0 {
		return nil, &InputError{Path: "-f", Err: errors.New("no files given")}
	}
	var files []string
	for _, p := range paths {
		info, err := os.Stat(p)
		if err != nil {
			return nil, &InputError{Path: p, Err: err}
		}
		if !info.IsDir() {
			files = append(files, p)
			continue
		}
		err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			ext := strings.ToLower(filepath.Ext(path))
			if !d.IsDir() && slices.Contains([]string{".yaml", ".yml", ".json"}, ext) {
				files = append(files, path)
			}
			return nil
		})
		if err != nil {
			return nil, &InputError{Path: p, Err: err}
		}
	}
	return files, nil
}

type admitInput struct {
	defaultNS, controlPlane string
	objects                 []object
	cmdParams, argocdCM     map[string]string
}

func (in *admitInput) readFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return &InputError{Path: path, Err: err}
	}
	defer f.Close()
	r := utilyaml.NewYAMLReader(bufio.NewReader(f))
	for doc := 1; ; doc++ {
		raw, err := r.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return &InputError{Path: path, Document: doc, Err: err}
		}
		if err := in.addDocument(raw); err != nil {
			return &InputError{Path: path, Document: doc, Err: err}
		}
	}
}

func (in *admitInput) addDocument(raw []byte) error {
	if len(bytes.TrimSpace(stripComments(raw))) == 0 {
		return nil
	}
	js, err := yaml.YAMLToJSON(raw)
	if err != nil {
		return fmt.Errorf("parse YAML: %w", err)
	}
	if string(js) == "null" {
		return nil
	}
	var tm metav1.TypeMeta
	if err := json.Unmarshal(js, &tm); err != nil {
		return fmt.Errorf("read apiVersion and kind: %w", err)
	}
	switch {
	case tm.APIVersion == v1alpha1.GroupVersion.String() && tm.Kind == v1alpha1.KindApplication:
		var app v1alpha1.Application
		if err := json.Unmarshal(js, &app); err != nil {
			return fmt.Errorf("decode Application: %w", err)
		}
		if app.Namespace == "" {
			app.Namespace = in.defaultNS
		}
		in.objects = append(in.objects, object{app: &app})
	case tm.APIVersion == v1alpha1.GroupVersion.String() && tm.Kind == v1alpha1.KindAppProject:
		var proj v1alpha1.AppProject
		if err := json.Unmarshal(js, &proj); err != nil {
			return fmt.Errorf("decode AppProject: %w", err)
		}
		if proj.Namespace == "" {
			proj.Namespace = in.defaultNS
		}
		in.objects = append(in.objects, object{proj: &proj})
	case tm.APIVersion == "v1" && tm.Kind == "ConfigMap":
		return in.addConfigMap(js)
	case tm.APIVersion == "" || tm.Kind == "":
		return errors.New("not a Kubernetes object: apiVersion and kind are required")
	}
	return nil
}

func (in *admitInput) addConfigMap(js []byte) error {
	var cm corev1.ConfigMap
	if err := json.Unmarshal(js, &cm); err != nil {
		return fmt.Errorf("decode ConfigMap: %w", err)
	}
	ns := cm.Namespace
	if ns == "" {
		ns = in.defaultNS
	}
	if ns != in.controlPlane {
		return nil
	}
	switch cm.Name {
	case settings.CmdParamsConfigMap:
		in.cmdParams = cm.Data
	case settings.ArgoCDConfigMap:
		in.argocdCM = cm.Data
	}
	return nil
}

func stripComments(raw []byte) []byte {
	var out []byte
	for _, line := range bytes.Split(raw, []byte("\n")) {
		if t := bytes.TrimSpace(line); len(t) > 0 && t[0] != '#' {
			out = append(out, line...)
		}
	}
	return out
}
