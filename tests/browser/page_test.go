// Package browser renders gangtopo's HTML pages in a real browser (Debian's
// chromium, headless) and checks that their charts are there: in the DOM
// the browser parsed, and as pixels of the policies' colours in its
// screenshot. make browser runs it (GANGTOPO_BROWSER=1, after installing
// chromium); go test ./... skips it.
package browser

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// pageSections are the sections of replay --html with a chart each, for a
// load sweep (cmd/gangtopo/replay_html.go).
var pageSections = []string{"waits", "band", "stranded", "free"}

// policyColours are the stroke colours of two of the policies the page is
// drawn for (cmd/gangtopo/internal/picture), blues that no text of the
// page has (slurm's grey is near the text's antialiasing).
var policyColours = map[string][3]uint8{"gangtopo": {0x1f, 0x77, 0xb4}, "gangtopo-slurm": {0x17, 0xbe, 0xcf}}

func TestReplayPageInBrowser(t *testing.T) {
	if os.Getenv("GANGTOPO_BROWSER") == "" {
		t.Skip("renders in chromium: make browser runs it (GANGTOPO_BROWSER=1)")
	}
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatalf("GANGTOPO_BROWSER is set but there is no chromium: make browser installs it (%v)", err)
	}
	dir := t.TempDir()
	page := writePage(t, dir)
	dom := run(t, chromium, dir, "--dump-dom", "file://"+page)
	if errs := checkDOM(dom); len(errs) > 0 {
		t.Errorf("the page chromium parsed lacks charts:\n%s", strings.Join(errs, "\n"))
	}
	shot := filepath.Join(dir, "page.png")
	run(t, chromium, dir, "--window-size=1200,3200", "--screenshot="+shot, "file://"+page)
	if errs := checkPixels(t, shot); len(errs) > 0 {
		t.Errorf("the screenshot of the page (%s):\n%s", shot, strings.Join(errs, "\n"))
	}

	// The checks fail on a page without its charts: the same page, its
	// SVG removed.
	bare := regexp.MustCompile(`(?s)<svg.*?</svg>`).ReplaceAllString(dom, "")
	if len(checkDOM(bare)) < len(pageSections) {
		t.Errorf("checkDOM passes a page without charts")
	}
	barePage := filepath.Join(dir, "bare.html")
	if err := os.WriteFile(barePage, []byte(bare), 0o644); err != nil {
		t.Fatal(err)
	}
	run(t, chromium, dir, "--window-size=1200,3200", "--screenshot="+shot, "file://"+barePage)
	if len(checkPixels(t, shot)) == 0 {
		t.Errorf("checkPixels passes a page without charts")
	}
}

// writePage builds gangtopo and writes the replay's page of the 48-job
// fixture on the 16-node lab at three loads.
func writePage(t *testing.T, dir string) string {
	t.Helper()
	root := filepath.Join("..", "..")
	bin := filepath.Join(dir, "gangtopo")
	if out, err := exec.Command("go", "build", "-o", bin, filepath.Join(root, "cmd", "gangtopo")).CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	page := filepath.Join(dir, "page.html")
	cmd := exec.Command(bin, "replay", "--topology", filepath.Join(root, "docs", "examples", "lab16.yaml"),
		"--trace", filepath.Join(root, "cmd", "gangtopo", "testdata", "replay", "philly-small.csv"),
		"--peak-load", "0.8,1,1.2", "--policies", "gangtopo,gangtopo-slurm,slurm", "--html", page)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("gangtopo replay --html: %v\n%s", err, out)
	}
	return page
}

// run runs headless chromium with args and returns its standard output.
// (As root chromium needs --no-sandbox; its own profile directory keeps
// it off the user's.)
func run(t *testing.T, chromium, dir string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--user-data-dir=" + filepath.Join(dir, "profile")}
	cmd := exec.CommandContext(ctx, chromium, append(base, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String()
}

var (
	sectionRe  = regexp.MustCompile(`(?s)<section id="([a-z]+)">(.*?)</section>`)
	polylineRe = regexp.MustCompile(`<polyline[^>]* points="([^"]*)"`)
)

// checkDOM says what the DOM lacks: each section of pageSections with an
// SVG chart in which a line has at least two points.
func checkDOM(dom string) []string {
	found := map[string]string{}
	for _, m := range sectionRe.FindAllStringSubmatch(dom, -1) {
		found[m[1]] = m[2]
	}
	var errs []string
	for _, id := range pageSections {
		body, ok := found[id]
		switch {
		case !ok:
			errs = append(errs, fmt.Sprintf("no section %q", id))
		case !strings.Contains(body, "<svg"):
			errs = append(errs, fmt.Sprintf("section %q: no <svg>", id))
		default:
			lines := 0
			for _, p := range polylineRe.FindAllStringSubmatch(body, -1) {
				if len(strings.Fields(p[1])) >= 2 {
					lines++
				}
			}
			if lines == 0 {
				errs = append(errs, fmt.Sprintf("section %q: no line of two points or more", id))
			}
		}
	}
	return errs
}

// checkPixels says what the screenshot lacks: enough pixels of each
// policy's colour for its lines to have been drawn, not its legend alone.
func checkPixels(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	count := map[[3]uint8]int{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			count[rgb(img, x, y)]++
		}
	}
	var errs []string
	for name, c := range policyColours {
		// a legend line alone is 20 x 2 pixels; the charts draw many more
		t.Logf("%s: %d pixels of %s's colour", path, count[c], name)
		if n := count[c]; n < 400 {
			errs = append(errs, fmt.Sprintf("%d pixels of %s's colour #%02x%02x%02x, want at least 400", n, name, c[0], c[1], c[2]))
		}
	}
	return errs
}

func rgb(img image.Image, x, y int) [3]uint8 {
	r, g, b, _ := img.At(x, y).RGBA()
	return [3]uint8{uint8(r >> 8), uint8(g >> 8), uint8(b >> 8)}
}
