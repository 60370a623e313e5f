package picture

import (
	"fmt"
	"html"
	"io"
	"strings"
)

// SVG cluster pictures: a row per leaf or block, its nodes as boxes of GPU
// squares (eight to a line), wrapped at svgWidth; two views side by side
// for a plan's before and after.
const (
	svgCell   = 7
	svgGap    = 1
	svgPerRow = 8 // GPU squares on one line of a node box
	svgWidth  = 620
	svgLabelW = 150
)

var fills = map[Cell]string{
	Free:     "#a1d99b",
	Busy:     "#de2d26",
	Shared:   "#fdae6b",
	Offline:  "#bdbdbd",
	Requeued: "#ffffff",
	Gang:     "#3182bd",
}

// WriteSVG draws one view.
func (v View) WriteSVG(w io.Writer) error {
	return WritePairSVG(w, "", v)
}

// WritePairSVG draws views side by side under a title (before and after a
// plan, say), with one legend.
func WritePairSVG(w io.Writer, title string, views ...View) error {
	var body strings.Builder
	height := 0
	for i, v := range views {
		h := v.svg(&body, i*(svgWidth+20), 44)
		height = max(height, h)
	}
	width := len(views)*(svgWidth+20) - 20 + 16
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="11">`+"\n", width, height+54, width, height+54)
	b.WriteString(`<rect width="100%" height="100%" fill="white"/>` + "\n")
	fmt.Fprintf(&b, `<text x="8" y="14" font-size="13" font-weight="bold">%s</text>`+"\n", html.EscapeString(title))
	x := 8
	for _, c := range []Cell{Free, Busy, Shared, Offline, Requeued, Gang} {
		if (c == Requeued || c == Gang) && !anyHas(views, c) {
			continue
		}
		name := map[Cell]string{Free: "free", Busy: "busy", Shared: "shared", Offline: "offline", Requeued: "requeued by the plan", Gang: "the gang"}[c]
		fmt.Fprintf(&b, `%s<text x="%d" y="30">%s</text>`+"\n", square(x, 22, c), x+svgCell+4, name)
		x += svgCell + 12 + 7*len(name)
	}
	b.WriteString(body.String())
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func anyHas(views []View, c Cell) bool {
	for _, v := range views {
		if v.has(c) {
			return true
		}
	}
	return false
}

func square(x, y int, c Cell) string {
	stroke := ""
	if c == Requeued {
		stroke = ` stroke="#de2d26" stroke-width="1.5"`
	}
	return fmt.Sprintf(`<rect x="%d" y="%d" width="%d" height="%d" fill="%s"%s/>`, x, y, svgCell, svgCell, fills[c], stroke)
}

// svg draws the view at (ox, oy) and returns the height it took.
func (v View) svg(b *strings.Builder, ox, oy int) int {
	y := oy
	if v.Title != "" {
		fmt.Fprintf(b, `<text x="%d" y="%d" font-weight="bold">%s</text>`+"\n", ox+8, y+4, html.EscapeString(v.Title))
		y += 14
	}
	for _, r := range v.Rows {
		fmt.Fprintf(b, `<text x="%d" y="%d">%s</text>`+"\n", ox+8, y+10, html.EscapeString(r.Name))
		widest := 1 // GPU squares on a line of the row's node boxes
		for _, n := range r.Nodes {
			widest = max(widest, min(len(n.Cells), svgPerRow))
		}
		nodeW := widest*(svgCell+svgGap) + 6
		perLine := max((svgWidth-svgLabelW)/nodeW, 1)
		rowH := 0
		for i, n := range r.Nodes {
			nx := ox + svgLabelW + (i%perLine)*nodeW
			lines := (len(n.Cells) + svgPerRow - 1) / svgPerRow
			boxH := lines*(svgCell+svgGap) + 4
			if i%perLine == 0 && i > 0 {
				y += rowH + 4
				rowH = 0
			}
			rowH = max(rowH, boxH)
			fmt.Fprintf(b, `<g><title>%s</title><rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#ccc"/>`, html.EscapeString(n.Name), nx, y, nodeW-4, boxH)
			for k, c := range n.Cells {
				b.WriteString(square(nx+2+(k%svgPerRow)*(svgCell+svgGap), y+2+(k/svgPerRow)*(svgCell+svgGap), c))
			}
			b.WriteString("</g>\n")
		}
		y += rowH + 8
	}
	return y - oy
}
