package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/argoproj/argo-cd/v3/common"
	"github.com/argoproj/argo-cd/v3/pkg/apiclient/session"
	"github.com/argoproj/argo-cd/v3/server/logout"
	"github.com/argoproj/argo-cd/v3/server/rbacpolicy"
	sessionserver "github.com/argoproj/argo-cd/v3/server/session"
	"github.com/argoproj/argo-cd/v3/util/password"
	"github.com/argoproj/argo-cd/v3/util/rbac"
	sessionmgr "github.com/argoproj/argo-cd/v3/util/session"
	"github.com/argoproj/argo-cd/v3/util/settings"
	"github.com/redis/go-redis/v9"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// serveSession runs Argo CD's session code as argocd-server wires it
// (server.NewServer: util/session's SessionManager over a real Redis
// (redis-server, started here), util/settings over argocd-cm and
// argocd-secret, server/session's Create and GetUserInfo, server/logout's
// handler), on 127.0.0.1, and prints its URL. Not the whole argocd-server
// (docs/security.md, "Argo CD's signing key", says why). The only glue of ours is the userinfo
// route, which does what ArgoCDServer.Authenticate and grpc-gateway do:
// take the Bearer token, VerifyToken it, and put the claims or the error
// into the context GetUserInfo reads. It answers in encoding/json with the
// generated response's json tags (loggedIn, username, iss, groups, each
// left out when empty).
//
// Arguments: session <server.secretkey> <admin password>. POST
// /test/disable?account=<name> disables an account in argocd-cm and
// answers once Argo CD's settings see it.
func serveSession(secretKey, adminPassword string) error {
	ctx := context.Background()
	redisAddr, stopRedis, err := startRedis()
	if err != nil {
		return err
	}
	defer stopRedis()
	hash, err := password.HashPassword(adminPassword)
	if err != nil {
		return err
	}
	const ns = "argocd"
	labels := map[string]string{"app.kubernetes.io/part-of": "argocd"}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: common.ArgoCDConfigMapName, Namespace: ns, Labels: labels},
		Data: map[string]string{"accounts.alice": "login, apiKey", "admin.enabled": "true"}}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: common.ArgoCDSecretName, Namespace: ns, Labels: labels},
		Data: map[string][]byte{"server.secretkey": []byte(secretKey), "admin.password": []byte(hash),
			"admin.passwordMtime":     []byte(time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)),
			"accounts.alice.password": []byte(hash)}}
	client := fake.NewClientset(cm, secret)
	settingsMgr := settings.NewSettingsManager(ctx, client, ns)
	if _, err := settingsMgr.GetSettings(); err != nil {
		return fmt.Errorf("settings: %w", err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	storage := sessionmgr.NewUserStateStorage(rdb)
	storage.Init(ctx)
	projects := projectLister(ns, nil)
	mgr := sessionmgr.NewSessionManager(settingsMgr, projects, "", nil, storage)
	enf := rbac.NewEnforcer(client, ns, common.ArgoCDRBACConfigMapName, nil)
	sessions := sessionserver.NewServer(mgr, settingsMgr, nil, rbacpolicy.NewRBACPolicyEnforcer(enf, projects), nil)

	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/v1/session", func(w http.ResponseWriter, r *http.Request) {
		var q session.SessionCreateRequest
		if err := json.NewDecoder(r.Body).Decode(&q); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		resp, err := sessions.Create(r.Context(), &q)
		if err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]string{"token": resp.Token})
	})
	mux.HandleFunc("GET /api/v1/session/userinfo", func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		if tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
			claims, _, err := mgr.VerifyToken(ctx, tok)
			if claims != nil {
				ctx = context.WithValue(ctx, "claims", claims) //nolint:staticcheck // Argo CD's key
			}
			if err != nil {
				ctx = context.WithValue(ctx, sessionmgr.AuthErrorCtxKey, err) //nolint:staticcheck // Argo CD's key
			}
		}
		info, err := sessions.GetUserInfo(ctx, &session.GetUserInfoRequest{})
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		_ = json.NewEncoder(w).Encode(info) // the proto's json tags: loggedIn, username, iss, groups, omitempty
	})
	mux.Handle("/auth/logout", logout.NewHandler(settingsMgr, mgr, "", "/"))
	mux.HandleFunc("POST /test/disable", func(w http.ResponseWriter, r *http.Request) {
		name := r.URL.Query().Get("account")
		c, err := client.CoreV1().ConfigMaps(ns).Get(r.Context(), common.ArgoCDConfigMapName, metav1.GetOptions{})
		if err == nil {
			c.Data["accounts."+name+".enabled"] = "false"
			_, err = client.CoreV1().ConfigMaps(ns).Update(r.Context(), c, metav1.UpdateOptions{})
		}
		for err == nil {
			var acc *settings.Account
			if acc, err = settingsMgr.GetAccount(name); err == nil && !acc.Enabled {
				return
			}
			time.Sleep(10 * time.Millisecond) // the settings informer catches up
		}
		http.Error(w, err.Error(), http.StatusInternalServerError)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	fmt.Println("http://" + ln.Addr().String())
	return http.Serve(ln, mux)
}

// startRedis starts Debian's redis-server on a free loopback port, without
// persistence, and waits until it answers.
func startRedis() (string, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	addr := ln.Addr().(*net.TCPAddr)
	_ = ln.Close()
	cmd := exec.Command("redis-server", "--bind", "127.0.0.1", "--port", fmt.Sprint(addr.Port), "--save", "", "--appendonly", "no")
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return "", nil, fmt.Errorf("start redis-server (apt-get install redis-server; test/tools/install-redis.sh): %w", err)
	}
	stop := func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }
	rdb := redis.NewClient(&redis.Options{Addr: addr.String()})
	defer func() { _ = rdb.Close() }()
	for i := 0; ; i++ {
		if err := rdb.Ping(context.Background()).Err(); err == nil {
			return addr.String(), stop, nil
		} else if i == 100 {
			stop()
			return "", nil, fmt.Errorf("redis-server on %s does not answer: %w", addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
