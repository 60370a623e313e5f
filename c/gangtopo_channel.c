/*
 * gangtopo_channel.c - the shim's side of the pipe protocol (see
 * gangtopo_abi.h for the protocol and why it replaced a call into Go per
 * job).
 *
 * Ownership is the point of this file: a job block is the server's from
 * the moment its message is in the pipe, so nothing here frees or reads it
 * after a successful write, whatever happens next; every answer read is
 * either returned to the caller or released here.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gangtopo_channel.h"

int gt_channel_open(struct gt_channel *ch, int *req_r, int *resp_w)
{
	int req[2], resp[2];

	memset(ch, 0, sizeof(*ch));
	ch->req_w = ch->resp_r = -1;
	ch->breaker_misses = GT_BREAKER_MISSES;
	ch->breaker_open_ms = GT_BREAKER_OPEN_MS;
	if (pipe2(req, O_CLOEXEC | O_NONBLOCK) < 0)
		return -1;
	if (pipe2(resp, O_CLOEXEC | O_NONBLOCK) < 0) {
		int e = errno;

		close(req[0]);
		close(req[1]);
		errno = e;
		return -1;
	}
	ch->req_w = req[1];
	ch->resp_r = resp[0];
	*req_r = req[0];
	*resp_w = resp[1];
	return 0;
}

int gt_channel_is_open(const struct gt_channel *ch)
{
	return ch->req_w >= 0;
}

/* job_strings lists the string fields of a job, for packing. */
static void job_strings(struct gt_job *j, const char **out[], size_t *n)
{
	const char **f[] = { &j->name, &j->partition, &j->default_partition, &j->gang_topology, &j->tres_per_job,
			     &j->tres_per_node, &j->tres_per_socket, &j->tres_per_task, &j->cpus_per_tres,
			     &j->mem_per_tres, &j->features, &j->prefer, &j->req_nodes, &j->exc_nodes, &j->comment,
			     &j->admin_comment, &j->array_inx, &j->job_id };

	*n = sizeof(f) / sizeof(f[0]);
	memcpy(out, f, sizeof(f));
}

struct gt_job *gt_job_pack(const struct gt_job *job)
{
	const char **fields[24];
	struct gt_job tmp = *job, *out;
	size_t n, size = sizeof(*out);
	char *p;

	job_strings(&tmp, fields, &n);
	for (size_t i = 0; i < n; i++)
		if (*fields[i])
			size += strlen(*fields[i]) + 1;
	out = malloc(size);
	if (!out)
		return NULL;
	*out = tmp;
	p = (char *)(out + 1);
	job_strings(out, fields, &n);
	for (size_t i = 0; i < n; i++) {
		size_t len;

		if (!*fields[i])
			continue;
		len = strlen(*fields[i]) + 1;
		memcpy(p, *fields[i], len);
		*fields[i] = p;
		p += len;
	}
	return out;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * read_answer reads one message: 1 with *m set, 0 when none is there yet,
 * -1 when the server closed its end or the pipe failed.
 */
static int read_answer(struct gt_channel *ch, struct gt_msg *m)
{
	ssize_t n;

	do
		n = read(ch->resp_r, m, sizeof(*m));
	while (n < 0 && errno == EINTR);
	if (n == (ssize_t)sizeof(*m))
		return 1;
	if (n < 0 && errno == EAGAIN)
		return 0;
	return -1;	/* EOF, an error, or a torn message (writes are atomic: never) */
}

static void release_late(struct gt_channel *ch, struct gt_msg *m)
{
	ch->late++;
	if (ch->late_hook && m->ptr)
		ch->late_hook(m->ptr, m->seq);
	gt_result_release(m->ptr);
}

/* breaker_note counts a call's outcome (GT_OK or GT_CH_TIMEOUT) towards the breaker. */
static int breaker_note(struct gt_channel *ch, int rc)
{
	if (rc == GT_OK) {
		if (ch->breaker_misses && ch->misses >= ch->breaker_misses && ch->breaker_hook)
			ch->breaker_hook(0, ch->misses, ch->skipped);
		ch->misses = 0;
		ch->open_until = 0;
		ch->skipped = 0;
	} else if (rc == GT_CH_TIMEOUT && ch->breaker_misses && ++ch->misses >= ch->breaker_misses) {
		ch->open_until = now_ms() + ch->breaker_open_ms;
		if (ch->misses == ch->breaker_misses && ch->breaker_hook)
			ch->breaker_hook(1, ch->misses, 0);
	}
	return rc;
}

/* call sends job and waits for its answer (gt_channel_call without the breaker). */
static int call(struct gt_channel *ch, struct gt_job *job, int timeout_ms, struct gt_result **res)
{
	struct gt_msg m = { .seq = ch->seq + 1, .ptr = job };
	int64_t end = now_ms() + timeout_ms;
	ssize_t n;

	do
		n = write(ch->req_w, &m, sizeof(m));
	while (n < 0 && errno == EINTR);
	if (n != (ssize_t)sizeof(m)) {
		/* EAGAIN: the server is not reading; a pipe write this small is all or nothing */
		free(job);
		return GT_CH_UNAVAILABLE;
	}
	ch->seq = m.seq;	/* job is the server's now */
	for (;;) {
		struct pollfd pfd = { .fd = ch->resp_r, .events = POLLIN };
		int64_t left = end - now_ms();
		int rc;

		rc = read_answer(ch, &m);
		if (rc < 0)
			return GT_CH_UNAVAILABLE;
		if (rc > 0 && m.seq == ch->seq) {
			*res = m.ptr;
			return GT_OK;
		}
		if (rc > 0) {
			release_late(ch, &m);
			continue;
		}
		if (left <= 0)
			return GT_CH_TIMEOUT;
		if (poll(&pfd, 1, (int)left) < 0 && errno != EINTR)
			return GT_CH_UNAVAILABLE;
	}
}

/* guarded is a call unless the channel is closed or the breaker open. */
static int guarded(struct gt_channel *ch, struct gt_job *job, int timeout_ms, struct gt_result **res)
{
	*res = NULL;
	if (!gt_channel_is_open(ch)) {
		free(job);
		return GT_CH_UNAVAILABLE;
	}
	if (ch->open_until && now_ms() < ch->open_until) {
		free(job);
		return GT_CH_OPEN;
	}
	return call(ch, job, timeout_ms, res);
}

int gt_channel_call(struct gt_channel *ch, struct gt_job *job, int timeout_ms, struct gt_result **res)
{
	int rc = guarded(ch, job, timeout_ms, res);

	if (rc == GT_CH_OPEN)
		ch->skipped++;
	return breaker_note(ch, rc);
}

int gt_channel_ask(struct gt_channel *ch, struct gt_job *job, int timeout_ms, struct gt_result **res)
{
	return guarded(ch, job, timeout_ms, res);
}

void gt_channel_close(struct gt_channel *ch)
{
	struct gt_msg m;

	if (ch->resp_r >= 0)
		while (read_answer(ch, &m) > 0)
			release_late(ch, &m);
	if (ch->req_w >= 0)
		close(ch->req_w);
	if (ch->resp_r >= 0)
		close(ch->resp_r);
	ch->req_w = ch->resp_r = -1;
}
