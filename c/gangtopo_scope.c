/*
 * gangtopo_scope.c - the shim's copy of Gate.scope (see gangtopo_scope.h).
 */
#include <string.h>

#include "gangtopo_scope.h"

static int given(const char *s) { return s && *s; }

/*
 * next_name returns the next name of the comma-separated list at *s
 * without the blanks around it (length in *n), and moves *s past it; NULL
 * at the end. Empty names are skipped, as request.SplitList skips them.
 */
static const char *next_name(const char **s, size_t *n)
{
	while (*s && **s) {
		const char *w = *s;
		size_t len = strcspn(w, ",");

		*s = w[len] == ',' ? w + len + 1 : w + len;
		while (len && (*w == ' ' || *w == '\t'))
			w++, len--;
		while (len && (w[len - 1] == ' ' || w[len - 1] == '\t'))
			len--;
		if (len) {
			*n = len;
			return w;
		}
	}
	return NULL;
}

/* listed says whether the comma-separated list has the name w (wl bytes). */
static int listed(const char *list, const char *w, size_t wl)
{
	const char *g;
	size_t gl;

	while ((g = next_name(&list, &gl)))
		if (gl == wl && !strncmp(g, w, wl))
			return 1;
	return 0;
}

/*
 * asks_gpus says whether a TRES list ("gres:gpu:h100:8,gres:nic:1") has a
 * GPU entry with a count other than 0, as jobsubmit.parseGPUTres reads it:
 * "gpu", "gpu:TYPE", "gpu:N", "gpu:TYPE:N" or "gpu=N", with or without
 * "gres:" or "gres/" in front; or a GPU share, "shard[:N]" (jobsubmit's
 * shardCount).
 */
static int asks_gpus(const char *tres)
{
	const char *item;
	size_t len;

	while ((item = next_name(&tres, &len))) {
		const char *last, *c;
		int zero = 1;

		if (len >= 5 && !strncmp(item, "gres:", 5))
			item += 5, len -= 5;
		else if (len >= 5 && !strncmp(item, "gres/", 5))
			item += 5, len -= 5;
		if (len >= 5 && !strncmp(item, "shard", 5) && (len == 5 || item[5] == ':' || item[5] == '=')) {
			const char *c;
			int zero = 1, digits = len > 6;

			for (c = item + 6; c < item + len; c++) {
				digits &= *c >= '0' && *c <= '9';
				zero &= *c == '0';
			}
			if (len == 5 || (digits && !zero))
				return 1;	/* shardCount: "shard", or a count of at least 1 */
			continue;
		}
		if (len < 3 || strncmp(item, "gpu", 3) || (len > 3 && item[3] != ':' && item[3] != '='))
			continue;
		for (last = item + len; last > item + 3 && last[-1] != ':' && last[-1] != '='; last--)
			;
		for (c = last; c < item + len; c++)
			zero &= *c == '0';
		if (last == item + 3 || last == item + len || !zero)
			return 1;	/* no count (1), a type, or a count other than 0 */
	}
	return 0;
}

int gt_in_scope(const struct gt_job *j, const struct gt_params *p)
{
	const char *parts = p->partitions, *w, *part = given(j->partition) ? j->partition : j->default_partition;
	size_t wl;
	int found = 1;

	if (!asks_gpus(j->tres_per_job) && !asks_gpus(j->tres_per_node) && !asks_gpus(j->tres_per_socket) &&
	    !asks_gpus(j->tres_per_task))
		return 0;
	if (given(parts)) {
		found = 0;
		while (!found && (w = next_name(&parts, &wl)))
			found = listed(part, w, wl);
	}
	return found && (given(j->gang_topology) || p->jobs_gpu);
}
