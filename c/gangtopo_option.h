/*
 * gangtopo_option.h - the --gang-topology value: TIER[:MODE][,slice=S].
 *
 * Shared by the SPANK plugin's contexts and its unit test. Pure C, no Slurm
 * headers: the same rules as request.ParseGangTopology on the Go side
 * (tests/e2e/invalid_test.go checks that both refuse the same inputs).
 */
#ifndef GANGTOPO_OPTION_H
#define GANGTOPO_OPTION_H

#include <stddef.h>

#define GT_OPTION_MAX 64	/* longest accepted value, bytes */
#define GT_SLICE_MAX 576	/* largest slice size (request.MaxSlice) */

struct gt_option {
	char tier[16];		/* nvlink, node, block, leaf, spine, any */
	char mode[16];		/* required or preferred */
	unsigned slice;		/* 0: none */
};

/* The allowed words, for messages and --help. */
#define GT_TIERS "nvlink, node, block, leaf, spine, any"
#define GT_MODES "required, preferred"

/*
 * gt_option_parse reads value into *out. On error it returns -1 and writes
 * a one-line message (without the "gangtopo: " prefix) naming the bad part
 * and what is allowed into err.
 */
int gt_option_parse(const char *value, struct gt_option *out, char *err, size_t errlen);

/* gt_option_format writes the canonical form ("leaf:required,slice=8"). */
void gt_option_format(const struct gt_option *opt, char *buf, size_t len);

#endif
