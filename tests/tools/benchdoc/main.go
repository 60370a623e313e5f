package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gangtopo/gangtopo/tests/tools/docsection"
)

type targets map[string]float64 // benchmark name -> limit in ns/op

func (t targets) String() string { return fmt.Sprint(map[string]float64(t)) }

func (t targets) Set(s string) error {
	name, limit, ok := strings.Cut(s, "=")
	if !ok {
		return fmt.Errorf("want Name=duration, got %q", s)
	}
	d, err := time.ParseDuration(limit)
	if err != nil {
		return fmt.Errorf("target %s: %v", name, err)
	}
	t[name] = float64(d.Nanoseconds())
	return nil
}

func main() {
	file := flag.String("file", "docs/benchmarks.md", "the document to update")
	section := flag.String("section", "", "section name (marker) to replace")
	title := flag.String("title", "", "heading of the section")
	command := flag.String("cmd", "", "the command that produced the input, quoted in the section")
	notes := flag.String("notes", "", "a paragraph to print under the table")
	raw := flag.Bool("raw", false, "standard input is the section's Markdown body, written as it is (a script's tables)")
	tg := targets{}
	flag.Var(tg, "target", "Name=duration: limit on the median ns/op (repeatable)")
	flag.Parse()
	if *section == "" || *title == "" && !*raw {
		fmt.Fprintln(os.Stderr, "benchdoc: -section and -title are required (-section alone with -raw)")
		os.Exit(2)
	}
	if *raw {
		body, err := io.ReadAll(os.Stdin)
		if err == nil && len(body) == 0 {
			err = fmt.Errorf("nothing on standard input")
		}
		if err == nil {
			err = docsection.Replace(*file, *section, string(body))
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "benchdoc: %v\n", err)
			os.Exit(1)
		}
		return
	}
	results, env, err := parse(os.Stdin)
	if err != nil || len(results) == 0 {
		fmt.Fprintf(os.Stderr, "benchdoc: no benchmark results on stdin (%v)\n", err)
		os.Exit(1)
	}
	body := render(*title, *command, *notes, env, results, tg)
	if err := docsection.Replace(*file, *section, body); err != nil {
		fmt.Fprintf(os.Stderr, "benchdoc: %v\n", err)
		os.Exit(1)
	}
	fmt.Print(body)
	for name, limit := range tg {
		if r, ok := results[name]; ok && median(r.nsPerOp) > limit {
			fmt.Fprintf(os.Stderr, "benchdoc: %s median %.0f ns/op is over the target %.0f\n", name, median(r.nsPerOp), limit)
		}
	}
}

type result struct {
	nsPerOp, bytes, allocs []float64
	metrics                map[string][]float64
	order                  int
}

// parse reads lines like
// "BenchmarkPlace1GPU-2  1000  143252 ns/op  14048 B/op  59 allocs/op".
func parse(r io.Reader) (map[string]*result, []string, error) {
	out := map[string]*result{}
	var env []string
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "cpu:") || strings.HasPrefix(line, "goos:") || strings.HasPrefix(line, "goarch:") {
			env = appendOnce(env, strings.TrimSpace(line))
		}
		f := strings.Fields(line)
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		name := f[0]
		if i := strings.LastIndexByte(name, '-'); i > 0 {
			name = name[:i]
		}
		r, ok := out[name]
		if !ok {
			r = &result{metrics: map[string][]float64{}, order: len(out)}
			out[name] = r
		}
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				continue
			}
			switch f[i+1] {
			case "ns/op":
				r.nsPerOp = append(r.nsPerOp, v)
			case "B/op":
				r.bytes = append(r.bytes, v)
			case "allocs/op":
				r.allocs = append(r.allocs, v)
			default:
				r.metrics[f[i+1]] = append(r.metrics[f[i+1]], v)
			}
		}
	}
	return out, env, sc.Err()
}

func appendOnce(xs []string, x string) []string {
	for _, v := range xs {
		if v == x {
			return xs
		}
	}
	return append(xs, x)
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func human(ns float64) string {
	switch {
	case ns >= 1e9:
		return fmt.Sprintf("%.2f s", ns/1e9)
	case ns >= 1e6:
		return fmt.Sprintf("%.2f ms", ns/1e6)
	case ns >= 1e3:
		return fmt.Sprintf("%.1f µs", ns/1e3)
	}
	return fmt.Sprintf("%.0f ns", ns)
}

func render(title, command, notes string, env []string, results map[string]*result, tg targets) string {
	names := make([]string, 0, len(results))
	for n := range results {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool { return results[names[i]].order < results[names[j]].order })
	var b strings.Builder
	fmt.Fprintf(&b, "## %s\n\n", title)
	fmt.Fprintf(&b, "Measured %s on %s, %s, GOMAXPROCS %d", time.Now().UTC().Format("2006-01-02"), strings.Join(env, ", "), runtime.Version(), runtime.GOMAXPROCS(0))
	if command != "" {
		fmt.Fprintf(&b, ", with\n\n    %s\n\n", command)
	} else {
		b.WriteString(".\n\n")
	}
	b.WriteString("| benchmark | runs | median time/op | B/op | allocs/op | other | target |\n|---|---|---|---|---|---|---|\n")
	for _, n := range names {
		r := results[n]
		var other []string
		keys := make([]string, 0, len(r.metrics))
		for k := range r.metrics {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			other = append(other, fmt.Sprintf("%.4g %s", median(r.metrics[k]), k))
		}
		target := ""
		if limit, ok := tg[n]; ok {
			verdict := "met"
			if median(r.nsPerOp) > limit {
				verdict = "MISSED"
			}
			target = fmt.Sprintf("< %s: %s", human(limit), verdict)
		}
		fmt.Fprintf(&b, "| %s | %d | %s | %.0f | %.0f | %s | %s |\n", strings.TrimPrefix(n, "Benchmark"), len(r.nsPerOp),
			human(median(r.nsPerOp)), median(r.bytes), median(r.allocs), strings.Join(other, ", "), target)
	}
	if notes != "" {
		fmt.Fprintf(&b, "\n%s\n", notes)
	}
	return b.String()
}
