package docsection

import (
	"bufio"
	"os"
	"strings"
)

// Commands returns the command lines of the ```sh blocks in the section
// of a Markdown file that starts with heading (up to the next heading of
// its level or above), without comments (lines starting with "#", and what
// follows " # "): what a test
// runs to show that a documented procedure works as written.
func Commands(path, heading string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	level := strings.Index(heading, " ") // "## Title": 2
	var out []string
	in, block := false, false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case !block && headingLevel(line) > 0 && headingLevel(line) <= level:
			in = line == heading
		case !in:
		case strings.HasPrefix(line, "```"):
			block = !block && line == "```sh"
		case block && line != "" && !strings.HasPrefix(line, "#"):
			if i := strings.Index(line, " # "); i >= 0 {
				line = strings.TrimSpace(line[:i])
			}
			out = append(out, line)
		}
	}
	return out, sc.Err()
}

// headingLevel is a Markdown heading's level ("### x": 3), 0 for a line
// that is not one.
func headingLevel(line string) int {
	n := len(line) - len(strings.TrimLeft(line, "#"))
	if n == 0 || n >= len(line) || line[n] != ' ' {
		return 0
	}
	return n
}
