/*
 * gangtopo_quote.c - Go's %q for log lines (see gangtopo_quote.h).
 */
#include <stdio.h>
#include <string.h>

#include "gangtopo_quote.h"

/* escape writes the escape of byte c into e (at least 5 bytes). */
static void escape(unsigned char c, char *e)
{
	static const char from[] = "\a\b\f\n\r\t\v\\\"", to[] = "abfnrtv\\\"";
	const char *k = c ? strchr(from, c) : NULL;

	if (k)
		snprintf(e, 5, "\\%c", to[k - from]);
	else if (c < 0x20 || c == 0x7f)
		snprintf(e, 5, "\\x%02x", c);
	else
		e[0] = (char)c, e[1] = 0;
}

char *gt_quote(const char *s, char *out, size_t n)
{
	return gt_quote_n(s, s ? strlen(s) : 0, out, n);
}

char *gt_quote_n(const char *s, size_t len, char *out, size_t n)
{
	size_t w = 0, need = 2, limit;
	char e[5];

	for (size_t i = 0; i < len; i++) {
		escape((unsigned char)s[i], e);
		need += strlen(e);
	}
	/* all of it if it fits with its NUL, else whole escapes and ..." */
	limit = need + 1 <= n ? n - 2 : n - 5;
	out[w++] = '"';
	for (size_t i = 0; i < len; i++) {
		size_t el;

		escape((unsigned char)s[i], e);
		el = strlen(e);
		if (w + el > limit)
			break;
		memcpy(out + w, e, el);
		w += el;
	}
	if (need + 1 > n) {
		memcpy(out + w, "...", 3);
		w += 3;
	}
	out[w++] = '"';
	out[w] = 0;
	return out;
}
