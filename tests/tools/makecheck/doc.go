// Package makecheck tests the Makefile's own promises: what `make test`
// does where part of it cannot run.
package makecheck
