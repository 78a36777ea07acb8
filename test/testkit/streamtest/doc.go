// Package streamtest is the long-lived streams the proxy's tests open through
// it: a backend serving an event stream and WebSockets, and clients that
// open one, read its first message, and report how and when it ended. The
// proxy's package tests and test/revocation (the proxy as a process) both
// use it. Only tests import it; it imports nothing of Gatehouse.
package streamtest
