/*
 * test_channel.c - the shim's side of the pipe protocol (gangtopo_channel.c)
 * against a fake libgangtopo: a thread that answers each request after a
 * scripted delay. Built with AddressSanitizer by make c-test: the fake
 * server reads every job block only after the shim has given up on it, so
 * a block the shim freed too early is a use after free, and a job or
 * answer block nobody frees is a leak at exit.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../gangtopo_channel.h"
#include "check.h"


/* The fake server: answers `count` requests, request i after delay_ms[i]. */
struct fake {
	int req_r, resp_w;
	int count;
	int delay_ms[8];
	char seen[8][64];	/* job names, read after the delay */
};

static struct gt_result *make_answer(const char *log)
{
	struct gt_result *r = calloc(1, sizeof(*r) + strlen(log) + 1);

	r->action = GT_KEEP;
	r->log = strcpy((char *)(r + 1), log);
	return r;
}

static void *serve(void *arg)
{
	struct fake *f = arg;

	for (int i = 0; i < f->count; i++) {
		struct pollfd pfd = { .fd = f->req_r, .events = POLLIN };
		struct gt_msg m;
		char log[80];

		poll(&pfd, 1, 5000);
		if (read(f->req_r, &m, sizeof(m)) != sizeof(m))
			return NULL;
		usleep(f->delay_ms[i] * 1000);
		struct gt_job *j = m.ptr;	/* ours now, whatever the shim did meanwhile */
		snprintf(f->seen[i], sizeof(f->seen[i]), "%s/%s", j->name, j->partition ? j->partition : "-");
		free(j);
		snprintf(log, sizeof(log), "answer %llu", (unsigned long long)m.seq);
		m.ptr = make_answer(log);
		if (write(f->resp_w, &m, sizeof(m)) != sizeof(m))
			free(m.ptr);
	}
	return NULL;
}

static struct gt_job *job_named(const char *name)
{
	struct gt_job j = { .user_id = 7, .name = name, .partition = "gpu", .tres_per_job = "gres:gpu:8",
			    .min_nodes = 1 };

	return gt_job_pack(&j);
}

static uint64_t late_seq;
static void on_late(const struct gt_result *r, uint64_t seq)
{
	(void)r;
	late_seq = seq;
}

/*
 * An answer in time is returned; one after the timeout is the server's to
 * free the job of, and is discarded (and released) by the next call.
 */
static void test_answer_late_answer(void)
{
	struct gt_channel ch;
	struct fake f = { .count = 3, .delay_ms = { 0, 300, 0 } };
	struct gt_result *res;
	pthread_t t;

	CHECK(gt_channel_open(&ch, &f.req_r, &f.resp_w) == 0, "open: %s", strerror(errno));
	ch.late_hook = on_late;
	pthread_create(&t, NULL, serve, &f);

	CHECK(gt_channel_call(&ch, job_named("first"), 2000, &res) == GT_OK, "first call");
	CHECK(res && res->log && !strcmp(res->log, "answer 1"), "first answer: %s", res ? res->log : "none");
	gt_result_release(res);

	/* 300 ms to answer, 50 ms allowed: a timeout; the job block stays the server's */
	CHECK(gt_channel_call(&ch, job_named("slow"), 50, &res) == GT_CH_TIMEOUT && !res, "slow call");

	/* the late answer 2 arrives first, then answer 3 */
	CHECK(gt_channel_call(&ch, job_named("third"), 2000, &res) == GT_OK, "third call");
	CHECK(res && !strcmp(res->log, "answer 3"), "third answer: %s", res ? res->log : "none");
	CHECK(ch.late == 1 && late_seq == 2, "late answers: %llu, last seq %llu", (unsigned long long)ch.late,
	      (unsigned long long)late_seq);
	gt_result_release(res);

	pthread_join(t, NULL);
	CHECK(!strcmp(f.seen[1], "slow/gpu"), "server read the slow job after the timeout as %s", f.seen[1]);
	close(f.req_r);
	close(f.resp_w);
	gt_channel_close(&ch);
}

/* Answers nobody waited for are released when the channel closes. */
static void test_close_releases_answers(void)
{
	struct gt_channel ch;
	struct fake f = { .count = 2, .delay_ms = { 100, 0 } };
	struct gt_result *res;
	pthread_t t;

	CHECK(gt_channel_open(&ch, &f.req_r, &f.resp_w) == 0, "open");
	pthread_create(&t, NULL, serve, &f);
	CHECK(gt_channel_call(&ch, job_named("a"), 0, &res) == GT_CH_TIMEOUT, "a");
	CHECK(gt_channel_call(&ch, job_named("b"), 0, &res) == GT_CH_TIMEOUT, "b");
	pthread_join(t, NULL);
	close(f.req_r);
	close(f.resp_w);
	gt_channel_close(&ch);	/* two answers in the pipe: released, or LeakSanitizer fails */
	CHECK(ch.late == 2, "released %llu answers, want 2", (unsigned long long)ch.late);
}

/*
 * A server that does not read: once the pipe is full the call fails at
 * once and frees the job itself; a server gone: unavailable.
 */
static void test_unavailable(void)
{
	struct gt_channel ch;
	struct gt_result *res;
	struct gt_msg m;
	int req_r, resp_w, rc, sent = 0;

	CHECK(gt_channel_open(&ch, &req_r, &resp_w) == 0, "open");
	ch.breaker_misses = 0;	/* this test wants every request sent */
	while ((rc = gt_channel_call(&ch, job_named("fill"), 0, &res)) == GT_CH_TIMEOUT)
		sent++;
	CHECK(rc == GT_CH_UNAVAILABLE && sent >= 16, "full pipe: rc %d after %d requests", rc, sent);
	while (read(req_r, &m, sizeof(m)) == sizeof(m))	/* the server's blocks */
		free(m.ptr);
	close(resp_w);
	CHECK(gt_channel_call(&ch, job_named("gone"), 1000, &res) == GT_CH_UNAVAILABLE, "server gone");
	CHECK(read(req_r, &m, sizeof(m)) == sizeof(m), "the request was sent: the server's to free");
	free(m.ptr);
	close(req_r);
	gt_channel_close(&ch);
	CHECK(gt_channel_call(&ch, job_named("closed"), 0, &res) == GT_CH_UNAVAILABLE, "closed channel");
}

static int breaker_events[2];
static uint64_t breaker_skipped;
static void on_breaker(int open, unsigned misses, uint64_t skipped)
{
	(void)misses;
	breaker_events[open]++;
	breaker_skipped = skipped;
}

static int64_t ms_since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - t0->tv_sec) * 1000 + (t.tv_nsec - t0->tv_nsec) / 1000000;
}

/*
 * A server that stops answering in time: after GT_BREAKER_MISSES timeouts
 * in a row the calls return at once without asking (logged once, not per
 * call), and the first call after the open period asks again; an answer
 * closes the breaker (logged once, with the calls decided alone).
 */
static void test_breaker(void)
{
	struct gt_channel ch;
	struct fake f = { .count = 4, .delay_ms = { 200, 200, 200, 0 } };
	struct gt_result *res;
	struct timespec t0;
	pthread_t t;

	CHECK(gt_channel_open(&ch, &f.req_r, &f.resp_w) == 0, "open");
	CHECK(ch.breaker_misses == GT_BREAKER_MISSES && GT_BREAKER_MISSES == 3, "default: %u misses", ch.breaker_misses);
	ch.breaker_open_ms = 300;
	ch.breaker_hook = on_breaker;
	pthread_create(&t, NULL, serve, &f);
	for (int i = 0; i < 3; i++)
		CHECK(gt_channel_call(&ch, job_named("stalled"), 20, &res) == GT_CH_TIMEOUT, "miss %d", i);
	CHECK(breaker_events[1] == 1 && breaker_events[0] == 0, "opened: %d open, %d close events", breaker_events[1],
	      breaker_events[0]);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int i = 0; i < 5; i++)
		CHECK(gt_channel_call(&ch, job_named("skipped"), 1000, &res) == GT_CH_OPEN && !res, "open call %d", i);
	CHECK(ms_since(&t0) < 50, "calls while open took %lld ms: they must not wait", (long long)ms_since(&t0));
	CHECK(breaker_events[1] == 1, "open logged %d times, want once", breaker_events[1]);
	usleep(700 * 1000);	/* the open period ends; the server has caught up */
	CHECK(gt_channel_call(&ch, job_named("probe"), 1000, &res) == GT_OK, "probe after the open period");
	gt_result_release(res);
	CHECK(breaker_events[0] == 1 && breaker_skipped == 5, "closed: %d close events, %llu skipped",
	      breaker_events[0], (unsigned long long)breaker_skipped);
	CHECK(ch.misses == 0 && ch.open_until == 0, "reset: %u misses", ch.misses);
	pthread_join(t, NULL);
	CHECK(!strcmp(f.seen[3], "probe/gpu"), "the server saw %s as the 4th job, want the probe", f.seen[3]);
	close(f.req_r);
	close(f.resp_w);
	gt_channel_close(&ch);
}

/* Another timeout after the open period opens it again, without a second log line. */
static void test_breaker_reopens_quietly(void)
{
	struct gt_channel ch;
	struct fake f = { .count = 4, .delay_ms = { 100, 100, 100, 100 } };
	struct gt_result *res;
	pthread_t t;

	breaker_events[0] = breaker_events[1] = 0;
	CHECK(gt_channel_open(&ch, &f.req_r, &f.resp_w) == 0, "open");
	ch.breaker_open_ms = 50;
	ch.breaker_hook = on_breaker;
	pthread_create(&t, NULL, serve, &f);
	for (int i = 0; i < 3; i++)
		gt_channel_call(&ch, job_named("stalled"), 10, &res);
	usleep(80 * 1000);
	CHECK(gt_channel_call(&ch, job_named("probe"), 10, &res) == GT_CH_TIMEOUT, "probe times out");
	CHECK(gt_channel_call(&ch, job_named("next"), 10, &res) == GT_CH_OPEN, "open again at once");
	CHECK(breaker_events[1] == 1 && breaker_events[0] == 0, "%d open, %d close events; want 1, 0", breaker_events[1],
	      breaker_events[0]);
	pthread_join(t, NULL);
	close(f.req_r);
	close(f.resp_w);
	gt_channel_close(&ch);
}

/*
 * Updates (job_modify) are asked outside the breaker: their timeouts do not
 * open it, while it is open they are not sent and do not wait, and an
 * answer to one does not close it.
 */
static void test_ask_outside_breaker(void)
{
	struct gt_channel ch;
	struct fake f = { .count = 7, .delay_ms = { 60, 60, 60, 60, 60, 60, 0 } };
	struct gt_result *res;
	struct timespec t0;
	pthread_t t;

	breaker_events[0] = breaker_events[1] = 0;
	CHECK(gt_channel_open(&ch, &f.req_r, &f.resp_w) == 0, "open");
	ch.breaker_open_ms = 300;
	ch.breaker_hook = on_breaker;
	pthread_create(&t, NULL, serve, &f);
	/* more timeouts in a row than GT_BREAKER_MISSES, all of them updates */
	for (int i = 0; i < GT_BREAKER_MISSES; i++)
		CHECK(gt_channel_ask(&ch, job_named("update"), 10, &res) == GT_CH_TIMEOUT, "update %d", i);
	CHECK(ch.misses == 0 && ch.open_until == 0 && breaker_events[1] == 0, "updates counted: %u misses", ch.misses);
	/* submissions that time out open it */
	for (int i = 0; i < GT_BREAKER_MISSES; i++)
		CHECK(gt_channel_call(&ch, job_named("stalled"), 10, &res) == GT_CH_TIMEOUT, "submission %d", i);
	CHECK(breaker_events[1] == 1, "the submissions did not open the breaker");
	clock_gettime(CLOCK_MONOTONIC, &t0);
	CHECK(gt_channel_ask(&ch, job_named("not-sent"), 1000, &res) == GT_CH_OPEN && !res, "update while open");
	CHECK(ms_since(&t0) < 50 && ch.skipped == 0, "update while open took %lld ms, %llu skipped",
	      (long long)ms_since(&t0), (unsigned long long)ch.skipped);
	usleep(400 * 1000);	/* the open period ends; the server has caught up */
	CHECK(gt_channel_ask(&ch, job_named("answered"), 1000, &res) == GT_OK, "update after the open period");
	gt_result_release(res);
	CHECK(ch.misses == GT_BREAKER_MISSES && breaker_events[0] == 0, "an update's answer closed the breaker (%u misses)",
	      ch.misses);
	pthread_join(t, NULL);
	CHECK(!strcmp(f.seen[6], "answered/gpu"), "the server saw %s as the 7th job: the update while open was sent",
	      f.seen[6]);
	close(f.req_r);
	close(f.resp_w);
	gt_channel_close(&ch);
}

/* A packed job is a copy: the source can go away. */
static void test_pack(void)
{
	char name[] = "train", feat[] = "";
	struct gt_job j = { .user_id = 1000, .name = name, .features = feat, .min_nodes = 4,
			    .pn_min_memory = 1ULL << 63 | 512 };
	struct gt_job *p = gt_job_pack(&j);

	memset(name, 'x', sizeof(name) - 1);
	CHECK(p && !strcmp(p->name, "train") && p->name != name, "name %s", p ? p->name : "none");
	CHECK(p && p->features && !*p->features, "an empty string stays empty, not NULL");
	CHECK(p && !p->partition && !p->comment, "NULL stays NULL");
	CHECK(p && p->user_id == 1000 && p->min_nodes == 4 && p->pn_min_memory == (1ULL << 63 | 512), "numbers");
	free(p);
}

int main(void)
{
	test_pack();
	test_answer_late_answer();
	test_close_releases_answers();
	test_unavailable();
	test_breaker();
	test_breaker_reopens_quietly();
	test_ask_outside_breaker();
	if (failures) {
		fprintf(stderr, "%d failure(s)\n", failures);
		return 1;
	}
	printf("test_channel: ok\n");
	return 0;
}
