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

// Header is what a published snapshot says about itself.
type Header struct {
	Generation uint64
	Time       time.Time
}

// ReadHeader returns the generation and time of the snapshot at path (zero
// when there is none). It reads only up to those keys, not the whole file.
func ReadHeader(path string) (Header, error) {
	var h Header
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return h, nil
	}
	if err != nil {
		return h, err
	}
	defer f.Close()
	dec := json.NewDecoder(io.LimitReader(f, occupancy.MaxFileBytes))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return h, fmt.Errorf("%s: not a snapshot (want a JSON object)", path)
	}
	found := 0
	for dec.More() && found < 2 {
		key, err := dec.Token()
		if err != nil {
			return h, fmt.Errorf("%s: %w", path, err)
		}
		var dst any = &json.RawMessage{}
		switch key {
		case "generation":
			dst = &h.Generation
			found++
		case "time":
			dst = &h.Time
			found++
		}
		if err := dec.Decode(dst); err != nil {
			return h, fmt.Errorf("%s: %v: %w", path, key, err)
		}
	}
	if h.Generation == 0 {
		return h, fmt.Errorf("%s: no generation", path)
	}
	return h, nil
}

// WriteSnapshot publishes s at path (see WriteFile); source says where its
// contents came from ("slurm 22.05.8"). The JSON is compact: a 4,096-node
// snapshot encodes several times faster than indented.
func WriteSnapshot(path string, s *occupancy.Snapshot, source string, opts Options) error {
	return WriteFile(path, opts, func(w io.Writer) error { return s.EncodeCompact(w, source) })
}
