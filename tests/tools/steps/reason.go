package main

import (
	"regexp"
	"strconv"
	"strings"
)

// Reason finds in a failed step's output the line that says why, for the
// one line `make test` ends with. In order: the tests that failed (go
// test's --- FAIL lines, the innermost ones, with the first and last messages of the
// first), a panic (a test binary's timeout is one), a Go or C compile
// error, and otherwise the last line the step printed before make's own
// "*** [...] Error" lines (the Makefile's and the scripts' messages are
// written to be that line). "" when the output holds nothing.
func Reason(out string) string {
	lines := strings.Split(strings.ReplaceAll(out, "\r", ""), "\n")
	if r := failedTests(lines); r != "" {
		return r
	}
	if r := failedPackage(lines); r != "" {
		return r
	}
	for _, l := range lines {
		if strings.HasPrefix(l, "panic: ") {
			return strings.TrimSpace(l)
		}
	}
	for _, l := range lines {
		if compileError.MatchString(l) {
			return strings.TrimSpace(l)
		}
	}
	return lastWords(lines)
}

var (
	failLine     = regexp.MustCompile(`^\s*--- FAIL: (\S+)`)
	saysWhy      = regexp.MustCompile(`^[a-z][\w /.-]*: \S`)
	compileError = regexp.MustCompile(`^\S+\.(go|c|h):\d+(:\d+)?: `)
	makeError    = regexp.MustCompile(`^make(\[\d+\])?: (\*\*\*|Leaving|Entering)`)
	// goTestNoise are go test's summary lines, which name a package, not
	// a reason.
	goTestNoise = regexp.MustCompile(`^(FAIL|ok|PASS|\?)(\s|$)|^exit status \d+$`)
)

// failedTests names the innermost failed tests (a parent fails when a
// subtest does), at most three, with the first and last messages of the first.
func failedTests(lines []string) string {
	var names []string
	for _, l := range lines {
		if m := failLine.FindStringSubmatch(l); m != nil {
			names = append(names, m[1])
		}
	}
	var inner []string
	for _, n := range names {
		parent := false
		for _, o := range names {
			if strings.HasPrefix(o, n+"/") {
				parent = true
				break
			}
		}
		if !parent && !contains(inner, n) {
			inner = append(inner, n)
		}
	}
	if len(inner) == 0 {
		return ""
	}
	s := "--- FAIL: " + strings.Join(inner[:min(3, len(inner))], ", ")
	if len(inner) > 3 {
		s += ", and " + strconv.Itoa(len(inner)-3) + " more"
	}
	if msg := firstAndLast(lines, inner[0]); msg != "" && !goTestNoise.MatchString(msg) {
		s += ": " + msg
	}
	return s
}

var (
	statusLine  = regexp.MustCompile(`^\s*(--- (FAIL|PASS|SKIP)|=== (RUN|CONT|PAUSE|NAME))`)
	testMessage = regexp.MustCompile(`^\s+\w+_test\.go:\d+: `)
)

// firstAndLast is what the failed test named said first and, where it
// said more, what it said last (a t.Logf line and a t.Fatalf look alike in
// go test's output; the last is most often the assertion that ended it);
// "" when it said nothing.
func firstAndLast(lines []string, name string) string {
	said := repeated(lines, name)
	if len(said) == 0 {
		said = streamed(lines, name)
	}
	switch len(said) {
	case 0:
		return ""
	case 1:
		return said[0]
	}
	return said[0] + " ... last: " + said[len(said)-1]
}

// repeated are the lines under the test's --- FAIL line, where go test
// repeats its output: its _test.go files' messages, or else the one line
// under it that is not a status line.
func repeated(lines []string, name string) []string {
	for i, l := range lines {
		if m := failLine.FindStringSubmatch(l); m == nil || m[1] != name {
			continue
		}
		var said []string
		for _, next := range lines[i+1:] {
			if statusLine.MatchString(next) || goTestNoise.MatchString(next) {
				break
			}
			if testMessage.MatchString(next) {
				said = append(said, strings.TrimSpace(next))
			}
		}
		if len(said) == 0 && i+1 < len(lines) && !statusLine.MatchString(lines[i+1]) {
			said = append(said, strings.TrimSpace(lines[i+1]))
		}
		return said
	}
	return nil
}

// streamed are the lines of the test's own _test.go files in the
// sections under its === RUN and === CONT lines, where go test -v printed
// them as they came (the summary's --- FAIL line is then followed by a
// sibling's; the harness's progress lines come from other files).
func streamed(lines []string, name string) []string {
	var said []string
	in := false
	for _, l := range lines {
		if statusLine.MatchString(l) {
			t := strings.TrimSpace(l)
			in = t == "=== RUN   "+name || t == "=== CONT  "+name
			continue
		}
		if in && testMessage.MatchString(l) {
			said = append(said, strings.TrimSpace(l))
		}
	}
	return said
}

// failedPackage is why a test binary failed without a failed test (its
// TestMain could not start the lab, say): the last line before its
// "FAIL\tpackage" line that reads "who: what" (a wrapped message's first
// line, not its continuation), within that package's output.
func failedPackage(lines []string) string {
	from := 0
	for i, l := range lines {
		switch {
		case strings.HasPrefix(l, "ok  \t"):
			from = i + 1
		case strings.HasPrefix(l, "FAIL\t"):
			for j := i - 1; j >= from; j-- {
				if saysWhy.MatchString(lines[j]) {
					return strings.TrimSpace(lines[j])
				}
			}
			from = i + 1
		}
	}
	return ""
}

// lastWords is the last line the step printed itself.
func lastWords(lines []string) string {
	for i := len(lines) - 1; i >= 0; i-- {
		l := strings.TrimSpace(lines[i])
		if l == "" || makeError.MatchString(l) || goTestNoise.MatchString(l) {
			continue
		}
		return l
	}
	return ""
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
