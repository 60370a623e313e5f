/*
 * gangtopo_quote.h - a string as Go's %q prints it, for log lines.
 *
 * Job names, --gang-topology values and node file contents may hold
 * newlines or quotes; inside a daemon's log (slurmctld, slurmd) they would
 * forge lines. The Go side quotes them with %q; the C side uses this, so
 * both read alike. Pure C, no Slurm headers.
 */
#ifndef GANGTOPO_QUOTE_H
#define GANGTOPO_QUOTE_H

#include <stddef.h>

/*
 * gt_quote writes s (NULL reads as "") into out (n bytes, n >= 8) between
 * double quotes, with \a \b \f \n \r \t \v \\ \" and \xNN for the other
 * ASCII control bytes, as Go's strconv.Quote does for ASCII (bytes from
 * 0x80 are copied as they are). A string too long for out is cut at a
 * whole escape and ends in ..." instead. Returns out.
 */
char *gt_quote(const char *s, char *out, size_t n);

/* gt_quote_n is gt_quote of the len bytes at s (a NUL among them is \x00). */
char *gt_quote_n(const char *s, size_t len, char *out, size_t n);

#endif
