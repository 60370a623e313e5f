/*
 * check.h - the assertion of the C tests (make c-test): CHECK prints the
 * failure with its place and counts it; each test program exits 1 when
 * failures is not 0 at the end.
 */
#ifndef GANGTOPO_TEST_CHECK_H
#define GANGTOPO_TEST_CHECK_H

#include <stdio.h>

static int failures;

#define CHECK(cond, ...)                                                     \
	do {                                                                 \
		if (!(cond)) {                                               \
			fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
			fprintf(stderr, __VA_ARGS__);                        \
			fputc('\n', stderr);                                 \
			failures++;                                          \
		}                                                            \
	} while (0)

#endif
