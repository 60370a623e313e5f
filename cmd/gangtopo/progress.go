package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// isTerminal reports whether f is a character device (a terminal), so
// progress output is drawn only for a person watching.
func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// progressBar returns a callback that redraws a one-line bar on w, and
// clears it when the work is done.
func progressBar(w io.Writer, start time.Time) func(done, total int) {
	const width = 30
	return func(done, total int) {
		if done == total {
			fmt.Fprintf(w, "\r%s\r", strings.Repeat(" ", width+40))
			return
		}
		n := done * width / max(total, 1)
		elapsed := time.Since(start)
		eta := time.Duration(float64(elapsed) / float64(max(done, 1)) * float64(total-done))
		fmt.Fprintf(w, "\r[%s%s] %d/%d runs, %s left ", strings.Repeat("#", n), strings.Repeat(".", width-n), done, total, eta.Round(time.Second))
	}
}
