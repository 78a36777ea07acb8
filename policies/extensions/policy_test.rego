package gatehouse.extensions_test

import data.gatehouse.extensions

# ---------------------------------------------------------------------------
# Fixture: one role per form the model must express.
# ---------------------------------------------------------------------------

grants := {
	"config": {"controlPlaneNamespace": "argocd"},
	"bindings": {
		"users": {
			"pat": ["role:project"],
			"any": ["role:any-project"],
			"root": ["role:all"],
			"nina": ["role:namespace"],
			"appy": ["role:application"],
			"gina": ["role:get-only"],
			"dora": ["role:project", "role:no-debugger"],
			"wren": ["role:project", "role:no-writes"],
			"vic": ["role:extension-only"],
			"olga": ["role:object"],
			"hugo": ["role:headers-a", "role:headers-b"],
			"glen": ["role:glob-extension"],
			"sys": ["role:system"],
		},
		"groups": {
			"team-a": ["role:project"],
			"contractors": ["role:no-debugger"],
		},
	},
	"roles": {
		"role:viewer": {"applications": [{"project": "*"}]},
		# <project>/<extension>
		"role:project": {
			"applications": [{"project": "team-a"}],
			"extensions": [{"extension": "metrics", "project": "team-a"}, {"extension": "debugger", "project": "team-a"}],
		},
		# */<extension>
		"role:any-project": {
			"applications": [{"object": "*/*"}],
			"extensions": [{"extension": "metrics", "project": "*"}],
		},
		# */*
		"role:all": {
			"applications": [{"object": "*/*"}],
			"extensions": [{"extension": "*", "project": "*"}],
		},
		# <project>/<namespace>/<extension>
		"role:namespace": {
			"applications": [{"project": "team-a"}],
			"extensions": [{"extension": "logs", "project": "team-a", "namespace": "team-a-dev"}],
		},
		# <project>/<application>
		"role:application": {
			"applications": [{"project": "team-a"}],
			"extensions": [{"extension": "debugger", "project": "team-a", "application": "guestbook"}],
		},
		# method restriction
		"role:get-only": {
			"applications": [{"project": "team-a"}],
			"extensions": [{"extension": "metrics", "project": "team-a", "methods": ["GET", "HEAD"]}],
		},
		# deny rules
		"role:no-debugger": {"extensions": [{"extension": "debugger", "effect": "deny"}]},
		"role:no-writes": {"extensions": [{"extension": "*", "methods": ["POST", "PUT", "PATCH", "DELETE"], "effect": "deny"}]},
		# an extension grant without the right to view the application
		"role:extension-only": {"extensions": [{"extension": "metrics"}]},
		# Argo CD RBAC object globs: "*" spans "/"
		"role:object": {
			"applications": [{"object": "team-a/*"}, {"object": "team-a/team-a-prod/*", "effect": "deny"}],
			"extensions": [{"extension": "metrics"}],
		},
		"role:headers-a": {
			"applications": [{"project": "team-a"}],
			"extensions": [{"extension": "metrics", "headers": {"X-Access": "read", "X-Team": "a"}}],
		},
		"role:headers-b": {"extensions": [{"extension": "metrics", "methods": ["GET"], "headers": {"X-Access": "write"}}]},
		"role:glob-extension": {
			"applications": [{"project": "team-a"}],
			"extensions": [{"extension": "metrics-*", "project": "team-*"}],
		},
		"role:system": {"extensions": [{"extension": "incidents"}, {"extension": "status", "project": "team-a"}]},
	},
}

project_a := {
	"name": "team-a",
	"sourceNamespaces": ["team-a-*"],
	"destinations": [{"server": "https://kubernetes.default.svc", "namespace": "team-a-*"}],
}

in_cluster := {"name": "in-cluster", "server": "https://kubernetes.default.svc"}

app(ns, name) := {
	"namespace": ns,
	"name": name,
	"project": "team-a",
	"destination": {"server": "https://kubernetes.default.svc", "namespace": "team-a-apps"},
}

# The engine adds user.roles and checks to every input (policies.Checks works
# out the checks with Argo CD's matching; its Go tests cover the patterns),
# and application.rbacName; tests leave the name out unless they test it, so
# the policy works it out. Here the project permits the application unless a
# test says otherwise.
request(user, groups, ext, method, application) := {
	"user": {"id": user, "username": user, "groups": groups},
	"extension": ext,
	"application": application,
	"project": project_a,
	"cluster": in_cluster,
	"request": {"method": method, "path": "/"},
	"checks": all_checks_pass,
}

all_checks_pass := {"namespacePermitted": true, "clusterMatches": true, "destinationPermitted": true}

# A GET of extension ext on team-a-dev/guestbook by user.
get(user, ext) := request(user, [], ext, "GET", app("team-a-dev", "guestbook"))

system(user, ext) := {
	"user": {"id": user, "username": user, "groups": []},
	"extension": ext,
	"request": {"method": "GET", "path": "/"},
}

# data.gatehouse holds the policy package too, so tests mock its parts.
decide(inp) := d if {
	d := extensions.decision with input as inp
		with data.gatehouse.config as grants.config
		with data.gatehouse.bindings as grants.bindings
		with data.gatehouse.roles as grants.roles
}

allowed(inp) if decide(inp).allow == true

denied(inp) if decide(inp).allow == false

# ---------------------------------------------------------------------------
# <project>/<extension>, */<extension>, */*
# ---------------------------------------------------------------------------

test_project_extension_allows_in_project if {
	allowed(get("pat", "metrics"))
	decide(get("pat", "metrics")).reason == "allowed by a grant of your roles"
}

test_project_extension_denied_in_other_project if {
	inp := json.patch(get("pat", "metrics"), [
		{"op": "replace", "path": "/application/project", "value": "team-b"},
		{"op": "replace", "path": "/project/name", "value": "team-b"},
	])
	denied(inp)
}

test_project_extension_denied_for_other_extension if {
	d := decide(get("pat", "logs"))
	d.allow == false
	d.reason == `denied: none of your roles may GET extension "logs" for application team-a-dev/guestbook`
}

test_any_project_extension if {
	allowed(get("any", "metrics"))
	denied(get("any", "logs"))
	inp := json.patch(get("any", "metrics"), [
		{"op": "replace", "path": "/application/project", "value": "team-b"},
		{"op": "replace", "path": "/project/name", "value": "team-b"},
	])
	allowed(inp)
}

test_all_extensions_all_projects if {
	allowed(get("root", "metrics"))
	allowed(get("root", "anything-else"))
	allowed(system("root", "incidents"))
}

# ---------------------------------------------------------------------------
# <project>/<namespace>/<extension> and <project>/<application>
# ---------------------------------------------------------------------------

test_namespace_extension if {
	allowed(get("nina", "logs"))
	denied(request("nina", [], "logs", "GET", app("team-a-prod", "guestbook")))
}

test_application_extension if {
	allowed(get("appy", "debugger"))
	denied(request("appy", [], "debugger", "GET", app("team-a-dev", "other")))
}

test_glob_extension_and_project if {
	allowed(get("glen", "metrics-prometheus"))
	denied(get("glen", "metrics"))
}

# ---------------------------------------------------------------------------
# HTTP methods
# ---------------------------------------------------------------------------

test_method_restriction if {
	allowed(get("gina", "metrics"))
	allowed(request("gina", [], "metrics", "HEAD", app("team-a-dev", "guestbook")))
	d := decide(request("gina", [], "metrics", "POST", app("team-a-dev", "guestbook")))
	d.allow == false
	contains(d.reason, "may POST extension")
}

test_method_is_case_insensitive if {
	allowed(request("gina", [], "metrics", "get", app("team-a-dev", "guestbook")))
	denied(request("wren", [], "metrics", "post", app("team-a-dev", "guestbook")))
}

# ---------------------------------------------------------------------------
# Roles bound to users, groups and by default
# ---------------------------------------------------------------------------

test_role_from_group if {
	allowed(request("someone", ["team-a"], "metrics", "GET", app("team-a-dev", "guestbook")))
	denied(request("someone", ["team-b"], "metrics", "GET", app("team-a-dev", "guestbook")))
}

test_unknown_user_has_no_roles if {
	d := decide(get("stranger", "metrics"))
	d.allow == false
	startswith(d.reason, "denied: none of your roles may view application team-a-dev/guestbook")
}

test_default_roles if {
	inp := get("stranger", "metrics")
	d := extensions.decision with input as inp
		with data.gatehouse.config as object.union(grants.config, {"defaultRoles": ["role:any-project"]})
		with data.gatehouse.bindings as grants.bindings
		with data.gatehouse.roles as grants.roles
	d.allow == true
}

test_user_binding_is_by_id_not_username if {
	inp := json.patch(get("stranger", "metrics"), [{"op": "replace", "path": "/user/username", "value": "pat"}])
	denied(inp)
}

# ---------------------------------------------------------------------------
# Deny wins
# ---------------------------------------------------------------------------

test_deny_wins_over_allow_of_another_role if {
	allowed(get("dora", "metrics"))
	d := decide(get("dora", "debugger"))
	d.allow == false
	d.reason == `denied: a deny rule of role:no-debugger forbids GET on extension "debugger" for application team-a-dev/guestbook`
}

test_deny_from_a_group_wins if {
	denied(request("pat", ["contractors"], "debugger", "GET", app("team-a-dev", "guestbook")))
}

test_deny_limited_to_methods if {
	allowed(get("wren", "metrics"))
	denied(request("wren", [], "metrics", "DELETE", app("team-a-dev", "guestbook")))
}

# Argo CD's evaluation (denyScope "subject"): a group's deny does not take away
# what the user holds directly.
test_deny_scope_subject if {
	inp := request("pat", ["contractors"], "debugger", "GET", app("team-a-dev", "guestbook"))
	d := extensions.decision with input as inp
		with data.gatehouse.config as object.union(grants.config, {"denyScope": "subject"})
		with data.gatehouse.bindings as grants.bindings
		with data.gatehouse.roles as grants.roles
	d.allow == true

	inp2 := get("dora", "debugger")
	d2 := extensions.decision with input as inp2
		with data.gatehouse.config as object.union(grants.config, {"denyScope": "subject"})
		with data.gatehouse.bindings as grants.bindings
		with data.gatehouse.roles as grants.roles
	d2.allow == false
}

# ---------------------------------------------------------------------------
# Viewing the application (Argo CD: applications, get)
# ---------------------------------------------------------------------------

test_extension_grant_needs_application_get if {
	d := decide(get("vic", "metrics"))
	d.allow == false
	d.reason == "denied: none of your roles may view application team-a-dev/guestbook (Argo CD permission: applications, get, team-a/team-a-dev/guestbook)"
}

test_application_get_can_be_switched_off if {
	d := extensions.decision with input as get("vic", "metrics")
		with data.gatehouse.config as object.union(grants.config, {"requireApplicationGet": false})
		with data.gatehouse.bindings as grants.bindings
		with data.gatehouse.roles as grants.roles
	d.allow == true
}

test_application_object_glob_spans_namespaces if {
	# team-a/* matches team-a/team-a-dev/guestbook: "*" spans "/", as in Argo CD
	allowed(get("olga", "metrics"))

	# and in the control-plane namespace the object is team-a/guestbook
	allowed(request("olga", [], "metrics", "GET", app("argocd", "guestbook")))
}

test_rbac_name_worked_out_or_from_the_engine if {
	d := decide(get("vic", "metrics"))
	d.reason == "denied: none of your roles may view application team-a-dev/guestbook (Argo CD permission: applications, get, team-a/team-a-dev/guestbook)"

	in_control_plane := decide(request("vic", [], "metrics", "GET", app("argocd", "guestbook")))
	in_control_plane.reason == "denied: none of your roles may view application argocd/guestbook (Argo CD permission: applications, get, team-a/guestbook)"

	# the engine's name is the one the policy uses
	named := json.patch(get("vic", "metrics"), [{"op": "add", "path": "/application/rbacName", "value": "team-a/named"}])
	decide(named).reason == "denied: none of your roles may view application team-a-dev/guestbook (Argo CD permission: applications, get, team-a/named)"
}

test_application_deny if {
	d := decide(request("olga", [], "metrics", "GET", app("team-a-prod", "guestbook")))
	d.allow == false
	d.reason == "denied: a deny rule of role:object forbids viewing application team-a-prod/guestbook"
}

# ---------------------------------------------------------------------------
# The project must still permit the application's namespace and destination
# ---------------------------------------------------------------------------

test_project_must_match_application if {
	inp := json.patch(get("root", "metrics"), [{"op": "replace", "path": "/project/name", "value": "team-b"}])
	d := decide(inp)
	d.allow == false
	d.reason == `denied: application team-a-dev/guestbook belongs to project "team-a", not "team-b"`
}

test_project_must_be_known if {
	inp := json.remove(get("root", "metrics"), ["project"])
	decide(inp).reason == "denied: the application's project is unknown"
}

test_namespace_not_permitted if {
	inp := json.patch(get("root", "metrics"), [{"op": "replace", "path": "/checks/namespacePermitted", "value": false}])
	d := decide(inp)
	d.allow == false
	d.reason == `denied: project "team-a" does not permit applications in namespace "team-a-dev"`
}

test_control_plane_namespace_named_by_omission if {
	inp := json.remove(request("root", [], "metrics", "GET", app("", "guestbook")), ["application/namespace"])
	allowed(inp)
	d := decide(json.patch(inp, [{"op": "replace", "path": "/checks/namespacePermitted", "value": false}]))
	d.reason == `denied: project "team-a" does not permit applications in namespace "argocd"`
}

test_destination_not_permitted if {
	inp := json.patch(get("root", "metrics"), [{"op": "replace", "path": "/checks/destinationPermitted", "value": false}])
	d := decide(inp)
	d.allow == false
	d.reason == `denied: project "team-a" does not permit the destination of application team-a-dev/guestbook`
}

test_cluster_must_match_destination if {
	inp := json.patch(get("root", "metrics"), [{"op": "replace", "path": "/checks/clusterMatches", "value": false}])
	d := decide(inp)
	d.allow == false
	d.reason == "denied: the destination cluster does not match application team-a-dev/guestbook"
}

# An input that did not come through the engine (stock opa eval) has no
# checks: application requests fail closed.
test_missing_checks_deny if {
	d := decide(json.remove(get("root", "metrics"), ["checks"]))
	d.allow == false
	d.reason == "denied: the project checks are missing from the input (policies.Checks); evaluate through Gatehouse's engine"
	allowed(json.remove(system("sys", "incidents"), ["checks"]))
}

# The first failing check gives the reason.
test_project_checks_in_order if {
	inp := json.patch(get("root", "metrics"), [
		{"op": "replace", "path": "/checks/clusterMatches", "value": false},
		{"op": "replace", "path": "/checks/destinationPermitted", "value": false},
	])
	decide(inp).reason == "denied: the destination cluster does not match application team-a-dev/guestbook"
}

# ---------------------------------------------------------------------------
# System extensions (no application)
# ---------------------------------------------------------------------------

test_system_extension if {
	allowed(system("sys", "incidents"))

	# a grant scoped to a project never reaches a system request
	denied(system("sys", "status"))
	decide(system("sys", "status")).reason == `denied: none of your roles may GET extension "status"`
}

# ---------------------------------------------------------------------------
# Output
# ---------------------------------------------------------------------------

test_headers_from_matching_grants if {
	d := decide(get("hugo", "metrics"))
	d.allow == true
	d.headers == {"X-Access": "read, write", "X-Team": "a"}
	d2 := decide(request("hugo", [], "metrics", "POST", app("team-a-dev", "guestbook")))
	d2.headers == {"X-Access": "read", "X-Team": "a"}
}

test_denied_decision_has_no_headers if {
	d := decide(get("stranger", "metrics"))
	not d.headers
}

test_missing_user_denied if {
	inp := json.remove(get("pat", "metrics"), ["user"])
	d := decide(inp)
	d.allow == false
	d.reason == "denied: the request has no authenticated user"
}

test_missing_extension_denied if {
	decide(json.remove(get("pat", "metrics"), ["extension"])).reason == "denied: the request names no extension"
}

test_no_data_denies if {
	d := extensions.decision with input as get("pat", "metrics")
		with data.gatehouse.config as {}
		with data.gatehouse.bindings as {}
		with data.gatehouse.roles as {}
	d.allow == false
}

test_explanation if {
	e := extensions.explanation with input as get("dora", "debugger")
		with data.gatehouse.config as grants.config
		with data.gatehouse.bindings as grants.bindings
		with data.gatehouse.roles as grants.roles
	e.roles == ["role:no-debugger", "role:project"]
	e.extensionAllowedBy == ["role:project"]
	e.extensionDeniedBy == ["role:no-debugger"]
	e.extensionGranted == false
	e.applicationVisible == true
	e.projectPermits == true
	e.checks == all_checks_pass
}

# ---------------------------------------------------------------------------
# Concealed denials: those about the Application itself carry "conceal", so
# the proxy does not tell a caller which Applications exist or where.
# ---------------------------------------------------------------------------

concealed(inp) if {
	d := decide(inp)
	d.allow == false
	d.conceal == true
}

test_denials_about_the_application_are_concealed if {
	concealed(get("vic", "metrics"))
	concealed(json.patch(get("root", "metrics"), [{"op": "replace", "path": "/project/name", "value": "team-b"}]))
	concealed(json.remove(get("root", "metrics"), ["project"]))
	concealed(json.patch(get("root", "metrics"), [{"op": "replace", "path": "/checks/namespacePermitted", "value": false}]))
	concealed(json.patch(get("root", "metrics"), [{"op": "replace", "path": "/checks/clusterMatches", "value": false}]))
	concealed(json.patch(get("root", "metrics"), [{"op": "replace", "path": "/checks/destinationPermitted", "value": false}]))
}

test_other_denials_keep_their_reason if {
	not decide(request("gina", [], "metrics", "POST", app("team-a-dev", "guestbook"))).conceal
	not decide(system("sys", "status")).conceal
	not decide(json.remove(get("root", "metrics"), ["checks"])).conceal
	not decide(json.remove(get("root", "metrics"), ["user"])).conceal
	not decide(get("root", "metrics")).conceal
}
