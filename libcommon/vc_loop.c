#include "vc_loop.h"
#include "vc_log.h"
#include "vc_proc.h"
#include "vc_util.h"

#include <errno.h>
#include <signal.h>

int vc_loop_stop_signal(int sig)
{
    return sig == SIGTERM || sig == SIGINT || sig == SIGQUIT;
}

/* Reads every pending signal: 1 if one of them stops the loop. */
static int signals(const vc_loop_t *l)
{
    int stop = 0;
    for (int sig; (sig = vc_proc_read_signal(l->sigfd)) != 0;)
        stop |= l->on_signal ? l->on_signal(l->arg, sig) : vc_loop_stop_signal(sig);
    return stop;
}

int vc_loop_run(const vc_loop_t *l)
{
    unsigned tick_ms = l->tick_ms ? l->tick_ms : 1000;
    uint64_t next_tick = vc_mono_ms() + tick_ms;
    zmq_pollitem_t items[VC_LOOP_ITEMS];
    VC_ASSERT(l->nwatch + 2 <= VC_LOOP_ITEMS);
    for (;;) {
        if (l->before)
            l->before(l->arg);
        /* The dynamic items first, then the fixed ones, the control
         * socket and the signals last. */
        size_t ndyn = l->gather ? l->gather(l->arg, items, VC_LOOP_ITEMS - l->nwatch - 2) : 0;
        size_t n = ndyn;
        for (size_t i = 0; i < l->nwatch; i++)
            items[n++] = (zmq_pollitem_t){l->watch[i].socket, l->watch[i].fd, ZMQ_POLLIN, 0};
        items[n++] = (zmq_pollitem_t){vc_ctl_socket(l->ctl), 0, ZMQ_POLLIN, 0};
        items[n++] = (zmq_pollitem_t){NULL, l->sigfd, ZMQ_POLLIN, 0};
        uint64_t now = vc_mono_ms();
        long wait = next_tick > now ? (long)(next_tick - now) : 0;
        if (l->timeout) {
            long t = l->timeout(l->arg);
            if (t >= 0 && t < wait)
                wait = t;
        }
        if (zmq_poll(items, (int)n, wait) < 0 && errno != EINTR) {
            vc_log(VC_LOG_CRIT, "main", "zmq_poll() failed: %s", zmq_strerror(errno));
            return -1;
        }
        if (l->ready)
            l->ready(l->arg, items, ndyn);
        for (size_t i = 0; i < l->nwatch; i++)
            if (items[ndyn + i].revents & ZMQ_POLLIN)
                l->watch[i].ready(l->arg);
        if (items[n - 2].revents & ZMQ_POLLIN)
            vc_ctl_handle(l->ctl);
        int stop = (items[n - 1].revents & ZMQ_POLLIN) && signals(l);
        if (l->after && l->after(l->arg))
            stop = 1;
        if (stop)
            return 0;
        if (vc_mono_ms() >= next_tick) {
            if (l->tick)
                l->tick(l->arg);
            next_tick = vc_mono_ms() + tick_ms;
        }
    }
}
