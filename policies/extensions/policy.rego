# METADATA
# title: Gatehouse extension authorization (default policy)
# description: |
#   Decides whether a user may call a proxy extension, for one Application or for
#   the whole system. Grants live in data.gatehouse (see policies/README.md), so
#   admins change who may do what without touching this file.
#
#   Query: data.gatehouse.extensions.decision
#   Output: {"allow": bool, "reason": string, "headers": {name: value},
#            "conceal": bool (a denial the proxy answers without its reason)}
#
#   A request is allowed when, in this order:
#     1. the input names a user and an extension;
#     2. for an application request, the user may view the Application
#        (Argo CD's "applications, get"; config.requireApplicationGet);
#     3. a grant lets the user invoke the extension there with this method,
#        and no deny rule forbids it (deny wins);
#     4. for an application request, the Application's project still permits
#        the Application's namespace and its destination (input.checks, which
#        the engine works out with Argo CD's matching).
#
#   Every request the proxy makes without a cached decision runs this, so an
#   allowed request takes a short path: three indexed lookups in the
#   generated grant rules and comparisons, six rules and about 25
#   expressions, each rule costing about a microsecond and a few hundred
#   bytes; so does the usual denial (no grant to view the Application). Any
#   other denial works out which check is to blame (15–19 rules), and a deny
#   rule's roles (about 25), for its reason.
package gatehouse.extensions

# ---------------------------------------------------------------------------
# Decision
# ---------------------------------------------------------------------------

default decision := {"allow": false, "reason": "denied: the policy could not authorize this request"}

# A denial gives the first check that fails, in the order of the list above.
# The first three branches are the usual answers, each in one rule: they
# read the generated rules (data.gatehouse.generated) for steps 2 and 3,
# indexed lookups that answer in either deny scope. The first is an allowed
# application request without headers; the second the usual denial (no
# grant to view the Application, no deny rule, in deny scope "all", where
# the lookups answer alone: data.gatehouse.generated.decides); the third an
# allowed system request. Every other request goes down the chain of checks
# that follows. In deny scope "subject", without the generated rules, and
# where a grant adds headers, the rules of steps 2 and 3 below decide, and a
# request that passes them is allowed by the last but one branch. The reason
# of an allowed request names no role: naming them would cost every grant of
# the user's roles that applies, the tail of the decision latency; `gatehouse
# policy eval --explain` names them.
decision := {"allow": true, "reason": "allowed by a grant of your roles", "headers": {}} if {
	data.gatehouse.generated.application_allow
	data.gatehouse.generated.extension_allow
	not data.gatehouse.generated.deny
	# complete_and_permitted for an application request, written out: a
	# rule fewer to evaluate.
	input.application.name != ""
	input.application.project != ""
	input.user.id != ""
	input.extension != ""
	input.project.name == input.application.project
	input.checks.namespacePermitted == true
	input.checks.clusterMatches == true
	input.checks.destinationPermitted == true
	data.gatehouse.generated.headers_apply == false
} else := {"allow": false, "reason": sprintf("denied: none of your roles may view application %s/%s (Argo CD permission: applications, get, %s)", [input.application.namespace, input.application.name, input.application.rbacName]), "conceal": true} if {
	# The usual denial, on the engine's input: no grant lets the user view
	# the Application and no deny rule is involved, so the chain below
	# would find the input complete and give application_denial's first
	# form. One rule instead of five.
	data.gatehouse.generated.application_allow == false
	data.gatehouse.generated.decides
	data.gatehouse.generated.application_deny == false
	input.application.rbacName
	input.application.name != ""
	input.application.project != ""
	input.user.id != ""
	input.extension != ""
} else := {"allow": true, "reason": "allowed by a grant of your roles", "headers": {}} if {
	data.gatehouse.generated.application_allow
	data.gatehouse.generated.extension_allow
	not data.gatehouse.generated.deny
	complete_and_permitted
	data.gatehouse.generated.headers_apply == false
} else := {"allow": false, "reason": input_denial} if {
	not input_complete
} else := {"allow": false, "reason": application_denial, "conceal": true} if {
	not application_visible
} else := {"allow": false, "reason": extension_denial} if {
	not extension_granted
} else := {"allow": true, "reason": "allowed by a grant of your roles", "headers": headers} if {
	project_permits
} else := {"allow": false, "reason": project_denial, "conceal": project_denial_conceals}

# ---------------------------------------------------------------------------
# Configuration (data.gatehouse.config), with defaults
# ---------------------------------------------------------------------------

default control_plane_namespace := "argocd"

control_plane_namespace := data.gatehouse.config.controlPlaneNamespace

# "all": a deny rule in any of the user's roles wins (Gatehouse's default).
# "subject": Argo CD's evaluation: the default roles, the user and each group
# are judged apart; access needs one of them to allow with no deny of its own.
default deny_scope := "all"

deny_scope := data.gatehouse.config.denyScope

subject_scope if data.gatehouse.config.denyScope == "subject"

# ---------------------------------------------------------------------------
# Request facts
# ---------------------------------------------------------------------------

user_id := object.get(input, ["user", "id"], "")

extension := object.get(input, "extension", "")

method := upper(object.get(input, ["request", "method"], ""))

application_request if input.application

app_project := object.get(input.application, "project", "")

app_name := object.get(input.application, "name", "")

# An Application with no namespace lives in the control-plane namespace. The
# engine fills it in, and works out application.rbacName; raw input (opa
# eval, tests) may leave either out.
app_namespace := ns if {
	ns := input.application.namespace
	ns != ""
} else := control_plane_namespace

# The object Argo CD's RBAC checks for an Application (util/security.RBACName).
app_rbac_name := input.application.rbacName if {
	input.application.rbacName
} else := concat("/", [input.application.project, app_namespace, input.application.name]) if {
	app_namespace != control_plane_namespace
} else := concat("/", [input.application.project, input.application.name])

# input_complete holds exactly when no case of input_denial does.
input_complete if {
	input.application.name != ""
	input.application.project != ""
	input.user.id != ""
	input.extension != ""
}

input_complete if {
	not input.application
	input.user.id != ""
	input.extension != ""
}

input_denial := "denied: the request has no authenticated user" if {
	user_id == ""
} else := "denied: the request names no extension" if {
	extension == ""
} else := "denied: the request's application has no name or project"

# ---------------------------------------------------------------------------
# Subjects: the user (bound by id), each of the user's groups, and the default
# roles every user holds. Their roles come from data.gatehouse.bindings.
# ---------------------------------------------------------------------------

user_subject := concat(":", ["user", user_id])

subjects := {"default", user_subject} | {concat(":", ["group", g]) | some g in input.user.groups}

# [subject, role] for every role the user holds, and through which subject.
subject_roles contains ["default", r] if some r in data.gatehouse.config.defaultRoles

subject_roles contains [user_subject, r] if some r in data.gatehouse.bindings.users[user_id]

subject_roles contains [concat(":", ["group", g]), r] if {
	some g in input.user.groups
	some r in data.gatehouse.bindings.groups[g]
}

roles := {r | some [_, r] in subject_roles}

# ---------------------------------------------------------------------------
# Matching grants. Patterns are globs without separators (glob.match with null
# delimiters), as in Argo CD's RBAC, so "*" also matches "/"; a plain name is a
# glob that matches only itself; a missing pattern is "*".
#
# Whether a grant of the user's roles allows or denies this request, and
# which roles, come from one of two places that give the same answers:
#
#   - data.gatehouse.generated, a module the engine builds from
#     data.gatehouse on every load (policies/generate.go): one rule per grant,
#     whose subjects, extension and project are conditions on input that OPA's
#     rule indexer selects on, so a decision evaluates only the few grants
#     that can apply. Its booleans (extension_allow, application_allow,
#     deny, headers_apply) stop at the first grant that holds, which is all
#     an allowed request needs; its sets name the roles, for deny scope
#     "subject", reasons and explanations;
#   - without it (opa test, tests that mock data.gatehouse), the rules below,
#     which scan the grants of the user's roles.
#
# TestGeneratedGrantsMatchData holds the two to the same decisions.
# ---------------------------------------------------------------------------

# Whether some grant allows or denies, without naming roles.
application_allow := x if {
	x := data.gatehouse.generated.application_allow
} else := count(application_allowers) > 0

application_deny := x if {
	x := data.gatehouse.generated.application_deny
} else := count(application_deniers) > 0

extension_allow := x if {
	x := data.gatehouse.generated.extension_allow
} else := count(extension_allowers) > 0

extension_deny := x if {
	x := data.gatehouse.generated.extension_deny
} else := count(extension_deniers) > 0

application_allowers := x if {
	x := data.gatehouse.generated.application_allowed
} else := {r | some [r, g] in application_grants_from_data; not is_deny(g)}

application_deniers := x if {
	x := data.gatehouse.generated.application_denied
} else := {r | some [r, g] in application_grants_from_data; is_deny(g)}

extension_allowers := x if {
	x := data.gatehouse.generated.extension_allowed
} else := {r | some [r, g] in extension_grants_from_data; not is_deny(g)}

extension_deniers := x if {
	x := data.gatehouse.generated.extension_denied
} else := {r | some [r, g] in extension_grants_from_data; is_deny(g)}

# [role, headers] for the matching allow grants that carry headers.
extension_header_grants := x if {
	x := data.gatehouse.generated.extension_headers
} else := {[r, h] |
	some [r, g] in extension_grants_from_data
	not is_deny(g)
	h := object.get(g, "headers", {})
	count(h) > 0
}

application_grants_from_data contains [r, g] if {
	application_request
	some r in roles
	some g in object.get(data.gatehouse.roles, [r, "applications"], [])
	application_grant_applies(g)
}

extension_grants_from_data contains [r, g] if {
	some r in roles
	some g in object.get(data.gatehouse.roles, [r, "extensions"], [])
	extension_grant_applies(g)
}

# An applications grant names Applications by an Argo CD RBAC object
# ("team-a/*", matched against app_rbac_name) or by project, namespace and
# application globs. An object whose part before the first "/" is a plain name
# names that project: project names hold no "/", so only its Applications can
# match.
application_grant_applies(g) if {
	glob.match(object.get(g, "object", "*"), null, app_rbac_name)
	glob.match(grant_project(g), null, app_project)
	glob.match(object.get(g, "namespace", "*"), null, app_namespace)
	glob.match(object.get(g, "application", "*"), null, app_name)
}

grant_project(g) := object_project(g.object) if {
	g.object
} else := object.get(g, "project", "*")

object_project(o) := p if {
	p := split(o, "/")[0]
	count(p) < count(o)
	not is_glob(p)
} else := "*"

is_glob(p) if regex.match(`[*?\[\]{}\\]`, p)

# An extension grant that names a project, namespace or application applies
# only to application requests; one that names none of them applies to system
# requests too.
extension_grant_applies(g) if {
	glob.match(object.get(g, "extension", "*"), null, extension)
	method_permitted(g)
	in_scope(g)
}

in_scope(g) if {
	application_request
	glob.match(object.get(g, "project", "*"), null, app_project)
	glob.match(object.get(g, "namespace", "*"), null, app_namespace)
	glob.match(object.get(g, "application", "*"), null, app_name)
}

in_scope(g) if {
	not application_request
	object.get(g, "project", "*") == "*"
	object.get(g, "namespace", "*") == "*"
	object.get(g, "application", "*") == "*"
}

method_permitted(g) if not g.methods

method_permitted(g) if "*" in g.methods

method_permitted(g) if method in g.methods

is_deny(g) if g.effect == "deny"

# ---------------------------------------------------------------------------
# Allow and deny. Access is granted when some role allows and no role denies;
# with deny_scope "subject", one subject (the defaults, the user, a group) must
# hold an allowing role and no denying one.
# ---------------------------------------------------------------------------

subject_grants(allowed, denied) if {
	some [s, r] in subject_roles
	r in allowed
	not subject_denies(s, denied)
}

subject_denies(s, denied) if {
	some [t, r] in subject_roles
	t == s
	r in denied
}

# ---------------------------------------------------------------------------
# 2. Viewing the Application (Argo CD: applications, get)
# ---------------------------------------------------------------------------

# With the generated rules: an allowing grant (a system request, and any
# request with requireApplicationGet off, needs none) and no deny rule. In
# deny scope "subject", and without them, the roles decide, subject by
# subject.
application_visible if {
	data.gatehouse.generated.application_allow
	not data.gatehouse.generated.application_deny
}

application_visible if {
	not data.gatehouse.generated.decides
	application_visible_by_roles
}

application_visible_by_roles if {
	application_allow
	not application_deny
}

application_visible_by_roles if not input.application

application_visible_by_roles if data.gatehouse.config.requireApplicationGet == false

application_visible_by_roles if {
	subject_scope
	subject_grants(application_allowers, application_deniers)
}

# Denials without a deny rule, the usual kind, come first; the first form
# reads the engine's facts (application.namespace filled in, rbacName) and
# the generated rules directly, a rule or three fewer than the second, which
# raw input needs. TestGeneratedGrantsMatchData holds the two to one text.
application_denial := sprintf("denied: none of your roles may view application %s/%s (Argo CD permission: applications, get, %s)", [input.application.namespace, input.application.name, input.application.rbacName]) if {
	data.gatehouse.generated.application_deny == false
	input.application.rbacName
} else := sprintf("denied: none of your roles may view application %s/%s (Argo CD permission: applications, get, %s)", [app_namespace, input.application.name, app_rbac_name]) if {
	not application_deny
} else := sprintf("denied: a deny rule of %s forbids viewing application %s/%s", [concat(", ", sort(application_deniers)), app_namespace, input.application.name])

# ---------------------------------------------------------------------------
# 3. Invoking the extension
# ---------------------------------------------------------------------------

# As for viewing the Application.
extension_granted if {
	data.gatehouse.generated.extension_allow
	not data.gatehouse.generated.extension_deny
}

extension_granted if {
	not data.gatehouse.generated.decides
	extension_granted_by_roles
}

extension_granted_by_roles if {
	extension_allow
	not extension_deny
}

extension_granted_by_roles if {
	subject_scope
	subject_grants(extension_allowers, extension_deniers)
}

# As application_denial; the engine upper-cases the method.
extension_denial := sprintf("denied: none of your roles may %s extension %q for application %s/%s", [input.request.method, input.extension, input.application.namespace, input.application.name]) if {
	data.gatehouse.generated.extension_deny == false
	input.application.rbacName
} else := sprintf("denied: a deny rule of %s forbids %s on extension %q for application %s/%s", [concat(", ", sort(data.gatehouse.generated.extension_denied)), input.request.method, input.extension, input.application.namespace, input.application.name]) if {
	data.gatehouse.generated.extension_deny == true
	input.application.rbacName
} else := sprintf("denied: none of your roles may %s extension %q%s", [method, input.extension, where]) if {
	not extension_deny
} else := sprintf("denied: a deny rule of %s forbids %s on extension %q%s", [concat(", ", sort(extension_deniers)), method, input.extension, where])

where := sprintf(" for application %s/%s", [app_namespace, input.application.name]) if {
	input.application
} else := ""

# ---------------------------------------------------------------------------
# 4. The Application's project still permits it (Argo CD's own checks, so a
# stale or forged application header never widens access). The engine works
# out input.checks from input.project, input.application and input.cluster
# with Argo CD's pattern matching before every evaluation (policies.Checks);
# without them (a raw input, stock opa eval) an application request is denied.
# ---------------------------------------------------------------------------

project_permits if {
	input.project.name == input.application.project
	input.checks.namespacePermitted == true
	input.checks.clusterMatches == true
	input.checks.destinationPermitted == true
}

project_permits if not input.application

# input_complete and project_permits in one rule, for the first branch of
# decision, which every allowed request takes: evaluating a rule costs about
# as much as the expressions of both.
complete_and_permitted if {
	input.application.name != ""
	input.application.project != ""
	input.user.id != ""
	input.extension != ""
	input.project.name == input.application.project
	input.checks.namespacePermitted == true
	input.checks.clusterMatches == true
	input.checks.destinationPermitted == true
}

complete_and_permitted if {
	not input.application
	input.user.id != ""
	input.extension != ""
}

project_denial := "denied: the application's project is unknown" if {
	not input.project
} else := sprintf("denied: application %s/%s belongs to project %q, not %q", [app_namespace, input.application.name, app_project, object.get(input.project, "name", "")]) if {
	object.get(input.project, "name", "") != app_project
} else := "denied: the project checks are missing from the input (policies.Checks); evaluate through Gatehouse's engine" if {
	not input.checks
} else := sprintf("denied: project %q does not permit applications in namespace %q", [app_project, app_namespace]) if {
	not input.checks.namespacePermitted == true
} else := sprintf("denied: the destination cluster does not match application %s/%s", [app_namespace, input.application.name]) if {
	not input.checks.clusterMatches == true
} else := sprintf("denied: project %q does not permit the destination of application %s/%s", [app_project, app_namespace, input.application.name])

# A denial for the Application itself (the caller may not view it, or its
# project does not hold it) carries "conceal": the proxy then answers as for
# an Application that does not exist, so a denial never tells a caller which
# Applications exist or where. Only missing checks, an input that did not
# come through the engine, are an administrator's matter and not concealed.
project_denial_conceals := false if {
	object.get(input.project, "name", "") == app_project
	not input.checks
} else := true

# ---------------------------------------------------------------------------
# Allowed: reason and headers
# ---------------------------------------------------------------------------

# Headers from the matching allow grants of roles that deny nothing here;
# several values for one name are joined with ", " in sorted order.
headers := {name: concat(", ", sort(values)) |
	some name in {n | some [n, _] in header_pairs}
	values := {v | some [n, v] in header_pairs; n == name}
} if {
	headers_apply
} else := {}

headers_apply := x if {
	x := data.gatehouse.generated.headers_apply
} else := count(extension_header_grants) > 0

header_pairs contains [name, value] if {
	some [r, h] in extension_header_grants
	not r in extension_deniers
	some name, value in h
}

# ---------------------------------------------------------------------------
# Explanation, for `gatehouse policy eval --explain` (not on the request path)
# ---------------------------------------------------------------------------

explanation := {
	"subjects": sort(subjects),
	"roles": sort(roles),
	"denyScope": deny_scope,
	"applicationObject": object_or_empty,
	"applicationAllowedBy": sort(application_allowers - application_deniers),
	"applicationDeniedBy": sort(application_deniers),
	"applicationVisible": holds({1 | application_visible}),
	"extensionAllowedBy": sort(extension_allowers - extension_deniers),
	"extensionDeniedBy": sort(extension_deniers),
	"extensionGranted": holds({1 | extension_granted}),
	"projectPermits": holds({1 | project_permits}),
	"checks": object.get(input, "checks", {}),
}

holds(s) := count(s) > 0

object_or_empty := app_rbac_name if {
	application_request
} else := ""
