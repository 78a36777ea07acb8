package source

import (
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	gatehousev1 "github.com/gatehouse-dev/gatehouse/api/v1alpha1"
)

// Credentials are what a Secret holds for one fetch.
type Credentials struct {
	// Username and Password: HTTP Basic, or a registry's token exchange.
	Username, Password string
	// Authorization is sent verbatim as the Authorization header (HTTP
	// only).
	Authorization string
	// IdentityToken (a refresh token) and RegistryToken (an access token),
	// from a Docker config.
	IdentityToken, RegistryToken string
	// CA is PEM: certificates to trust besides the system's.
	CA []byte
	// AnonymousBecause, when set, says why the fetch is anonymous although
	// a Secret was named: a Docker config Secret with no entry for the
	// registry (a shared pull Secret made for other registries). Docker and
	// Flux pull anonymously then, and so does Gatehouse; a registry that
	// wants credentials is then refused with this sentence, which names
	// the Secret and the registry, never a value.
	AnonymousBecause string
	// addEntry is what to do when the registry wants credentials after all.
	addEntry string
}

// anonymous is whether the fetch sends no credentials.
func (c *Credentials) anonymous() bool { return c == nil || c.AnonymousBecause != "" }

// Keys a PolicyBundle's Secret is read from.
const (
	keyUsername         = "username"
	keyPassword         = "password"
	keyAuthorization    = "authorization"
	keyCA               = "ca.crt"
	keyDockerConfigJSON = ".dockerconfigjson"
)

// secretCredentials reads a Secret of type typ for a fetch of a URL with
// scheme from registry host (oci:// only). Only the keys the scheme's
// Secret types define are read; the errors name keys, never values.
func secretCredentials(name, typ string, data map[string][]byte, scheme, host string) (*Credentials, error) {
	if typ == "" {
		typ = gatehousev1.SecretTypeOpaque
	}
	allowed := gatehousev1.SecretTypes(scheme)
	if !slices.Contains(allowed, typ) {
		return nil, errorf(gatehousev1.ReasonSecretInvalid, "Secret %q is of type %s; for %s:// use a %s Secret", name, typ, scheme, strings.Join(allowed, " or "))
	}
	c := &Credentials{}
	switch typ {
	case gatehousev1.SecretTypeDockerConfigJSON:
		if err := c.fromDockerConfig(name, data[keyDockerConfigJSON], host); err != nil {
			return nil, err
		}
	case gatehousev1.SecretTypeBasicAuth:
		u, hasU := data[keyUsername]
		p, hasP := data[keyPassword]
		if !hasU || !hasP {
			return nil, errorf(gatehousev1.ReasonSecretInvalid, "Secret %q (%s) needs both username and password; it has %s", name, typ, keyList(data))
		}
		c.Username, c.Password = string(u), string(p)
	default: // Opaque, for http(s)://
		a, hasA := data[keyAuthorization]
		u, hasU := data[keyUsername]
		p, hasP := data[keyPassword]
		_, hasCA := data[keyCA]
		switch {
		case hasA:
			// authorization wins over username and password.
			c.Authorization = strings.TrimSpace(string(a))
			if c.Authorization == "" || strings.ContainsAny(c.Authorization, "\r\n") {
				return nil, errorf(gatehousev1.ReasonSecretInvalid, "Secret %q: authorization must be one line, such as \"Bearer <token>\"", name)
			}
		case hasU && hasP:
			c.Username, c.Password = string(u), string(p)
		case hasU || hasP:
			return nil, errorf(gatehousev1.ReasonSecretInvalid, "Secret %q has %s but not both username and password: add the other, or give authorization instead", name, keyList(data))
		case !hasCA:
			return nil, errorf(gatehousev1.ReasonSecretInvalid, "Secret %q holds none of authorization, username and password (it has %s): add them, or drop spec.secretRef to fetch anonymously", name, keyList(data))
		}
	}
	if ca, ok := data[keyCA]; ok && scheme != gatehousev1.SchemeHTTP {
		if !x509.NewCertPool().AppendCertsFromPEM(ca) {
			return nil, errorf(gatehousev1.ReasonSecretInvalid, "Secret %q: ca.crt holds no PEM certificate", name)
		}
		c.CA = ca
	}
	return c, nil
}

func keyList(data map[string][]byte) string {
	if len(data) == 0 {
		return "no keys"
	}
	return "keys " + strings.Join(slices.Sorted(maps.Keys(data)), ", ")
}

// DockerConfigCredentials reads the credentials for registry host from a
// Docker config file's content (~/.docker/config.json), as Docker matches
// them. Credential helpers (credsStore, credHelpers) are not run.
func DockerConfigCredentials(raw []byte, host string) (*Credentials, error) {
	c := &Credentials{}
	err := c.fromDockerConfig("docker config", raw, host)
	if err == nil && c.AnonymousBecause != "" {
		err = errorf(gatehousev1.ReasonSecretInvalid, "%s: %s", c.AnonymousBecause, c.addEntry)
	}
	if err != nil {
		var helpers struct {
			CredsStore  string            `json:"credsStore"`
			CredHelpers map[string]string `json:"credHelpers"`
		}
		if json.Unmarshal(raw, &helpers) == nil && (helpers.CredsStore != "" || helpers.CredHelpers[host] != "") {
			return nil, fmt.Errorf("%w; the config keeps them in a credential helper, which Gatehouse does not run: give --username and --password-stdin", err)
		}
		return nil, err
	}
	return c, nil
}

// dockerAuth is one entry of a Docker config's "auths".
type dockerAuth struct {
	Username      string `json:"username"`
	Password      string `json:"password"`
	Auth          string `json:"auth"`
	IdentityToken string `json:"identitytoken"`
	RegistryToken string `json:"registrytoken"`
}

// dockerHubIndex is where Docker keeps Docker Hub's credentials.
const dockerHubIndex = "https://index.docker.io/v1/"

// fromDockerConfig finds host's entry as Docker does: the key exactly,
// else any key whose host part (without scheme and path, with its port)
// is host, compared without case; Docker Hub's hosts (docker.io,
// index.docker.io, registry-1.docker.io) use the index's key, else a key
// naming any of them. "auth" (base64 of user:password) wins over username
// and password, as in Docker. A config with no entry for host is no error:
// c.AnonymousBecause says so and the fetch is anonymous.
func (c *Credentials) fromDockerConfig(name string, raw []byte, host string) error {
	if len(raw) == 0 {
		return errorf(gatehousev1.ReasonSecretInvalid, "Secret %q has no %s key", name, keyDockerConfigJSON)
	}
	var cfg struct {
		Auths map[string]dockerAuth `json:"auths"`
	}
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return errorf(gatehousev1.ReasonSecretInvalid, "Secret %q: %s is not a Docker config (JSON with \"auths\"): %v", name, keyDockerConfigJSON, jsonErrorOffset(err))
	}
	entry, ok := dockerEntry(cfg.Auths, host)
	if !ok {
		c.AnonymousBecause = fmt.Sprintf("Secret %q has no credentials for registry %s (it has %s)", name, host, registryList(cfg.Auths))
		c.addEntry = fmt.Sprintf("add them (kubectl create secret docker-registry --docker-server=%s)", host)
		return nil
	}
	c.Username, c.Password = entry.Username, entry.Password
	if entry.Auth != "" {
		dec, err := base64.StdEncoding.DecodeString(entry.Auth)
		if err != nil {
			return errorf(gatehousev1.ReasonSecretInvalid, "Secret %q: the auth of registry %s is not base64", name, host)
		}
		u, p, found := strings.Cut(string(dec), ":")
		if !found {
			return errorf(gatehousev1.ReasonSecretInvalid, "Secret %q: the auth of registry %s is not base64 of user:password", name, host)
		}
		c.Username, c.Password = u, p
	}
	c.IdentityToken, c.RegistryToken = entry.IdentityToken, entry.RegistryToken
	if c.Username == "" && c.Password == "" && c.IdentityToken == "" && c.RegistryToken == "" {
		return errorf(gatehousev1.ReasonSecretInvalid, "Secret %q: the entry for registry %s holds no username, password, auth or token", name, host)
	}
	return nil
}

// dockerEntry is host's entry in a Docker config's auths.
func dockerEntry(auths map[string]dockerAuth, host string) (dockerAuth, bool) {
	hub := isDockerHub(host)
	lookup := host
	if hub {
		lookup = dockerHubIndex
	}
	if e, ok := auths[lookup]; ok {
		return e, true
	}
	for _, k := range slices.Sorted(maps.Keys(auths)) {
		h := dockerHostname(k)
		if strings.EqualFold(h, host) || hub && isDockerHub(h) {
			return auths[k], true
		}
	}
	return dockerAuth{}, false
}

func isDockerHub(host string) bool {
	switch strings.ToLower(host) {
	case "docker.io", "index.docker.io", "registry-1.docker.io":
		return true
	}
	return false
}

// dockerHostname is Docker's ConvertToHostname: a key without its scheme
// (any, as "https://") and path, with its port.
func dockerHostname(key string) string {
	if _, rest, found := strings.Cut(key, "://"); found {
		key = rest
	}
	h, _, _ := strings.Cut(key, "/")
	return h
}

func registryList(auths map[string]dockerAuth) string {
	if len(auths) == 0 {
		return "none"
	}
	return strings.Join(slices.Sorted(maps.Keys(auths)), ", ")
}

// jsonErrorOffset keeps a JSON error's position and drops any quoted
// input: the input is a credential.
func jsonErrorOffset(err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return "syntax error at byte " + strconv.FormatInt(se.Offset, 10)
	}
	return "not the expected shape"
}
