/*
 * A connection that makes no progress for the idle timeout plus 5 s is
 * cut; one that has not yet made a request, after front.header_timeout
 * (an idle flood holds no connection for the idle timeout). Progress
 * is a request reaching us, PHP working on one of its requests, the
 * client acknowledging bytes we sent, or the client sending at least
 * CONN_MIN_READ_RATE bytes a second.
 *
 * h2o closes idle connections itself, but not one whose stream waits for a
 * window the client never opens (HTTP/2 zero window), nor one that never
 * reads what we write, nor one that trickles a request body or its headers
 * a byte at a time without ever completing a request.
 *
 * The byte counts are the kernel's (TCP_INFO): h2o 2.2's own socket
 * counters hold the size of the last read, not a total.
 */
#include "watchdog.h"
#include "vc_log.h"
#include "vc_util.h"

#include <linux/tcp.h>
#include <netinet/in.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>

/* Bytes received from and acknowledged by the client, or -1 where the
 * kernel cannot say. */
static int tcp_counts(int fd, uint64_t *received, uint64_t *acked)
{
    struct tcp_info ti;
    socklen_t len = sizeof(ti);
    memset(&ti, 0, sizeof(ti));
    if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) != 0 ||
        len < offsetof(struct tcp_info, tcpi_bytes_received) + sizeof(ti.tcpi_bytes_received))
        return -1;
    *received = ti.tcpi_bytes_received;
    *acked = ti.tcpi_bytes_acked;
    return 0;
}

void watchdog_tick(front_t *f)
{
    VC_CHECK_OBJ(f, FRONT_MAGIC);
    /* Counted in whole ticks, the first up to a second late: + 4 closes
     * within the idle timeout plus 5 s. */
    unsigned limit_s = (unsigned)(f->settings->idle_timeout_ms / 1000) + 4;
    uint64_t header_ms = (uint64_t)f->settings->header_timeout_ms, now = vc_mono_ms();
    unsigned header_s = header_ms >= 2000 ? (unsigned)(header_ms / 1000) : 1, headless = 0;
    for (conn_state_t *c = f->conns; c; c = c->next) {
        /* A connection lent to a worker is measured all the same: the
         * counts are the socket's, whoever reads it, and a cut reaches
         * the worker as the end of its connection. */
        if ((c->sock == NULL && !c->lent) || c->cut || c->upgraded)
            continue;
        uint64_t received, acked;
        if (tcp_counts(c->fd, &received, &acked) != 0)
            continue;
        int progress = c->php_waiting || c->requests != c->last_requests || acked != c->last_acked ||
                       received - c->last_read >= CONN_MIN_READ_RATE;
        c->last_read = received;
        c->last_acked = acked;
        c->last_requests = c->requests;
        c->php_waiting = 0;
        if (progress) {
            c->quiet_s = 0;
            continue;
        }
        ++c->quiet_s;
        if (c->requests == 0) {
            /* No request yet (an idle connection, a head or a first body
             * trickled): front.header_timeout, not the idle timeout. A slow
             * upload that sends 500 bytes a second is progress and stays. */
            if (c->quiet_s < header_s || now - c->accepted_ms < header_ms)
                continue;
            headless++; /* one line for them all: a flood is thousands */
        } else if (c->quiet_s >= limit_s) {
            vc_log(VC_LOG_NOTICE, "limits", "closing a connection that made no progress for %u s", c->quiet_s);
        } else {
            continue;
        }
        c->cut = 1;
        f->stats.connections_cut++;
        shutdown(c->fd, SHUT_RDWR);
    }
    if (headless)
        vc_log(VC_LOG_INFO, "limits",
               "closing %u connections that made no progress and no request in %llu ms (front.header_timeout)",
               headless, (unsigned long long)header_ms);
}
