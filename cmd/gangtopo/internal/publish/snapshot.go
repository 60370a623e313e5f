package publish

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"time"

	"github.com/gangtopo/gangtopo/selector/occupancy"
)

// NextGeneration returns the generation to publish after last: at least
// last+1 and at least the time in Unix milliseconds. The clock part keeps
// generations increasing across restarts even when the old file is gone,
// so a reader that caches by generation never mistakes a new snapshot for
// the one it has.
func NextGeneration(last uint64, now time.Time) uint64 {
	return max(last+1, uint64(max(now.UnixMilli(), 0)))
}

// FileGeneration returns the generation of the snapshot at path, or 0 when
// there is none. It reads only up to the "generation" key, not the whole
// file.
func FileGeneration(path string) (uint64, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	defer f.Close()
	dec := json.NewDecoder(io.LimitReader(f, occupancy.MaxFileBytes))
	dec.UseNumber()
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return 0, fmt.Errorf("%s: not a snapshot (want a JSON object)", path)
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return 0, fmt.Errorf("%s: %w", path, err)
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return 0, fmt.Errorf("%s: %w", path, err)
		}
		if key == "generation" {
			var g uint64
			if err := json.Unmarshal(v, &g); err != nil {
				return 0, fmt.Errorf("%s: generation: %w", path, err)
			}
			return g, nil
		}
	}
	return 0, fmt.Errorf("%s: no generation", path)
}

// WriteSnapshot publishes s at path (see WriteFile); source says where its
// contents came from ("slurm 22.05.8").
func WriteSnapshot(path string, s *occupancy.Snapshot, source string, opts Options) error {
	return WriteFile(path, opts, func(w io.Writer) error { return s.Encode(w, source) })
}
