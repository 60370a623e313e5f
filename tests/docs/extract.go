package docs

import (
	"bufio"
	"os"
	"strings"
)

// Command is one command line of a document.
type Command struct {
	File string // as given to Extract
	Line int    // of the command's first line
	Text string // continuations joined, comments dropped
	// Output is what the document shows the command print: the lines
	// after a "$ " prompt up to the next prompt, or the lines of a block
	// without a language right after the command's sh block.
	Output []string
}

// Extract reads the command lines of a Markdown file.
func Extract(path string) ([]Command, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Command
	var lang string // "" outside a block; "sh", "none", "other" inside
	var pending string
	pendingLine := 0
	lastShEnd := -10 // line where the last sh block ended
	attach := -1     // a block without a language shows what command attach prints
	underSh := false // attach's output is a whole block under its sh block
	n := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		n++
		raw := sc.Text()
		line := strings.TrimSpace(raw)
		if strings.HasPrefix(line, "```") {
			switch {
			case lang == "":
				lang, attach, underSh = blockLang(strings.TrimPrefix(line, "```")), -1, false
				if lang == "none" && n <= lastShEnd+2 && len(out) > 0 {
					attach, underSh = len(out)-1, true // output shown right under the command
				}
			case lang == "sh":
				lang, lastShEnd = "", n
			default:
				lang = ""
			}
			continue
		}
		switch lang {
		case "sh":
			text := stripComment(line)
			if text == "" && pending == "" {
				continue
			}
			if pending == "" {
				pendingLine = n
			}
			if cont, ok := strings.CutSuffix(text, "\\"); ok {
				pending += strings.TrimSpace(cont) + " "
				continue
			}
			out = append(out, Command{File: path, Line: pendingLine, Text: strings.TrimSpace(pending + text)})
			pending = ""
		case "none":
			if after, ok := strings.CutPrefix(line, "$ "); ok {
				out = append(out, Command{File: path, Line: n, Text: strings.TrimSpace(after)})
				attach = len(out) - 1
				continue
			}
			if line == "" {
				if !underSh {
					attach = -1 // a blank line ends a transcript's output
				}
				continue
			}
			if attach >= 0 {
				out[attach].Output = append(out[attach].Output, strings.TrimRight(raw, " "))
			}
		}
	}
	return out, sc.Err()
}

func blockLang(info string) string {
	switch strings.TrimSpace(info) {
	case "sh", "bash", "shell", "console":
		return "sh"
	case "":
		return "none"
	}
	return "other"
}

// stripComment drops a comment: a line starting with #, or the text after
// " # " (the documents align comments after commands so).
func stripComment(line string) string {
	if strings.HasPrefix(line, "#") {
		return ""
	}
	if i := strings.Index(line, " # "); i >= 0 {
		line = line[:i]
	}
	return strings.TrimSpace(line)
}
