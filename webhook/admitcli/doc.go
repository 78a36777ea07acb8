// Package admitcli is `gatehouse admit`: its flags, their validation, and
// the verdict lines it prints (WriteVerdicts, which gatehouse dev's tour
// prints too). The rules are webhook's (webhook.Admit); this package only
// reads the command line and writes the verdicts.
//
// Only cmd/* and the dev command import it; it must never import gRPC,
// the proxy or another role's CLI package.
package admitcli
