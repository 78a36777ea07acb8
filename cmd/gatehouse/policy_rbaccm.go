package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gatehouse-dev/gatehouse/internal/kubeyaml"
	"github.com/gatehouse-dev/gatehouse/policies/casbin"
)

// importCasbinInput opens what import-casbin converts: FILE (policy.csv,
// or - for standard input), or with --rbac-configmap the policy.csv of
// argocd-rbac-cm, whose other RBAC keys then fill o. It returns the reader
// and a name for errors.
func importCasbinInput(cmd *cobra.Command, args []string, rbacConfigMap string, o *casbin.Options) (io.Reader, string, error) {
	switch {
	case rbacConfigMap == "" && len(args) == 0:
		return nil, "", errors.New("give policy.csv as FILE, or argocd-rbac-cm with --rbac-configmap")
	case rbacConfigMap != "" && len(args) > 0:
		return nil, "", fmt.Errorf("give either FILE (%s) or --rbac-configmap, not both: the ConfigMap holds policy.csv", args[0])
	case rbacConfigMap != "":
		for _, flag := range []string{"default-role", "match-mode"} {
			if cmd.Flags().Changed(flag) {
				return nil, "", fmt.Errorf("--%s is read from the ConfigMap with --rbac-configmap: leave it out", flag)
			}
		}
		if rbacConfigMap == kubeyaml.StdinPath && slices.Contains(projectPathsOf(cmd), kubeyaml.StdinPath) {
			return nil, "", errors.New("--rbac-configmap and --projects cannot both read standard input")
		}
		data, err := readRBACConfigMap(cmd, rbacConfigMap)
		if err != nil {
			return nil, "", err
		}
		csv, fromCM := casbin.FromConfigMap(data)
		fromCM.ControlPlaneNamespace, fromCM.NoBuiltin = o.ControlPlaneNamespace, o.NoBuiltin
		*o = fromCM
		return strings.NewReader(csv), rbacConfigMap, nil
	case args[0] == "-":
		if slices.Contains(projectPathsOf(cmd), kubeyaml.StdinPath) {
			return nil, "", errors.New("FILE and --projects cannot both read standard input")
		}
		return cmd.InOrStdin(), "-", nil
	}
	f, err := os.Open(args[0])
	if err != nil {
		return nil, "", fmt.Errorf("read RBAC policy: %w", err)
	}
	return f, args[0], nil
}

func projectPathsOf(cmd *cobra.Command) []string {
	paths, _ := cmd.Flags().GetStringArray("projects")
	return paths
}

// readRBACConfigMap reads one ConfigMap manifest, as kubectl would send
// it, and returns its data.
func readRBACConfigMap(cmd *cobra.Command, path string) (map[string]string, error) {
	res, err := kubeyaml.Read(cmd.Context(), []string{path}, kubeyaml.Options{Stdin: cmd.InOrStdin()})
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
	if obj.Meta.Name != "argocd-rbac-cm" {
		fmt.Fprintf(cmd.ErrOrStderr(), "%s: ConfigMap %q is read as argocd-rbac-cm\n", obj.Origin, obj.Meta.Name)
	}
	var cm struct {
		Data map[string]string `json:"data"`
	}
	if err := obj.Into(&cm); err != nil {
		return nil, fmt.Errorf("%s: %w", obj.Origin, err)
	}
	return cm.Data, nil
}
