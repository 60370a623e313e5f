package traces

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// table reads a CSV file with a header row strictly: every row must have
// as many fields as the header, and field accessors report the file, line
// and column of a bad value.
type table struct {
	name   string // file name for messages
	r      *csv.Reader
	header []string
	col    map[string]int
	row    []string
	line   int
}

// openTable opens path and reads its header. The caller closes the file.
func openTable(path string) (*table, *os.File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	t, err := newTable(path, f)
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return t, f, nil
}

func newTable(name string, rd io.Reader) (*table, error) {
	r := csv.NewReader(rd)
	r.FieldsPerRecord = -1 // checked here, with a better message
	r.ReuseRecord = true
	t := &table{name: name, r: r, col: map[string]int{}}
	head, err := r.Read()
	if err == io.EOF {
		return nil, fmt.Errorf("%s: empty file (want a header row)", name)
	}
	if err != nil {
		return nil, t.csvError(err)
	}
	t.header = append([]string(nil), head...)
	for i, h := range t.header {
		h = strings.TrimSpace(strings.TrimPrefix(h, "\ufeff"))
		t.header[i] = h
		if _, dup := t.col[h]; dup {
			return nil, fmt.Errorf("%s:1: column %q appears twice in the header", name, h)
		}
		t.col[h] = i
	}
	return t, nil
}

// require fails unless the header has every named column.
func (t *table) require(cols ...string) error {
	var missing []string
	for _, c := range cols {
		if _, ok := t.col[c]; !ok {
			missing = append(missing, c)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%s:1: header lacks column(s) %s (have %s)", t.name, strings.Join(missing, ", "), strings.Join(t.header, ","))
	}
	return nil
}

func (t *table) has(col string) bool { _, ok := t.col[col]; return ok }

// next reads the next row; it returns false at the end of the file.
func (t *table) next() (bool, error) {
	row, err := t.r.Read()
	if err == io.EOF {
		return false, nil
	}
	if err != nil {
		return false, t.csvError(err)
	}
	t.row = row
	t.line, _ = t.r.FieldPos(0)
	if len(row) != len(t.header) {
		return false, fmt.Errorf("%s:%d: %d columns, want %d (%s)", t.name, t.line, len(row), len(t.header), strings.Join(t.header, ","))
	}
	return true, nil
}

func (t *table) csvError(err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s:%d: %v", t.name, pe.Line, pe.Err)
	}
	return fmt.Errorf("%s: %w", t.name, err)
}

func (t *table) str(col string) string {
	return strings.TrimSpace(t.row[t.col[col]])
}

// errorf formats an error about one column of the current row.
func (t *table) errorf(col, format string, args ...any) error {
	return fmt.Errorf("%s:%d: column %s: %s", t.name, t.line, col, fmt.Sprintf(format, args...))
}

// int reads a whole number in [lo, hi].
func (t *table) int(col string, lo, hi int64) (int64, error) {
	s := t.str(col)
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		// Pandas writes whole numbers as "12.0" in some exports; accept
		// those, reject anything with a fraction.
		f, ferr := strconv.ParseFloat(s, 64)
		if ferr != nil || f != float64(int64(f)) {
			return 0, t.errorf(col, "%q is not a whole number", s)
		}
		v = int64(f)
	}
	if v < 0 && lo >= 0 {
		return 0, t.errorf(col, "%d is negative (want %d..%d)", v, lo, hi)
	}
	if v < lo || v > hi {
		return 0, t.errorf(col, "%d is out of range (want %d..%d)", v, lo, hi)
	}
	return v, nil
}

// float reads a finite number in [lo, hi].
func (t *table) float(col string, lo, hi float64) (float64, error) {
	s := t.str(col)
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || v != v {
		return 0, t.errorf(col, "%q is not a number", s)
	}
	if v < lo || v > hi {
		return 0, t.errorf(col, "%g is out of range (want %g..%g)", v, lo, hi)
	}
	return v, nil
}
