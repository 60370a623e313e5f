// Package testlog is for tests: Buffer, a log sink that a daemon's
// goroutines and the test reading it may use at once.
package testlog
