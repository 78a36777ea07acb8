// Package browser drives headless Chromium for tests over the Chrome
// DevTools Protocol on the pipe Chromium offers (--remote-debugging-pipe:
// JSON messages ending in a NUL byte, read on its fd 3 and written on its
// fd 4), so no driver, WebSocket client or npm package is needed. The
// proxy's cookie differential test and the end-to-end browser scenario
// both use it. Only tests import it; of Gatehouse it imports testkit alone.
//
// GATEHOUSE_CHROMIUM names the binary (default: chromium or
// chromium-browser on PATH). GATEHOUSE_E2E_BROWSER=required (make test
// sets it) turns a missing browser into a failure; without it a test that
// needs one is skipped and says so.
package browser
