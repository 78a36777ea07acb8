//go:build !unix

package policies

func processCPU() int64 { return -1 }
