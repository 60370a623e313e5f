// Package docs holds every command line of README.md and docs/*.md and
// says which test runs it, so that the documentation cannot drift from
// the commands' flags, defaults and output again:
//
//   - Extract reads a Markdown file's command lines: the lines of its ```sh
//     blocks (continuations joined, comments dropped) and, in blocks
//     without a language, the lines after a "$ " prompt, with the output
//     the document shows under them.
//   - Registry lists each documented command with how it is run: here, by
//     TestDocumentedCommands (gangtopo and make lines that need no
//     cluster, in the repository; output the document shows is compared);
//     by an end-to-end test against the lab (Slurm's commands, gangtopo
//     on a live cluster: the e2e test named runs exactly these lines); or,
//     for the few that are a test run or rewrite the benchmarks
//     themselves (make test, make bench), why no test runs them.
//   - TestEveryCommandIsCovered fails for a documented command the
//     registry lacks, and for a registry line no document holds.
//
// docs/benchmarks.md is left out: its command lines are written there by
// the make bench targets that ran them, beside the figures they printed.
package docs
