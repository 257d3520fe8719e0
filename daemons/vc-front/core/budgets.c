/*
 * What one client connection may cost before it is cut, and the bans that
 * follow (bans.h): the budget of PHP requests it cancels before their
 * answers (HTTP/2 rapid reset, MadeYouReset).
 */
#include "budgets.h"
#include "vc_events.h"
#include "bans.h"
#include "vc_log.h"
#include "vc_util.h"

#include <stdio.h>
#include <sys/socket.h>

/* A connection that has cancelled too many PHP requests before their
 * answers is cut: shutdown() makes h2o see the end of the stream and close
 * it the ordinary way. */
void budgets_charge_reset(conn_state_t *c)
{
    if (c == NULL || ++c->resets < CONN_RESET_BUDGET || c->cut || c->sock == NULL)
        return;
    c->cut = 1;
    c->f->stats.connections_cut++;
    char addr[INET6_ADDRSTRLEN] = "?";
    vc_sockaddr_host((struct sockaddr *)&c->peer, addr, sizeof(addr));
    vc_log(VC_LOG_WARN, "limits", "closing a connection from %s that cancelled %u PHP requests before their answers",
           addr, c->resets);
    shutdown(c->fd, SHUT_RDWR);
    uint64_t ban =
        bans_note_cut(c->f->bans, (struct sockaddr *)&c->peer, vc_mono_ms(), (uint64_t)c->f->settings->ban_ms);
    if (ban) {
        char secs[32];
        snprintf(secs, sizeof(secs), "%llu", (unsigned long long)(ban / 1000));
        vc_log(VC_LOG_WARN, "limits", "refusing %s for %s s: %d of its connections cut for resets within %d s", addr,
               secs, BAN_CUTS, BAN_WINDOW_MS / 1000);
        vc_bus_publish(c->f->d.bus, VC_EVENT(FRONT_CLIENT_BANNED), VC__SEVERITY__WARNING, "address", addr, "seconds",
                       secs, NULL);
        /* Its other connections go too: a fast attacker has many open. */
        for (conn_state_t *o = c->f->conns; o; o = o->next)
            if (!o->cut && o->sock && bans_is_banned(c->f->bans, (struct sockaddr *)&o->peer, vc_mono_ms())) {
                o->cut = 1;
                c->f->stats.connections_cut++;
                shutdown(o->fd, SHUT_RDWR);
            }
    }
}
