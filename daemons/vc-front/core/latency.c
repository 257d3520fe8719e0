/* latency.h: answers' time to their head, a second at a time. */
#include "latency.h"

#include <math.h>
#include <string.h>

/* Quarter octaves of microseconds from 1 µs: bucket b holds times below
 * 2^((b + 1) / 4) µs, each step 19% wider; 128 of them reach past an hour. */
#define BUCKETS 128

static uint64_t hist[BUCKETS], total, status[6];

static void on_log_access(h2o_logger_t *self, h2o_req_t *req)
{
    const struct timeval *a = &req->timestamps.request_begin_at, *b = &req->timestamps.response_start_at;
    if (req->res.status >= 200 && req->res.status < 600)
        status[req->res.status / 100]++;
    if (a->tv_sec == 0 || b->tv_sec == 0)
        return; /* refused before a head was sent */
    int64_t us = (int64_t)(b->tv_sec - a->tv_sec) * 1000000 + (b->tv_usec - a->tv_usec);
    int bucket = us <= 1 ? 0 : (int)(log2((double)us) * 4);
    hist[bucket < 0 ? 0 : bucket >= BUCKETS ? BUCKETS - 1 : bucket]++;
    total++;
}

void latency_register(h2o_pathconf_t *pathconf)
{
    h2o_logger_t *l = h2o_create_logger(pathconf, sizeof(*l));
    l->log_access = on_log_access;
}

/* The time at rank q (0..1): the middle of its bucket, in ms. */
static double at(double q)
{
    uint64_t want = (uint64_t)ceil(q * (double)total), seen = 0;
    for (int b = 0; b < BUCKETS; b++) {
        seen += hist[b];
        if (seen >= want && hist[b])
            return pow(2.0, (b + 0.5) / 4.0) / 1000.0;
    }
    return 0;
}

void latency_take(latency_second_t *out)
{
    memset(out, 0, sizeof(*out));
    if (total) {
        out->p50_ms = at(0.5);
        out->p99_ms = at(0.99);
    }
    memcpy(out->status, status, sizeof(status));
    memset(hist, 0, sizeof(hist));
    memset(status, 0, sizeof(status));
    total = 0;
}
