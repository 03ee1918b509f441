package dissect

// SetWorkerPause has the data path's worker call f before each frame
// (nil: nothing), to shuffle its timing against the run loop's.
func SetWorkerPause(f func()) { workerPause = f }

// SetWorker runs the data path on its worker (pipeline.go), or not; it
// returns the setting before.
func SetWorker(on bool) bool {
	was := workerOn
	workerOn = on
	return was
}
