package picture

import (
	"fmt"
	"io"
	"strings"
)

// Text pictures: one glyph per GPU, nodes side by side under their row's
// name, wrapped at the width; a cluster of more than PerGPUNodes nodes
// gets one glyph per node instead (the free GPUs of a partly used node as
// a digit), so that 256 nodes take a line per leaf, not a hundred lines.
const PerGPUNodes = 64

// TextOptions say how a text picture is drawn.
type TextOptions struct {
	Width    int  // columns
	Color    bool // ANSI colours
	NoLegend bool // the caller prints Legend once for several pictures
}

var glyphs = map[Cell]struct{ g, ansi string }{
	Free:     {".", "\x1b[32m"},
	Busy:     {"#", "\x1b[31m"},
	Shared:   {"+", "\x1b[33m"},
	Offline:  {"x", "\x1b[90m"},
	Requeued: {"o", "\x1b[35m"},
	Gang:     {"G", "\x1b[34m"},
}

const ansiReset = "\x1b[0m"

// Legend is the line that explains the glyphs a picture uses.
func (v View) Legend() string {
	s := "cluster picture: . free  # busy  + shared  x offline (drain/down/unknown)"
	if v.has(Requeued) || v.has(Gang) {
		s += "  o requeued by the plan  G the gang"
	}
	if v.nodeCount() > PerGPUNodes {
		s += "; one glyph per node, a digit: its free GPUs"
	}
	return s
}

func (v View) has(c Cell) bool {
	for _, r := range v.Rows {
		for _, n := range r.Nodes {
			for _, x := range n.Cells {
				if x == c {
					return true
				}
			}
		}
	}
	return false
}

// WriteText draws the picture, legend first.
func (v View) WriteText(w io.Writer, o TextOptions) {
	if !o.NoLegend {
		fmt.Fprintln(w, v.Legend())
	}
	if v.nodeCount() > PerGPUNodes {
		v.perNode(w, o)
		return
	}
	nameW := 0
	for _, r := range v.Rows {
		for _, n := range r.Nodes {
			nameW = max(nameW, len(n.Name))
		}
	}
	for _, r := range v.Rows {
		fmt.Fprintln(w, r.Name)
		line, visible := "  ", 2
		for _, n := range r.Nodes {
			width := nameW + 3 + len(n.Cells)
			if visible > 2 && visible+width > o.Width {
				fmt.Fprintln(w, strings.TrimRight(line, " "))
				line, visible = "  ", 2
			}
			line += fmt.Sprintf("%-*s %s  ", nameW, n.Name, cells(n.Cells, o.Color))
			visible += width
		}
		fmt.Fprintln(w, strings.TrimRight(line, " "))
	}
}

// perNode draws one glyph per node: a row per line, its name in front.
func (v View) perNode(w io.Writer, o TextOptions) {
	nameW := 0
	for _, r := range v.Rows {
		nameW = max(nameW, len(r.Name))
	}
	for _, r := range v.Rows {
		line, visible := fmt.Sprintf("%-*s  ", nameW, r.Name), nameW+2
		for _, n := range r.Nodes {
			if visible >= o.Width {
				fmt.Fprintln(w, line)
				line, visible = strings.Repeat(" ", nameW+2), nameW+2
			}
			line += nodeGlyph(n, o.Color)
			visible++
		}
		fmt.Fprintln(w, line)
	}
}

func cells(cs []Cell, color bool) string {
	var b strings.Builder
	for _, c := range cs {
		b.WriteString(glyph(c, glyphs[c].g, color))
	}
	return b.String()
}

func glyph(c Cell, g string, color bool) string {
	if !color {
		return g
	}
	return glyphs[c].ansi + g + ansiReset
}

// nodeGlyph sums a node up: a plan's mark wins, then whole states, else
// its free GPUs as a digit (+ beyond 9).
func nodeGlyph(n Node, color bool) string {
	count := map[Cell]int{}
	for _, c := range n.Cells {
		count[c]++
	}
	for _, c := range []Cell{Gang, Requeued} {
		if count[c] > 0 {
			return glyph(c, glyphs[c].g, color)
		}
	}
	switch k := len(n.Cells); {
	case k == 0:
		return " "
	case count[Offline] == k:
		return glyph(Offline, "x", color)
	case count[Free] == k:
		return glyph(Free, ".", color)
	case count[Free] == 0 && count[Shared] == 0:
		return glyph(Busy, "#", color)
	case count[Free] == 0:
		return glyph(Shared, "+", color)
	case count[Free] > 9:
		return glyph(Shared, "+", color)
	}
	return glyph(Shared, fmt.Sprint(count[Free]), color)
}
