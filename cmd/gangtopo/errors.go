package main

import "fmt"

// usageError marks an error the user caused (bad flag, unreadable or
// invalid input file); it makes gangtopo exit with status 2.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

// usagef returns a usageError with a formatted message.
func usagef(format string, args ...any) error {
	return &usageError{fmt.Errorf(format, args...)}
}

// asUsage wraps err (if any) as a usage error.
func asUsage(err error) error {
	if err == nil {
		return nil
	}
	return &usageError{err}
}
