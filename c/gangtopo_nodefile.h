/*
 * gangtopo_nodefile.h - the per-node file the SPANK plugin's remote context
 * reads (format: docs/admin.md, "The node file"; writer: spank/nodefile).
 *
 *	gangtopo-node v2
 *	node node01
 *	domain leaf leaf1
 *	members node[01-04]
 *	domain spine spine1
 *	members node[01-08]
 *	nvlink node01/nvl0 0-7
 *	nic mlx5_0 0-1
 *
 * One keyword per line, fields separated by blanks, '#' starts a comment.
 * GPU lists are local indices ("0-3,6"). "members HOSTLIST" lines (v2)
 * follow their domain line and list its nodes; several are joined. A v1
 * file (no members lines) is still read. Pure C, no Slurm headers.
 *
 * The file is read inside slurmstepd, which can regain root: the reader
 * takes nothing on trust. The node name must be a plain file name, the
 * file is opened without following a symbolic link and without blocking
 * (a FIFO there would hang the step), and refused unless, once open, it
 * is a regular file owned by root (or the daemon's own user) that neither
 * group nor others may write; at most GT_NODEFILE_MAX bytes are read.
 * Every name in it is checked for its characters (NIC names become
 * NCCL_IB_HCA, whose syntax gives , : ^ = meanings).
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
#define GT_NODEFILE_MAX (64 * 1024)
/* GT_NICS_MAX: room for every NIC name of a file, comma-separated */
#define GT_NICS_MAX (GT_MAX_NICS * GT_NAME_MAX + 1)

struct gt_domain {
	char tier[16];			/* block, leaf, spine, any */
	char name[GT_NAME_MAX];
	int members;			/* offset of its host list in the file's
					 * pool (gt_domain_members), -1: none */
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
	size_t pool_used;
	char pool[GT_NODEFILE_MAX];			/* members host lists, NUL-terminated */
};

/*
 * gt_nodefile_parse reads text (NUL-terminated). On error it returns -1
 * with "line N: what" in err.
 */
int gt_nodefile_parse(const char *text, struct gt_nodefile *nf, char *err, size_t errlen);

/*
 * gt_nodefile_read opens path safely (see above), checks it and parses
 * it; errors name the file.
 */
int gt_nodefile_read(const char *path, struct gt_nodefile *nf, char *err, size_t errlen);

/*
 * gt_nodefile_load reads node's file: <dir>/<node>, where "%n" in dir
 * stands for the node name (node-local directories of several slurmd on
 * one host, as SlurmdSpoolDir's %n). The name must be a plain file name
 * (letters, digits, . _ -, not starting with .) and the file's node line
 * must name it.
 */
int gt_nodefile_load(const char *dir, const char *node, struct gt_nodefile *nf, char *err, size_t errlen);

/* gt_domain_members returns domain i's host list, or NULL (v1 file). */
const char *gt_domain_members(const struct gt_nodefile *nf, int i);

/* gt_gpu_mask reads a GPU index list ("0-3,6"); -1 if malformed. */
int gt_gpu_mask(const char *list, uint64_t *mask);

/*
 * gt_nics_for writes, comma-separated, the NICs nearest to any GPU in mask
 * (all NICs when mask is 0 or no NIC names a GPU), in file order. Returns
 * the number written, or -1 (and buf "") when they do not fit in len:
 * never a cut list. GT_NICS_MAX always fits.
 */
int gt_nics_for(const struct gt_nodefile *nf, uint64_t mask, char *buf, size_t len);

#endif
