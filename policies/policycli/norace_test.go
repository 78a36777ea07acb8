//go:build !race

package policycli

const raceDetector = false
