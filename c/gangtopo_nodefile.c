/*
 * gangtopo_nodefile.c - parse the per-node file (see gangtopo_nodefile.h).
 *
 * The remote context runs inside slurmstepd, so this parser is defensive:
 * fixed-size buffers, no allocation, every malformed line an error naming
 * it. Unknown keywords are errors too: a file from a newer writer must say
 * "gangtopo-node v2" and is then refused as a whole.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gangtopo_nodefile.h"

#define GT_NODEFILE_MAX (64 * 1024)

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

static int copy_name(char *dst, const char *src)
{
	if (!src || strlen(src) >= GT_NAME_MAX)
		return -1;
	strcpy(dst, src);
	return 0;
}

static int add_set(struct gt_set *sets, int *n, int cap, const char *name, const char *gpus)
{
	if (*n >= cap || !gpus || copy_name(sets[*n].name, name) < 0 || gt_gpu_mask(gpus, &sets[*n].gpus) < 0)
		return -1;
	(*n)++;
	return 0;
}

/* parse_line handles one line split into up to 4 words. */
static int parse_line(struct gt_nodefile *nf, char **w, int nw)
{
	if (!strcmp(w[0], "node") && nw == 2)
		return copy_name(nf->node, w[1]);
	if (!strcmp(w[0], "domain") && nw == 3) {
		struct gt_domain *d = &nf->domains[nf->ndomains];

		if (nf->ndomains >= GT_MAX_DOMAINS || strlen(w[1]) >= sizeof(d->tier))
			return -1;
		strcpy(d->tier, w[1]);
		if (copy_name(d->name, w[2]) < 0)
			return -1;
		nf->ndomains++;
		return 0;
	}
	if (!strcmp(w[0], "nvlink") && nw == 3)
		return add_set(nf->islands, &nf->nislands, GT_MAX_ISLANDS, w[1], w[2]);
	if (!strcmp(w[0], "nic") && (nw == 2 || nw == 3))
		return add_set(nf->nics, &nf->nnics, GT_MAX_NICS, w[1], nw == 3 ? w[2] : "");
	return -1;
}

int gt_nodefile_parse(const char *text, struct gt_nodefile *nf, char *err, size_t errlen)
{
	char line[512];
	int lineno = 0, header = 0;
	const char *p = text;

	memset(nf, 0, sizeof(*nf));
	while (*p) {
		size_t n = strcspn(p, "\n");
		char *w[4], *save = NULL, *tok;
		int nw = 0;

		lineno++;
		if (n >= sizeof(line)) {
			snprintf(err, errlen, "line %d: longer than %zu bytes", lineno, sizeof(line) - 1);
			return -1;
		}
		memcpy(line, p, n);
		line[n] = '\0';
		p += n + (p[n] == '\n');
		if (strchr(line, '#'))
			*strchr(line, '#') = '\0';
		for (tok = strtok_r(line, " \t\r", &save); tok; tok = strtok_r(NULL, " \t\r", &save)) {
			if (nw == 4) {
				snprintf(err, errlen, "line %d: too many fields", lineno);
				return -1;
			}
			w[nw++] = tok;
		}
		if (nw == 0)
			continue;
		if (!header) {
			if (nw != 2 || strcmp(w[0], "gangtopo-node") || strcmp(w[1], "v1")) {
				snprintf(err, errlen, "line %d: want \"gangtopo-node v1\" first", lineno);
				return -1;
			}
			header = 1;
			continue;
		}
		if (parse_line(nf, w, nw) < 0) {
			snprintf(err, errlen, "line %d: bad \"%s\" line (want node NAME | domain TIER NAME | nvlink NAME GPUS | nic NAME [GPUS])", lineno, w[0]);
			return -1;
		}
	}
	if (!header || !nf->node[0]) {
		snprintf(err, errlen, "%s", header ? "no \"node\" line" : "empty file");
		return -1;
	}
	return 0;
}

int gt_nodefile_read(const char *path, struct gt_nodefile *nf, char *err, size_t errlen)
{
	static char buf[GT_NODEFILE_MAX + 1];
	char why[160];
	size_t n;
	FILE *f = fopen(path, "re");

	if (!f) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	n = fread(buf, 1, GT_NODEFILE_MAX + 1, f);
	fclose(f);
	if (n > GT_NODEFILE_MAX) {
		snprintf(err, errlen, "%s: larger than %d bytes", path, GT_NODEFILE_MAX);
		return -1;
	}
	buf[n] = '\0';
	if (gt_nodefile_parse(buf, nf, why, sizeof(why)) < 0) {
		snprintf(err, errlen, "%s: %s", path, why);
		return -1;
	}
	return 0;
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
		if (w < 0 || (size_t)w >= len - off)
			break;
		off += (size_t)w;
		n++;
	}
	return n;
}
