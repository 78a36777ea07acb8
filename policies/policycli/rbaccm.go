package policycli

import (
	"context"
	"fmt"
	"strings"

	"github.com/gatehouse-dev/gatehouse/internal/argocd/settings"
	"github.com/gatehouse-dev/gatehouse/internal/kubeyaml"
)

// readRBACConfigMap reads one ConfigMap manifest, as kubectl would send
// it, and returns its data.
func readRBACConfigMap(ctx context.Context, path string, s streams) (map[string]string, error) {
	res, err := kubeyaml.Read(ctx, []string{path}, kubeyaml.Options{Stdin: s.in})
	if err != nil {
		return nil, fmt.Errorf("read argocd-rbac-cm: %w", err)
	}
	if len(res.Objects) != 1 || !res.Objects[0].Is("v1", "ConfigMap") {
		var kinds []string
		for _, obj := range res.Objects {
			kinds = append(kinds, obj.Kind+" "+obj.Meta.Name)
		}
		return nil, fmt.Errorf("--rbac-configmap %s: want exactly one ConfigMap (argocd-rbac-cm), found %s", path, strings.Join(kinds, ", "))
	}
	obj := &res.Objects[0]
	if obj.Meta.Name != settings.RBACConfigMap {
		fmt.Fprintf(s.errOut, "%s: ConfigMap %q is read as argocd-rbac-cm\n", obj.Origin, obj.Meta.Name)
	}
	var cm struct {
		Data map[string]string `json:"data"`
	}
	if err := obj.Into(&cm); err != nil {
		return nil, fmt.Errorf("%s: %w", obj.Origin, err)
	}
	return cm.Data, nil
}
