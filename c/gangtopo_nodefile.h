/*
 * gangtopo_nodefile.h - the per-node file the SPANK plugin's remote context
 * reads (format: docs/admin.md, "The node file"; writer: spank/nodefile).
 *
 *	gangtopo-node v1
 *	node node01
 *	domain spine spine1
 *	domain leaf leaf1
 *	nvlink node01/nvl0 0-7
 *	nic mlx5_0 0-1
 *
 * One keyword per line, fields separated by blanks, '#' starts a comment.
 * GPU lists are local indices ("0-3,6"). Pure C, no Slurm headers.
 */
#ifndef GANGTOPO_NODEFILE_H
#define GANGTOPO_NODEFILE_H

#include <stddef.h>
#include <stdint.h>

#define GT_NAME_MAX 64
#define GT_MAX_DOMAINS 8
#define GT_MAX_NICS 32
#define GT_MAX_ISLANDS 64
#define GT_MAX_GPUS 64

struct gt_domain {
	char tier[16];			/* block, leaf, spine */
	char name[GT_NAME_MAX];
};

struct gt_set {				/* a named set of local GPUs */
	char name[GT_NAME_MAX];
	uint64_t gpus;			/* bit i: local GPU i */
};

struct gt_nodefile {
	char node[GT_NAME_MAX];
	int ndomains;
	struct gt_domain domains[GT_MAX_DOMAINS];	/* tightest first */
	int nislands;
	struct gt_set islands[GT_MAX_ISLANDS];
	int nnics;
	struct gt_set nics[GT_MAX_NICS];		/* gpus: the GPUs it is nearest to */
};

/*
 * gt_nodefile_parse reads text (NUL-terminated). On error it returns -1
 * with "line N: what" in err.
 */
int gt_nodefile_parse(const char *text, struct gt_nodefile *nf, char *err, size_t errlen);

/* gt_nodefile_read reads and parses a file; errors name the file. */
int gt_nodefile_read(const char *path, struct gt_nodefile *nf, char *err, size_t errlen);

/* gt_gpu_mask reads a GPU index list ("0-3,6"); -1 if malformed. */
int gt_gpu_mask(const char *list, uint64_t *mask);

/*
 * gt_nics_for writes, comma-separated, the NICs nearest to any GPU in mask
 * (all NICs when mask is 0 or no NIC names a GPU), in file order. Returns
 * the number written.
 */
int gt_nics_for(const struct gt_nodefile *nf, uint64_t mask, char *buf, size_t len);

#endif
