/*
 * The front's client connections: the state the core keeps for each
 * (front.h's conn_state_t), made at accept, found from a socket or a
 * request, and gone with the socket.
 */
#include "conn.h"
#include "peers.h"
#include "vc_log.h"
#include "vc_util.h"

#include <stdlib.h>
#include <sys/socket.h>

void conn_state_release(conn_state_t *c)
{
    VC_CHECK_OBJ(c, CONN_STATE_MAGIC);
    if (--c->refs == 0)
        free(c);
}

static void on_conn_close(void *data)
{
    conn_state_t *c = data;
    c->f->stats.connections--;
    peers_remove(c->f->peers, (struct sockaddr *)&c->peer);
    c->sock = NULL;
    if (c->prev)
        c->prev->next = c->next;
    else
        c->f->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    conn_state_release(c);
}

conn_state_t *conn_state_add(front_t *f, h2o_socket_t *sock, int fd, const struct sockaddr_storage *peer)
{
    VC_CHECK_OBJ(f, FRONT_MAGIC);
    f->stats.connections++;
    conn_state_t *c = vc_calloc(1, sizeof(*c));
    c->magic = CONN_STATE_MAGIC;
    c->f = f;
    c->sock = sock;
    c->fd = fd;
    c->peer = *peer;
    c->accepted_ms = vc_mono_ms();
    c->refs = 1;
    c->next = f->conns;
    if (f->conns)
        f->conns->prev = c;
    f->conns = c;
    sock->on_close.cb = on_conn_close;
    sock->on_close.data = c;
    return c;
}

conn_state_t *conn_state_of(h2o_socket_t *sock)
{
    /* Only what we set at accept: h2o may use on_close for its own. */
    return sock && sock->on_close.cb == on_conn_close ? sock->on_close.data : NULL;
}

conn_state_t *conn_state_of_req(h2o_req_t *req)
{
    return conn_state_of(req->conn->callbacks->get_socket ? req->conn->callbacks->get_socket(req->conn) : NULL);
}

/* At max_connections, the connection idle the longest (no progress for
 * the most watchdog ticks) makes room for a new client: 20,000 idle ones
 * held every new client out for the idle timeout. Returns 1 if one was
 * cut (it closes on the loop's next turn: the count may pass the limit
 * by the cuts in flight). A walk of every connection, paid only by an
 * accept at the limit, which it then makes room for. */
int conn_evict_idle(front_t *f)
{
    VC_CHECK_OBJ(f, FRONT_MAGIC);
    conn_state_t *pick = NULL;
    for (conn_state_t *c = f->conns; c; c = c->next)
        if (c->sock && !c->cut && !c->php_waiting && c->quiet_s > 0 && (pick == NULL || c->quiet_s > pick->quiet_s))
            pick = c;
    if (pick == NULL)
        return 0;
    pick->cut = 1;
    shutdown(pick->fd, SHUT_RDWR);
    if (f->stats.connections_evicted++ % 1000 == 0)
        vc_log(VC_LOG_NOTICE, "limits", "at front.max_connections: closing the connection idle longest (%u s)",
               pick->quiet_s);
    return 1;
}
