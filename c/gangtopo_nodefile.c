/*
 * gangtopo_nodefile.c - read the per-node file (see gangtopo_nodefile.h).
 *
 * The remote context runs inside slurmstepd, so this reader is defensive:
 * fixed-size buffers, no allocation, every malformed line an error naming
 * it (its words quoted: the error goes to slurmd's log). Unknown keywords
 * are errors too: a file from a newer writer must say "gangtopo-node v3"
 * and is then refused as a whole.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gangtopo_nodefile.h"
#include "gangtopo_quote.h"

#define GT_LINE_MAX 512

int gt_gpu_mask(const char *list, uint64_t *mask)
{
	const char *p = list;

	*mask = 0;
	while (*p) {
		char *end;
		long lo = strtol(p, &end, 10), hi;

		if (end == p || lo < 0 || lo >= GT_MAX_GPUS)
			return -1;
		hi = lo;
		if (*end == '-') {
			p = end + 1;
			hi = strtol(p, &end, 10);
			if (end == p || hi < lo || hi >= GT_MAX_GPUS)
				return -1;
		}
		for (long i = lo; i <= hi; i++)
			*mask |= (uint64_t)1 << i;
		if (*end == ',')
			end++;
		else if (*end)
			return -1;
		p = end;
	}
	return 0;
}

/*
 * name_ok: 1..GT_NAME_MAX-1 bytes of letters, digits, . _ - and extra (as
 * nodefile.File.Check on the Go side).
 */
static int name_ok(const char *s, const char *extra)
{
	size_t n = strlen(s);

	if (n == 0 || n >= GT_NAME_MAX)
		return 0;
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
		      c == '_' || c == '-' || strchr(extra, c)))
			return 0;
	}
	return 1;
}

static int copy_name(char *dst, const char *src, const char *extra)
{
	if (!src || !name_ok(src, extra))
		return -1;
	strcpy(dst, src);
	return 0;
}

static int add_set(struct gt_set *sets, int *n, int cap, const char *name, const char *extra, const char *gpus)
{
	if (*n >= cap || !gpus || copy_name(sets[*n].name, name, extra) < 0 || gt_gpu_mask(gpus, &sets[*n].gpus) < 0)
		return -1;
	(*n)++;
	return 0;
}

static int add_domain(struct gt_nodefile *nf, const char *tier, const char *name)
{
	struct gt_domain *d = &nf->domains[nf->ndomains];

	if (nf->ndomains >= GT_MAX_DOMAINS || !*tier || strlen(tier) >= sizeof(d->tier) ||
	    strspn(tier, "abcdefghijklmnopqrstuvwxyz") != strlen(tier))
		return -1;
	strcpy(d->tier, tier);
	if (copy_name(d->name, name, "+/") < 0)
		return -1;
	d->members = -1;
	nf->ndomains++;
	return 0;
}

/* brackets_ok: every '[' closed before the next one (a host list has no nesting). */
static int brackets_ok(const char *s)
{
	int open = 0;

	for (; *s; s++) {
		if (*s == '[' && !open)
			open = 1;
		else if (*s == ']' && open)
			open = 0;
		else if (*s == '[' || *s == ']')
			return 0;
	}
	return !open;
}

/* add_members appends a host list to the last domain's (joined by ','). */
static int add_members(struct gt_nodefile *nf, const char *hosts)
{
	struct gt_domain *d = &nf->domains[nf->ndomains - 1];
	size_t n = strlen(hosts), at = nf->pool_used;

	if (strspn(hosts, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-[],") != n ||
	    !brackets_ok(hosts))
		return -1;
	if (d->members >= 0)
		at--;	/* over the NUL: the lines join, as the last ones in the pool */
	if (at + n + 2 > sizeof(nf->pool))
		return -1;
	if (d->members >= 0)
		nf->pool[at++] = ',';
	else
		d->members = (int)at;
	memcpy(nf->pool + at, hosts, n + 1);
	nf->pool_used = at + n + 1;
	return 0;
}

/* parse_line handles one line split into up to 4 words; after: the line before was domain or members. */
static int parse_line(struct gt_nodefile *nf, char **w, int nw, int version, int after_domain)
{
	if (!strcmp(w[0], "node") && nw == 2)
		return copy_name(nf->node, w[1], "") < 0 || nf->node[0] == '.' ? -1 : 0;
	if (!strcmp(w[0], "domain") && nw == 3)
		return add_domain(nf, w[1], w[2]);
	if (!strcmp(w[0], "members") && nw == 2 && version >= 2 && after_domain)
		return add_members(nf, w[1]);
	if (!strcmp(w[0], "nvlink") && nw == 3)
		return add_set(nf->islands, &nf->nislands, GT_MAX_ISLANDS, w[1], "+/", w[2]);
	if (!strcmp(w[0], "nic") && (nw == 2 || nw == 3))
		return add_set(nf->nics, &nf->nnics, GT_MAX_NICS, w[1], "", nw == 3 ? w[2] : "");
	return -1;
}

/* header returns the version a header line names (1 or 2), or 0. */
static int header(char **w, int nw)
{
	if (nw != 2 || strcmp(w[0], "gangtopo-node"))
		return 0;
	return !strcmp(w[1], "v1") ? 1 : !strcmp(w[1], "v2") ? 2 : 0;
}

/* split_words cuts a line at blanks into w (up to 4 words); -1 if more. */
static int split_words(char *line, char **w)
{
	char *save = NULL, *tok;
	int nw = 0;

	if (strchr(line, '#'))
		*strchr(line, '#') = '\0';
	for (tok = strtok_r(line, " \t\r", &save); tok; tok = strtok_r(NULL, " \t\r", &save)) {
		if (nw == 4)
			return -1;
		w[nw++] = tok;
	}
	return nw;
}

int gt_nodefile_parse(const char *text, struct gt_nodefile *nf, char *err, size_t errlen)
{
	char line[GT_LINE_MAX], q[80];
	int lineno = 0, version = 0, after_domain = 0;
	const char *p = text;

	memset(nf, 0, offsetof(struct gt_nodefile, pool));
	while (*p) {
		size_t n = strcspn(p, "\n");
		char *w[4];
		int nw;

		lineno++;
		if (n >= sizeof(line)) {
			snprintf(err, errlen, "line %d: longer than %zu bytes", lineno, sizeof(line) - 1);
			return -1;
		}
		memcpy(line, p, n);
		line[n] = '\0';
		p += n + (p[n] == '\n');
		if ((nw = split_words(line, w)) < 0) {
			snprintf(err, errlen, "line %d: too many fields", lineno);
			return -1;
		}
		if (nw == 0)
			continue;
		if (!version) {
			if (!(version = header(w, nw))) {
				snprintf(err, errlen, "line %d: want \"gangtopo-node v2\" (or v1) first", lineno);
				return -1;
			}
			continue;
		}
		if (parse_line(nf, w, nw, version, after_domain) < 0) {
			snprintf(err, errlen, "line %d: bad %s line (want node NAME | domain TIER NAME | members HOSTLIST | "
				 "nvlink NAME GPUS | nic NAME [GPUS]; names of letters, digits, . _ -)",
				 lineno, gt_quote(w[0], q, sizeof(q)));
			return -1;
		}
		after_domain = !strcmp(w[0], "domain") || !strcmp(w[0], "members");
	}
	if (!version || !nf->node[0]) {
		snprintf(err, errlen, "%s", version ? "no \"node\" line" : "empty file");
		return -1;
	}
	return 0;
}

/* check_open refuses what an open file must not be; err gets why. */
static int check_open(int fd, char *err, size_t errlen)
{
	struct stat st;

	if (fstat(fd, &st) < 0) {
		snprintf(err, errlen, "fstat: %s", strerror(errno));
		return -1;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "not a regular file (mode %06o): refused", (unsigned)st.st_mode);
		return -1;
	}
	if (st.st_uid != 0 && st.st_uid != getuid()) {
		snprintf(err, errlen, "owned by uid %u, not root or the daemon's user: refused", (unsigned)st.st_uid);
		return -1;
	}
	if (st.st_mode & 022) {
		snprintf(err, errlen, "writable by group or others (mode %04o): refused; make it 0644",
			 (unsigned)(st.st_mode & 07777));
		return -1;
	}
	return 0;
}

/* read_bounded reads up to max bytes of fd into buf (max + 1 bytes): its length, or -1 if longer or failing. */
static ssize_t read_bounded(int fd, char *buf, size_t max)
{
	size_t n = 0;

	while (n <= max) {
		ssize_t r = read(fd, buf + n, max + 1 - n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -1;
		if (r == 0)
			break;
		n += (size_t)r;
	}
	if (n > max) {
		errno = EFBIG;
		return -1;
	}
	buf[n] = '\0';
	return (ssize_t)n;
}

int gt_nodefile_read(const char *path, struct gt_nodefile *nf, char *err, size_t errlen)
{
	static char buf[GT_NODEFILE_MAX + 1];
	char why[256], q[600];
	ssize_t n;
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);

	gt_quote(path, q, sizeof(q));
	if (fd < 0) {
		snprintf(err, errlen, "%s: %s", q, errno == ELOOP ? "a symbolic link: refused" : strerror(errno));
		return -1;
	}
	if (check_open(fd, why, sizeof(why)) < 0) {
		close(fd);
		snprintf(err, errlen, "%s: %s", q, why);
		return -1;
	}
	n = read_bounded(fd, buf, GT_NODEFILE_MAX);
	close(fd);
	if (n < 0 && errno == EFBIG) {
		snprintf(err, errlen, "%s: larger than %d bytes", q, GT_NODEFILE_MAX);
		return -1;
	}
	if (n < 0) {
		snprintf(err, errlen, "%s: %s", q, strerror(errno));
		return -1;
	}
	if (gt_nodefile_parse(buf, nf, why, sizeof(why)) < 0) {
		snprintf(err, errlen, "%s: %s", q, why);
		return -1;
	}
	return 0;
}

/* node_path writes dir/node, with %n in dir replaced by node. */
static int node_path(const char *dir, const char *node, char *out, size_t len)
{
	size_t w = 0;

	for (const char *p = dir; *p; p++) {
		const char *piece = p[0] == '%' && p[1] == 'n' ? node : NULL;
		size_t n = piece ? strlen(piece) : 1;

		if (w + n >= len)
			return -1;
		memcpy(out + w, piece ? piece : p, n);
		w += n;
		p += piece != NULL;
	}
	return snprintf(out + w, len - w, "/%s", node) >= (int)(len - w) ? -1 : 0;
}

int gt_nodefile_load(const char *dir, const char *node, struct gt_nodefile *nf, char *err, size_t errlen)
{
	char path[1024], q[300];

	if (!name_ok(node, "") || node[0] == '.') {
		snprintf(err, errlen, "node name %s is not a plain file name (letters, digits, . _ -): refused",
			 gt_quote(node, q, sizeof(q)));
		return -1;
	}
	if (node_path(dir, node, path, sizeof(path)) < 0) {
		snprintf(err, errlen, "node file path for %s is too long", node);
		return -1;
	}
	if (gt_nodefile_read(path, nf, err, errlen) < 0)
		return -1;
	if (strcmp(nf->node, node)) {
		snprintf(err, errlen, "%s: its node line names %s, not %s: refused", gt_quote(path, q, sizeof(q)), nf->node,
			 node);
		return -1;
	}
	return 0;
}

const char *gt_domain_members(const struct gt_nodefile *nf, int i)
{
	return i >= 0 && i < nf->ndomains && nf->domains[i].members >= 0 ? nf->pool + nf->domains[i].members : NULL;
}

int gt_nics_for(const struct gt_nodefile *nf, uint64_t mask, char *buf, size_t len)
{
	int n = 0, any = 0;
	size_t off = 0;

	for (int i = 0; i < nf->nnics; i++)
		if (nf->nics[i].gpus & mask)
			any = 1;
	buf[0] = '\0';
	for (int i = 0; i < nf->nnics; i++) {
		if (any && !(nf->nics[i].gpus & mask))
			continue;
		int w = snprintf(buf + off, len - off, "%s%s", n ? "," : "", nf->nics[i].name);
		if (w < 0 || (size_t)w >= len - off) {
			buf[0] = '\0';
			return -1;	/* never a cut list: NCCL would use the NICs left */
		}
		off += (size_t)w;
		n++;
	}
	return n;
}
