# replay-run.sh, sourced by the bench-*.sh scripts that write replay
# tables into docs/benchmarks.md. timed_run runs `$bin ARGS -o markdown`,
# appending to $out the command, quoted, its output, and its wall time
# ("for $timed_what, side by side", e.g. "the four policies").
timed_run() {
	printf '\n    %s\n\n' "gangtopo $* -o markdown" >>"$out"
	t0=$(date +%s.%N)
	"$bin" "$@" -o markdown >>"$out"
	t1=$(date +%s.%N)
	awk -v a="$t0" -v b="$t1" -v w="$timed_what" 'BEGIN { printf "\n(%.1f s of wall time for %s, side by side.)\n", b - a, w }' >>"$out"
}
