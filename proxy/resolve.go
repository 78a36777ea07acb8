package proxy

import (
	"github.com/gatehouse-dev/gatehouse/proxy/authz"
)

// findExtension is the stage that looks the route's extension up in the
// table.
func (x *exchange) findExtension() *problem {
	ext, prob := lookupExtension(x.t, x.route)
	if prob != nil {
		return prob
	}
	x.ext = ext
	return nil
}

// resolveApplication is the stage that reads the Application the request
// names and finds it, its project and its cluster in the table. A system
// extension's request names none.
func (x *exchange) resolveApplication() *problem {
	if x.ext.system {
		return nil
	}
	ref, prob := parseAppRef(x.r, x.websocket)
	if prob != nil {
		return prob
	}
	// As the client named it: the access log says what was asked for, the
	// answer does not.
	x.ref = ref
	x.target, prob = lookupApplication(x.t, ref, &x.targetOf)
	return prob
}

// lookupExtension is the extension a request's route names in t.
func lookupExtension(t *table, rt route) (*extension, *problem) {
	ext := t.extensions[rt.extension]
	if ext == nil {
		return nil, notFound("no extension named " + quoteShort(rt.extension) + " is configured")
	}
	return ext, nil
}

// lookupApplication is the Application ref names in t, with its project
// and cluster, built into into: one the snapshot does not have, or not in
// the project the request named, gets the same answer as one the caller
// may not see.
func lookupApplication(t *table, ref appRef, into *authz.Target) (*authz.Target, *problem) {
	if !t.index.Application(ref.namespace, ref.name, into) || into.Application.Project != ref.project || into.Project == nil {
		return nil, noApplication
	}
	return into, nil
}
