//go:build race

package policies

// raceDetector: the race detector's own memory (its shadow of the heap)
// counts against RLIMIT_DATA, so a race build's child could not start
// under the budget; it watches its heap instead (watchHeap).
const raceDetector = true
