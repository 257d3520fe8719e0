/*
 * The supervisor's daemons and its loop (`vc up`, after up.c has checked
 * the configuration, opened the store and bound the ports): which
 * processes to run, starting them in order, and watching them until the
 * suite stops (vc_loop.h): the control socket, the signals, and each
 * daemon's readiness pipe and its successor's.
 */
#include "sup.h"
#include "vc_events.h"
#include "vc_log.h"
#include "vc_loop.h"
#include "vc_tickets.h"
#include "vc_util.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The daemons with a supervision entry (vc_settings.h), in its order. */
static size_t supervised(const vc_section_t **out)
{
    size_t n = 0;
    for (size_t i = 0; vc_sections[i]; i++)
        if (vc_sections[i]->supervision)
            out[n++] = vc_sections[i];
    for (size_t i = 1; i < n; i++) /* by order; few, so insertion */
        for (size_t j = i; j > 0 && out[j]->supervision->order < out[j - 1]->supervision->order; j--) {
            const vc_section_t *t = out[j];
            out[j] = out[j - 1];
            out[j - 1] = t;
        }
    return n;
}

void sup_plan(sup_t *s)
{
    size_t nsections = 0, nprocs = 0;
    while (vc_sections[nsections])
        nsections++;
    const vc_section_t **daemons = vc_calloc(nsections + 1, sizeof(*daemons));
    size_t ndaemons = supervised(daemons);
    for (size_t i = 0; i < ndaemons; i++)
        nprocs += sup_copies_of(s, daemons[i]);
    s->kids = vc_calloc(nprocs, sizeof(*s->kids));
    /* Fronts, front.processes of them; PHP, one per pool. */
    for (size_t i = 0; i < ndaemons; i++) {
        int pools = daemons[i]->supervision->copies == VC_COPIES_PER_POOL;
        for (size_t c = 0; c < sup_copies_of(s, daemons[i]); c++) {
            child_t *k = &s->kids[s->nkids++];
            k->sec = daemons[i];
            k->how = daemons[i]->supervision;
            k->binary = k->how->binary;
            k->instance = pools ? 0 : (int)c;
            k->pool = pools ? (int)c : -1;
            if (c == 0)
                snprintf(k->name, sizeof(k->name), "%s", k->binary);
            else if (pools)
                snprintf(k->name, sizeof(k->name), "%s.%s", k->binary, s->privs.pools[c].name);
            else
                snprintf(k->name, sizeof(k->name), "%s.%zu", k->binary, c);
            k->ready_fd = -1;
            k->next_ready_fd = -1;
        }
    }
    free(daemons);
}

int sup_start_all(sup_t *s)
{
    for (size_t i = 0; i < s->nkids && !s->stopping; i++) {
        child_t *k = &s->kids[i];
        sup_spawn(s, k);
        if (k->pid <= 0 || sup_wait_ready(k) < 0) {
            vc_log(VC_LOG_CRIT, "up", "%s did not start; stopping", k->name);
            s->stopping = 1;
            return -1;
        }
        /* The bus is up: join it before the others start. */
        if (!strcmp(k->binary, "vc-bus") && s->bus == NULL) {
            char *bus_ep = vc_config_endpoint(s->cfg, "bus-in");
            s->bus = vc_bus_new(s->zctx, bus_ep, "vc");
            free(bus_ep);
        }
    }
    return s->stopping ? -1 : 0;
}

/* Each daemon's readiness pipe, then each successor's. */
static size_t gather(void *arg, zmq_pollitem_t *items, size_t max)
{
    sup_t *s = arg;
    size_t n = 0;
    for (size_t i = 0; i < s->nkids && n < max; i++)
        items[n++] = (zmq_pollitem_t){NULL, s->kids[i].ready_fd, s->kids[i].ready_fd >= 0 ? ZMQ_POLLIN : 0, 0};
    for (size_t i = 0; i < s->nkids && n < max; i++)
        items[n++] =
            (zmq_pollitem_t){NULL, s->kids[i].next_ready_fd, s->kids[i].next_ready_fd >= 0 ? ZMQ_POLLIN : 0, 0};
    return n;
}

static void ready(void *arg, const zmq_pollitem_t *items, size_t n)
{
    sup_t *s = arg;
    for (size_t i = 0; i < s->nkids && i < n; i++) {
        child_t *k = &s->kids[i];
        if (k->ready_fd >= 0 && (items[i].revents & ZMQ_POLLIN)) {
            char c;
            if (read(k->ready_fd, &c, 1) == 1)
                k->ready = 1;
            close(k->ready_fd);
            k->ready_fd = -1;
            if (k->ready && k->restart_pending)
                sup_announce_restart(s, k);
        }
    }
    for (size_t i = 0; i < s->nkids && s->nkids + i < n; i++)
        if (s->kids[i].next_ready_fd >= 0 && (items[s->nkids + i].revents & (ZMQ_POLLIN | ZMQ_POLLERR)))
            sup_successor_readable(s, &s->kids[i]);
}

static long next_timeout(void *arg)
{
    return sup_next_timeout(arg);
}

static int on_signal(void *arg, int sig)
{
    sup_t *s = arg;
    if (sig == SIGCHLD)
        sup_reap(s);
    else if (sig == SIGHUP)
        s->on_hup(s);
    else
        s->stopping = 1;
    return s->stopping;
}

/* After each turn: successors late to be ready, restarts due, and the TLS
 * ticket keys' rotation; a `vc stop` ends the loop. */
static int after_turn(void *arg)
{
    sup_t *s = arg;
    if (s->stopping)
        return 1;
    sup_successors_tick(s);
    sup_restart_due(s);
    if (vc_tickets_rotate(s->tickets, VC_TICKETS_ROTATE_S) > 0) {
        privs_give(&s->privs, s->tickets);
        vc_log(VC_LOG_INFO, "up", "rotated the TLS session ticket keys");
    }
    return 0;
}

void sup_run(sup_t *s)
{
    if (s->stopping)
        return;
    vc_loop_t loop = {.ctl = s->ctl,
                      .sigfd = s->sigfd,
                      .arg = s,
                      .gather = gather,
                      .ready = ready,
                      .timeout = next_timeout,
                      .on_signal = on_signal,
                      .after = after_turn};
    vc_loop_run(&loop);
}
