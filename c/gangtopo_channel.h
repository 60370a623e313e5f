/*
 * gangtopo_channel.h - the shim's side of the pipe protocol of
 * gangtopo_abi.h: make the pipes, pack a job, send it, wait for its answer
 * (discarding late answers to earlier requests), drain at the end. No
 * Slurm, no Go: c/tests drive it against a fake server.
 */
#ifndef GANGTOPO_CHANNEL_H
#define GANGTOPO_CHANNEL_H

#include <stdint.h>

#include "gangtopo_abi.h"

/* What gt_channel_call returns besides GT_OK. */
enum gt_channel_err {
	GT_CH_UNAVAILABLE = -2,	/* the request could not be sent, or the server is gone */
	GT_CH_TIMEOUT = -3,	/* no answer in time */
	GT_CH_OPEN = -4,	/* not asked: the breaker is open (see below) */
};

/*
 * The breaker. Each call without an answer costs slurmctld the whole wait
 * (deadline + margin) while it holds its locks; a stalled Go side would
 * cost it to every submission. After GT_BREAKER_MISSES timeouts in a row
 * the channel stops asking for GT_BREAKER_OPEN_MS: calls return GT_CH_OPEN
 * at once (the shim then decides alone, as on a timeout). The first call
 * after that asks again (one wait); an answer closes the breaker, another
 * timeout opens it for another period. breaker_hook hears each change of
 * episode: opened (the first time in a row) and closed again.
 */
#define GT_BREAKER_MISSES 3
#define GT_BREAKER_OPEN_MS 10000

struct gt_channel {
	int req_w;		/* request pipe, write end; -1: closed */
	int resp_r;		/* response pipe, read end */
	uint64_t seq;		/* the last request's number */
	uint64_t late;		/* late answers discarded so far */
	/* late_hook gets each late answer before it is released (logging). */
	void (*late_hook)(const struct gt_result *res, uint64_t seq);
	/* the breaker: set by gt_channel_open to GT_BREAKER_*; 0 misses: never opens */
	unsigned breaker_misses, breaker_open_ms;
	unsigned misses;	/* timeouts in a row */
	int64_t open_until;	/* monotonic ms; 0: closed */
	uint64_t skipped;	/* calls not asked since the breaker opened */
	void (*breaker_hook)(int open, unsigned misses, uint64_t skipped);
};

/*
 * gt_channel_open makes both pipes (O_CLOEXEC, O_NONBLOCK on every end) and
 * returns the server's ends in *req_r and *resp_w. 0 or -1 (errno set).
 */
int gt_channel_open(struct gt_channel *ch, int *req_r, int *resp_w);

/* gt_channel_is_open says whether requests can be sent. */
int gt_channel_is_open(const struct gt_channel *ch);

/*
 * gt_job_pack copies a job and every string it points to into one
 * malloc()ed block (struct gt_job first, its strings after), or NULL.
 */
struct gt_job *gt_job_pack(const struct gt_job *job);

/*
 * gt_channel_call sends job (a gt_job_pack block, which it always takes
 * over: freed here when it could not be sent, the server's otherwise) and
 * waits up to timeout_ms for the answer to it. GT_OK with *res set (release
 * it with gt_result_release), GT_CH_UNAVAILABLE, GT_CH_TIMEOUT, or
 * GT_CH_OPEN without sending anything while the breaker is open.
 */
int gt_channel_call(struct gt_channel *ch, struct gt_job *job, int timeout_ms, struct gt_result **res);

/*
 * gt_channel_ask is gt_channel_call outside the breaker, for requests that
 * are not submissions (job_modify): not sent while the breaker is open
 * (GT_CH_OPEN at once: a stalled Go side must not cost slurmctld the wait
 * for an update either), and its outcome neither counts as a miss nor
 * closes the breaker. Why: a user can send updates at will, and Slurm
 * 22.05 asks job_modify about anyone's update of anyone's job; counted,
 * they could open the breaker for every submission (or, answered while
 * submissions are not, keep it from opening).
 */
int gt_channel_ask(struct gt_channel *ch, struct gt_job *job, int timeout_ms, struct gt_result **res);

/*
 * gt_channel_close reads what is left in the response pipe (after the
 * server closed its ends: to the end), releases it and closes the shim's
 * ends.
 */
void gt_channel_close(struct gt_channel *ch);

#endif
