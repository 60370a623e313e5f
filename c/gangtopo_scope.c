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

int gt_in_scope(const struct gt_job *j, const struct gt_params *p)
{
	const char *parts = p->partitions, *w;
	size_t wl;
	int found = 1;

	if (!given(j->tres_per_job) && !given(j->tres_per_node) && !given(j->tres_per_socket) &&
	    !given(j->tres_per_task))
		return 0;
	if (given(parts)) {
		found = 0;
		while (!found && (w = next_name(&parts, &wl)))
			found = listed(j->partition, w, wl);
	}
	return found && (given(j->gang_topology) || p->jobs_gpu);
}
