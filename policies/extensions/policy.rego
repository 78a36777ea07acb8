# METADATA
# title: Gatehouse extension authorization (default policy)
# description: |
#   Decides whether a user may call a proxy extension, for one Application or for
#   the whole system. Grants live in data.gatehouse (see policies/README.md), so
#   admins change who may do what without touching this file.
#
#   Query: data.gatehouse.extensions.decision
#   Output: {"allow": bool, "reason": string, "headers": {name: value}}
#
#   A request is allowed when, in this order:
#     1. the input names a user and an extension;
#     2. for an application request, the user may view the Application
#        (Argo CD's "applications, get"; config.requireApplicationGet);
#     3. a grant lets the user invoke the extension there with this method,
#        and no deny rule forbids it (deny wins);
#     4. for an application request, the Application's project still permits
#        the Application's namespace and its destination.
package gatehouse.extensions

# ---------------------------------------------------------------------------
# Decision
# ---------------------------------------------------------------------------

default decision := {"allow": false, "reason": "denied: the policy could not authorize this request"}

decision := {"allow": false, "reason": msg} if {
	msg := input_problem
} else := {"allow": false, "reason": msg} if {
	msg := application_problem
} else := {"allow": false, "reason": msg} if {
	msg := extension_problem
} else := {"allow": false, "reason": msg} if {
	msg := project_problem
} else := {"allow": true, "reason": allow_reason, "headers": headers}

# ---------------------------------------------------------------------------
# Configuration (data.gatehouse.config), with defaults
# ---------------------------------------------------------------------------

default control_plane_namespace := "argocd"

control_plane_namespace := data.gatehouse.config.controlPlaneNamespace

default require_application_get := true

require_application_get := data.gatehouse.config.requireApplicationGet

# "all": a deny rule in any of the user's roles wins (Gatehouse's default).
# "subject": Argo CD's evaluation: the default roles, the user and each group
# are judged apart; access needs one of them to allow with no deny of its own.
default deny_scope := "all"

deny_scope := data.gatehouse.config.denyScope

# ---------------------------------------------------------------------------
# Request facts
# ---------------------------------------------------------------------------

user_id := object.get(input, ["user", "id"], "")

extension := object.get(input, "extension", "")

method := upper(object.get(input, ["request", "method"], ""))

application_request if input.application

app_project := object.get(input.application, "project", "")

app_name := object.get(input.application, "name", "")

# An Application with no namespace lives in the control-plane namespace.
app_namespace := ns if {
	ns := object.get(input.application, "namespace", "")
	ns != ""
} else := control_plane_namespace

# The object Argo CD's RBAC checks for an Application (util/security.RBACName).
app_rbac_name := concat("/", [app_project, app_name]) if {
	app_namespace == control_plane_namespace
} else := concat("/", [app_project, app_namespace, app_name])

app_label := concat("/", [app_namespace, app_name])

input_problem := "denied: the request has no authenticated user" if {
	user_id == ""
} else := "denied: the request names no extension" if {
	extension == ""
} else := "denied: the request's application has no name or project" if {
	application_request
	"" in {app_name, app_project}
}

# ---------------------------------------------------------------------------
# Subjects: the user (bound by id), each of the user's groups, and the default
# roles every user holds. Their roles come from data.gatehouse.bindings.
# ---------------------------------------------------------------------------

subjects contains "default"

subjects contains concat(":", ["user", user_id])

subjects contains concat(":", ["group", g]) if some g in input.user.groups

roles contains r if some r in data.gatehouse.config.defaultRoles

roles contains r if some r in data.gatehouse.bindings.users[user_id]

roles contains r if {
	some g in input.user.groups
	some r in data.gatehouse.bindings.groups[g]
}

# ---------------------------------------------------------------------------
# The grant index: data.gatehouse rearranged by subject, extension name and
# project, with every default filled in, so a request looks up the few grants
# that can apply instead of scanning them all. The engine evaluates
# index_from_data once per policy version and stores it at
# data.gatehouse.index; without that (opa test, or tests that mock parts of
# data.gatehouse) it is computed here, by the same rules.
#
# index.subjects["user:<id>" | "group:<name>" | "default"]:
#   extensions[<name>].projects[<project>]  grants for this extension and project
#   extensions[<name>].anyProject           ... whose project is a glob
#   extensions[<name>].system               ... that apply to system requests
#   extensionGlobs                          grants whose extension is a glob
#   applications[<project>]                 applications grants for this project
#   applicationsAnyProject                  ... whose project is a glob
# Each grant carries its role.
# ---------------------------------------------------------------------------

index := data.gatehouse.index if {
	data.gatehouse.index
} else := index_from_data

index_from_data := {"subjects": object.union_n([
	{"default": subject_index(object.get(data.gatehouse.config, "defaultRoles", []))},
	{concat(":", ["user", id]): subject_index(rs) | some id, rs in data.gatehouse.bindings.users},
	{concat(":", ["group", g]): subject_index(rs) | some g, rs in data.gatehouse.bindings.groups},
])}

# subject_index(role_names): the grants of these roles, arranged for lookup.
subject_index(role_names) := {
	"extensions": {name: {
		"projects": {p: [g | some g in named; g.project == p] | some g in named; p := g.project; not is_glob(p)},
		"anyProject": [g | some g in named; is_glob(g.project)],
		"system": [g | some g in named; g.system],
	} |
		some name in {g.extension | some g in exts; not is_glob(g.extension)}
		named := [g | some g in exts; g.extension == name]
	},
	"extensionGlobs": [g | some g in exts; is_glob(g.extension)],
	"applications": {p: [g | some g in apps; g.project == p] | some g in apps; p := g.project; not is_glob(p)},
	"applicationsAnyProject": [g | some g in apps; is_glob(g.project)],
} if {
	names := {r | some r in role_names}
	exts := [g | some r in names; some g in normal_roles[r].extensions]
	apps := [g | some r in names; some g in normal_roles[r].applications]
}

# Every role's grants with defaults filled in, computed once.
normal_roles[name] := {
	"extensions": [normal_extension_grant(name, g) | some g in object.get(role, "extensions", [])],
	"applications": [normal_application_grant(name, g) | some g in object.get(role, "applications", [])],
} if {
	some name, role in data.gatehouse.roles
}

normal_extension_grant(role, g) := {
	"role": role,
	"extension": object.get(g, "extension", "*"),
	"project": project,
	"namespace": namespace,
	"application": application,
	"system": {project, namespace, application} == {"*"},
	# {METHOD: true}; a method not listed gets anyMethod
	"methods": {m: true | some m in object.get(g, "methods", [])},
	"anyMethod": any_method(g),
	"deny": object.get(g, "effect", "allow") == "deny",
	"headers": object.get(g, "headers", {}),
} if {
	project := object.get(g, "project", "*")
	namespace := object.get(g, "namespace", "*")
	application := object.get(g, "application", "*")
}

any_method(g) if not g.methods

any_method(g) if "*" in g.methods

default any_method(_) := false

# An applications grant names Applications by an Argo CD object ("team-a/*")
# or by project, namespace and application globs; the other form is "*". A
# grant given as an object is filed under its project when the part before the
# first "/" is a plain name: project names hold no "/", so only that project's
# Applications can match it.
normal_application_grant(role, g) := {
	"role": role,
	"object": object.get(g, "object", "*"),
	"project": project,
	"namespace": object.get(g, "namespace", "*"),
	"application": object.get(g, "application", "*"),
	"deny": object.get(g, "effect", "allow") == "deny",
} if {
	project := object_project(g.object)
} else := {
	"role": role,
	"object": "*",
	"project": object.get(g, "project", "*"),
	"namespace": object.get(g, "namespace", "*"),
	"application": object.get(g, "application", "*"),
	"deny": object.get(g, "effect", "allow") == "deny",
}

object_project(o) := p if {
	p := split(o, "/")[0]
	count(p) < count(o)
	not is_glob(p)
} else := "*"

is_glob(p) if regex.match(`[*?\[\]{}\\]`, p)

# ---------------------------------------------------------------------------
# Matching: patterns are globs without separators (glob.match with null
# delimiters), as in Argo CD's RBAC, so "*" also matches "/". A plain name is
# a glob that matches only itself.
#
# Hits are [subject, role, deny] for the grants that apply. Access is granted
# when some role allows and no role denies; with deny_scope "subject", allow
# and deny are weighed within each subject.
# ---------------------------------------------------------------------------

granted(hits) if {
	deny_scope != "subject"
	some [_, _, false] in hits
	not deny_in(hits)
}

granted(hits) if {
	deny_scope == "subject"
	some [s, _, false] in hits
	not [s, true] in {[t, d] | some [t, _, d] in hits}
}

deny_in(hits) if some [_, _, true] in hits

allowed_by(hits) := {r | some [_, r, false] in hits} - denied_by(hits)

denied_by(hits) := {r | some [_, r, true] in hits}

# ---------------------------------------------------------------------------
# 2. Viewing the Application (Argo CD: applications, get)
# ---------------------------------------------------------------------------

application_hits contains [s, g.role, g.deny] if {
	application_request
	some s in subjects
	some g in index.subjects[s].applications[app_project]
	glob.match(g.object, null, app_rbac_name)
	glob.match(g.namespace, null, app_namespace)
	glob.match(g.application, null, app_name)
}

application_hits contains [s, g.role, g.deny] if {
	application_request
	some s in subjects
	some g in index.subjects[s].applicationsAnyProject
	glob.match(g.object, null, app_rbac_name)
	glob.match(g.project, null, app_project)
	glob.match(g.namespace, null, app_namespace)
	glob.match(g.application, null, app_name)
}

application_problem := msg if {
	application_request
	require_application_get
	not granted(application_hits)
	msg := application_denial
}

application_denial := sprintf("denied: a deny rule of %s forbids viewing application %s", [concat(", ", sort(denied)), app_label]) if {
	denied := denied_by(application_hits)
	count(denied) > 0
} else := sprintf("denied: none of your roles may view application %s (Argo CD permission: applications, get, %s)", [app_label, app_rbac_name])

# ---------------------------------------------------------------------------
# 3. Invoking the extension
# ---------------------------------------------------------------------------

# [subject, grant] for the extension grants that apply to this request. A
# grant that names a project, namespace or application never applies to a
# system request (one without an Application).
extension_grants contains [s, g] if {
	application_request
	some s in subjects
	some g in index.subjects[s].extensions[extension].projects[app_project]
	object.get(g.methods, method, g.anyMethod) == true
	glob.match(g.namespace, null, app_namespace)
	glob.match(g.application, null, app_name)
}

extension_grants contains [s, g] if {
	application_request
	some s in subjects
	some g in index.subjects[s].extensions[extension].anyProject
	object.get(g.methods, method, g.anyMethod) == true
	glob.match(g.project, null, app_project)
	glob.match(g.namespace, null, app_namespace)
	glob.match(g.application, null, app_name)
}

extension_grants contains [s, g] if {
	application_request
	some s in subjects
	some g in index.subjects[s].extensionGlobs
	glob.match(g.extension, null, extension)
	object.get(g.methods, method, g.anyMethod) == true
	glob.match(g.project, null, app_project)
	glob.match(g.namespace, null, app_namespace)
	glob.match(g.application, null, app_name)
}

extension_grants contains [s, g] if {
	not application_request
	some s in subjects
	some g in index.subjects[s].extensions[extension].system
	object.get(g.methods, method, g.anyMethod) == true
}

extension_grants contains [s, g] if {
	not application_request
	some s in subjects
	some g in index.subjects[s].extensionGlobs
	g.system
	glob.match(g.extension, null, extension)
	object.get(g.methods, method, g.anyMethod) == true
}

extension_hits := {[s, g.role, g.deny] | some [s, g] in extension_grants}

extension_problem := msg if {
	not granted(extension_hits)
	msg := extension_denial
}

extension_denial := sprintf("denied: a deny rule of %s forbids %s on extension %q%s", [concat(", ", sort(denied)), method, extension, where]) if {
	denied := denied_by(extension_hits)
	count(denied) > 0
} else := sprintf("denied: none of your roles may %s extension %q%s", [method, extension, where])

where := sprintf(" for application %s", [app_label]) if {
	application_request
} else := ""

# ---------------------------------------------------------------------------
# 4. The Application's project still permits it (Argo CD's own checks, so a
# stale or forged application header never widens access)
# ---------------------------------------------------------------------------

project_problem := "denied: the application's project is unknown" if {
	application_request
	not input.project
} else := sprintf("denied: application %s belongs to project %q, not %q", [app_label, app_project, object.get(input.project, "name", "")]) if {
	application_request
	object.get(input.project, "name", "") != app_project
} else := sprintf("denied: project %q does not permit applications in namespace %q", [app_project, app_namespace]) if {
	application_request
	not namespace_permitted
} else := sprintf("denied: the destination cluster does not match application %s", [app_label]) if {
	application_request
	not cluster_consistent
} else := sprintf("denied: project %q does not permit the destination of application %s", [app_project, app_label]) if {
	application_request
	not destination_permitted
}

# Argo CD AppProject.IsAppNamespacePermitted: the control-plane namespace is
# always permitted; otherwise one of spec.sourceNamespaces must match (a glob,
# or a /regular expression/, unanchored).
namespace_permitted if app_namespace == control_plane_namespace

namespace_permitted if {
	some p in input.project.sourceNamespaces
	glob.match(p, null, app_namespace)
}

namespace_permitted if {
	some p in input.project.sourceNamespaces
	startswith(p, "/")
	endswith(p, "/")
	count(p) > 1
	regex.match(substring(p, 1, count(p) - 2), app_namespace)
}

cluster_name := object.get(input, ["cluster", "name"], "")

cluster_server := object.get(input, ["cluster", "server"], "")

dest_namespace := object.get(input.application, ["destination", "namespace"], "")

# The resolved cluster must be the one the Application names.
cluster_consistent if {
	input.cluster
	object.get(input.application, ["destination", "server"], "") in {"", cluster_server}
	object.get(input.application, ["destination", "name"], "") in {"", cluster_name}
	not scoped_cluster_refused
}

# spec.permitOnlyProjectScopedClusters: the cluster must belong to the project.
scoped_cluster_refused if {
	input.project.permitOnlyProjectScopedClusters == true
	object.get(input.cluster, "project", "") != input.project.name
}

# Argo CD AppProject.isDestinationMatched, including "!" deny patterns: some
# destination matches and no deny pattern refuses.
destination_permitted if {
	some d in input.project.destinations
	destination_matches(d)
	not destination_refused
}

destination_matches(d) if {
	cluster_server != ""
	dest_glob(object.get(d, "server", ""), cluster_server)
	dest_glob(object.get(d, "namespace", ""), dest_namespace)
}

destination_matches(d) if {
	cluster_name != ""
	dest_glob(object.get(d, "name", ""), cluster_name)
	dest_glob(object.get(d, "namespace", ""), dest_namespace)
}

destination_refused if {
	some d in input.project.destinations
	contains(concat("", [object.get(d, "name", ""), object.get(d, "server", ""), object.get(d, "namespace", "")]), "!")
	not destination_matches(d)
	destination_refuses(d)
}

destination_refuses(d) if {
	startswith(object.get(d, "name", ""), "!")
	not dest_name_matched(d)
}

destination_refuses(d) if {
	startswith(object.get(d, "server", ""), "!")
	not dest_server_matched(d)
	dest_namespace_matched(d)
}

destination_refuses(d) if {
	startswith(object.get(d, "namespace", ""), "!")
	not dest_namespace_matched(d)
	dest_server_matched(d)
}

dest_name_matched(d) if {
	cluster_name != ""
	dest_glob(object.get(d, "name", ""), cluster_name)
}

dest_server_matched(d) if {
	cluster_server != ""
	dest_glob(object.get(d, "server", ""), cluster_server)
}

dest_namespace_matched(d) if dest_glob(object.get(d, "namespace", ""), dest_namespace)

# Argo CD's globMatch with negation: "!p" matches what p does not.
dest_glob(p, v) if {
	not startswith(p, "!")
	glob.match(p, null, v)
}

dest_glob(p, v) if {
	startswith(p, "!")
	not glob.match(substring(p, 1, -1), null, v)
}

# ---------------------------------------------------------------------------
# Allowed: reason and headers
# ---------------------------------------------------------------------------

allow_reason := sprintf("allowed by %s", [concat(", ", sort(allowed_by(extension_hits)))])

# Headers from the matching allow grants of roles that deny nothing here;
# several values for one name are joined with ", " in sorted order.
headers := {name: concat(", ", sort(values)) |
	some name in {n | some [n, _] in header_pairs}
	values := {v | some [n, v] in header_pairs; n == name}
}

header_pairs contains [name, value] if {
	some [_, g] in extension_grants
	count(g.headers) > 0
	not g.deny
	not g.role in denied_by(extension_hits)
	some name, value in g.headers
}

# ---------------------------------------------------------------------------
# Explanation, for `gatehouse policy eval --explain` (not on the request path)
# ---------------------------------------------------------------------------

explanation := {
	"subjects": sort(subjects),
	"roles": sort(roles),
	"denyScope": deny_scope,
	"applicationObject": object_or_empty,
	"applicationAllowedBy": sort(allowed_by(application_hits)),
	"applicationDeniedBy": sort(denied_by(application_hits)),
	"applicationVisible": holds({1 | granted(application_hits)}),
	"extensionAllowedBy": sort(allowed_by(extension_hits)),
	"extensionDeniedBy": sort(denied_by(extension_hits)),
	"extensionGranted": holds({1 | granted(extension_hits)}),
	"namespacePermitted": holds({1 | namespace_permitted}),
	"destinationPermitted": holds({1 | destination_permitted}),
}

holds(s) := count(s) > 0

object_or_empty := app_rbac_name if {
	application_request
} else := ""


