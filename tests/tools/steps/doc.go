// Command steps runs the steps of `make test` (and `make e2e`) one after
// another, each a make target, and says what a newcomer needs to know
// without scrolling: which step runs, how long each took, and, when one
// fails, one line at the very end naming the step and why it failed (the
// failing tests, the panic, the compile error, the script's own message),
// with the log that holds the rest.
//
//	go run ./tests/tools/steps -title "make test" -make make -logs build/test-logs -jobs 2 \
//	    -each e2e-host,e2e-trixie,e2e-sid packages lint unit c-test e2e-check e2e-prepare e2e-host e2e-trixie e2e-sid
//
// Each step's output goes to the terminal as it comes and to
// <logs>/<step>.log. The first failed step ends the run, except the steps
// of -each (the Slurm series: one series failing says nothing about the
// next), which all run once the steps before them passed. With -jobs N the
// consecutive steps of -each run N at a time, in the order given, each
// taking the next when one ends; the output of a step that runs beside
// others goes to its log and is printed whole when it ends, and the
// summary gives the run's wall time beside the steps' total.
package main
