/*
 * A connection that makes no progress for the idle timeout plus 5 s is
 * cut. Progress is a request reaching us, PHP working on one of its
 * requests, the client acknowledging bytes we sent, or the client sending
 * at least CONN_MIN_READ_RATE bytes a second.
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

void watchdog(front_t *f)
{
    /* Counted in whole ticks, the first up to a second late: + 4 closes
     * within the idle timeout plus 5 s. */
    unsigned limit_s = (unsigned)(f->d.cfg->front.idle_timeout_ms / 1000) + 4;
    for (conn_state_t *c = f->conns; c; c = c->next) {
        if (c->sock == NULL || c->cut)
            continue;
        /* Connected, and no request yet: not allowed the idle timeout. */
        if (c->requests == 0 && vc_mono_ms() - c->accepted_ms >= (uint64_t)f->d.cfg->front.header_timeout_ms) {
            c->cut = 1;
            f->stats.connections_cut++;
            vc_log(VC_LOG_INFO, "limits", "closing a connection that sent no request in %lld ms (front.header_timeout)",
                   (long long)f->d.cfg->front.header_timeout_ms);
            shutdown(c->fd, SHUT_RDWR);
            continue;
        }
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
        if (++c->quiet_s >= limit_s) {
            c->cut = 1;
            f->stats.connections_cut++;
            vc_log(VC_LOG_NOTICE, "limits", "closing a connection that made no progress for %u s", c->quiet_s);
            shutdown(c->fd, SHUT_RDWR);
        }
    }
}
