//go:build !race

package policies

const raceDetector = false
