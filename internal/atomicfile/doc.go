// Package atomicfile owns replacing a file so that a reader sees the old
// contents or the new, never half of either, and the new survives a crash
// once the call returns: temporary file in the same directory, write,
// fsync, close, rename(2), fsync the directory. It must never import
// anything outside Go's standard library.
package atomicfile
