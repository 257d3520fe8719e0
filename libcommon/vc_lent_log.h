/*
 * A request a worker served on a lent connection (docs/php.md, "Lent
 * connections"), as the front's access log needs it: the worker sends
 * them to the front in batches (vc_wire.h: "A"), and the front writes
 * each as the line h2o would have written for it.
 *
 * One record: this header, then method, target, Host, Referer and
 * User-Agent, back to back (a length of VC_LENT_LOG_ABSENT: no such
 * header).
 */
#ifndef VC_LENT_LOG_H
#define VC_LENT_LOG_H

#include <stdint.h>

#define VC_LENT_LOG_ABSENT 0xffffu

typedef struct vc_lent_log {
    uint64_t begin_us, start_us, end_us; /* CLOCK_REALTIME: the head read, the answer begun, ended */
    uint64_t bytes;                      /* body bytes sent, as h2o's bytes_sent */
    uint16_t status;
    uint16_t minor; /* HTTP/1.minor */
    uint16_t method_len, target_len, authority_len, referer_len, agent_len;
    uint16_t pad;
} vc_lent_log_t;

/* The record at *at (before end), checked: its texts (*texts, in the
 * order above) lie before end. 1, with *at past it; 0 at the end, or at
 * a record that does not fit (the rest is not read). */
int vc_lent_log_next(const char **at, const char *end, vc_lent_log_t *rec, const char **texts);

#endif
