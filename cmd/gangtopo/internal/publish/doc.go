// Package publish writes the files gangtopo hands to other processes (the
// occupancy snapshot, node maps) so that a reader never sees a half-written
// file and nobody but the writer could have put it there.
//
// WriteFile's steps, each for a reason:
//
//  1. CheckDir: the directory must belong to us or root and be writable by
//     nobody else (its ancestors too, unless sticky like /tmp): otherwise
//     another user could replace the file between our write and the
//     plugin's read. Options.AllowInsecureDir skips this, for tests and
//     sites that accept the risk.
//  2. Write a temporary file in the same directory (rename is atomic only
//     within one file system), with the final mode, and fsync it: after a
//     crash the rename must not point at unwritten blocks.
//  3. Rename it over the target: readers see the old file or the new one.
//  4. Fsync the directory, so the rename itself survives a crash.
//
// A crash before step 3 leaves the old file intact and a temporary file
// behind; CleanTemps removes those.
package publish
