/*
 * gangtopo_option.c - parse and print --gang-topology values.
 *
 * Grammar (the same as request.ParseOption on the Go side, messages
 * included): TIER [":" MODE] {"," "slice=" S}. Words are case-insensitive
 * and printed lower case, blanks around words are ignored, S is a decimal
 * GPU count 1..GT_SLICE_MAX given at most once. Anything else is refused
 * with a message that says what is allowed: a typo must fail sbatch at
 * once, not pend a job forever. The part named in a message is quoted as
 * Go's %q does (gt_quote_n): the value is the user's, and the same message
 * from the Go side lands in slurmctld's log.
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "gangtopo_option.h"
#include "gangtopo_quote.h"

/* QUOTED: room for a part of a value quoted by gt_quote (every byte \xNN at worst) */
#define QUOTED (4 * GT_OPTION_MAX + 8)

static const char *const tiers[] = { "nvlink", "node", "block", "leaf", "spine", "any", "cluster", NULL };

/* trim returns s without leading blanks and sets *n to its length without trailing ones. */
static const char *trim(const char *s, size_t *n)
{
	while (*n && isspace((unsigned char)*s)) {
		s++;
		(*n)--;
	}
	while (*n && isspace((unsigned char)s[*n - 1]))
		(*n)--;
	return s;
}

static int parse_tier(const char *s, size_t n, struct gt_option *out, char *err, size_t errlen)
{
	const char *w = trim(s, &n);

	for (int i = 0; tiers[i]; i++) {
		if (strlen(tiers[i]) == n && strncasecmp(tiers[i], w, n) == 0) {
			/* "cluster" is a synonym of "any", as in topology.ParseTier */
			snprintf(out->tier, sizeof(out->tier), "%s", strcmp(tiers[i], "cluster") ? tiers[i] : "any");
			return 0;
		}
	}
	{
		/* lower case, as topology.ParseTier reports it (n <= GT_OPTION_MAX) */
		char low[GT_OPTION_MAX + 1], q[QUOTED];

		for (size_t i = 0; i < n && i < GT_OPTION_MAX; i++)
			low[i] = (char)tolower((unsigned char)w[i]);
		gt_quote_n(low, n < GT_OPTION_MAX ? n : GT_OPTION_MAX, q, sizeof(q));
		snprintf(err, errlen, "--gang-topology: unknown tier %s (want one of %s)", q, GT_TIERS);
	}
	return -1;
}

static int parse_mode(const char *s, size_t n, struct gt_option *out, char *err, size_t errlen)
{
	const char *w = trim(s, &n);
	char q[QUOTED];

	if (n == 8 && strncasecmp(w, "required", n) == 0)
		return 0;
	if (n == 9 && strncasecmp(w, "preferred", n) == 0) {
		snprintf(out->mode, sizeof(out->mode), "preferred");
		return 0;
	}
	snprintf(err, errlen, "--gang-topology: unknown mode %s (want required or preferred)", gt_quote_n(w, n, q, sizeof(q)));
	return -1;
}

static int parse_setting(const char *s, size_t n, struct gt_option *out, char *err, size_t errlen)
{
	const char *w = trim(s, &n), *eq = memchr(w, '=', n), *v;
	size_t kn, vn;
	unsigned long val = 0;
	char q[QUOTED];

	kn = eq ? (size_t)(eq - w) : n;
	trim(w, &kn);
	if (!eq || kn != 5 || strncmp(w, "slice", 5) != 0) {
		snprintf(err, errlen, "--gang-topology: unknown setting %s (the only setting is slice=S)",
			 gt_quote_n(w, n, q, sizeof(q)));
		return -1;
	}
	if (out->slice) {
		snprintf(err, errlen, "--gang-topology: slice given twice");
		return -1;
	}
	vn = n - kn - 1;
	v = trim(eq + 1, &vn);
	for (size_t i = 0; i < vn && val <= GT_SLICE_MAX; i++)
		val = isdigit((unsigned char)v[i]) ? val * 10 + (unsigned long)(v[i] - '0') : GT_SLICE_MAX + 1UL;
	if (vn == 0 || val < 1 || val > GT_SLICE_MAX) {
		snprintf(err, errlen, "--gang-topology: slice=%s is not a GPU count (want 1..%d)",
			 gt_quote_n(eq + 1, n - (size_t)(eq + 1 - w), q, sizeof(q)), GT_SLICE_MAX);
		return -1;
	}
	out->slice = (unsigned)val;
	return 0;
}

int gt_option_parse(const char *value, struct gt_option *out, char *err, size_t errlen)
{
	size_t n = value ? strlen(value) : 0;
	const char *p = trim(value ? value : "", &n), *end = p + n, *comma, *colon;

	memset(out, 0, sizeof(*out));
	snprintf(out->mode, sizeof(out->mode), "required");
	if (n == 0) {
		snprintf(err, errlen, "--gang-topology: empty value (want TIER[:MODE][,slice=S], e.g. leaf or nvlink:preferred,slice=8)");
		return -1;
	}
	if (n > GT_OPTION_MAX) {
		snprintf(err, errlen, "--gang-topology: value longer than %d characters", GT_OPTION_MAX);
		return -1;
	}
	comma = memchr(p, ',', n);
	if (!comma)
		comma = end;
	colon = memchr(p, ':', (size_t)(comma - p));
	if (parse_tier(p, (size_t)((colon ? colon : comma) - p), out, err, errlen) < 0)
		return -1;
	if (colon && parse_mode(colon + 1, (size_t)(comma - colon - 1), out, err, errlen) < 0)
		return -1;
	while (comma < end) {
		const char *next = memchr(comma + 1, ',', (size_t)(end - comma - 1));

		if (!next)
			next = end;
		if (parse_setting(comma + 1, (size_t)(next - comma - 1), out, err, errlen) < 0)
			return -1;
		comma = next;
	}
	return 0;
}

void gt_option_format(const struct gt_option *opt, char *buf, size_t len)
{
	if (opt->slice)
		snprintf(buf, len, "%s:%s,slice=%u", opt->tier, opt->mode, opt->slice);
	else
		snprintf(buf, len, "%s:%s", opt->tier, opt->mode);
}
