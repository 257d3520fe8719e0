/* libFuzzer: the broker's handling of what its peers send
 * (daemons/vc-php/broker.c, lending.c, exits.c, leaving.c), past the
 * parsers: any sequence of FrontMessages from a front (requests, cancels,
 * give-backs of any slot, lost reports, needs) and of bytes from a worker
 * (a worker runs the application's code: it may send anything), mixed
 * with reloads, ticks and a leave. The broker must neither crash nor trip
 * one of its invariants (VC_ASSERT). It runs for real around a fake front
 * and fake workers (tests/broker_peer.h), made again for every input.
 *
 * Input: records (records.h). */
#include "broker_peer.h"
#include "records.h"

#include <signal.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int once;
    if (!once) {
        once = 1;
        signal(SIGPIPE, SIG_IGN);
    }
    broker_peer_t bp;
    bp_start(&bp, "php: { workers = 3; queue_limit = 4; };\n", 3);
    bp.poll_ms = 0; /* every peer here writes before the turn that reads */
    bp_worker_ready(&bp, 0);
    bp_worker_ready(&bp, 1); /* both lent; the third is not ready yet */
    char fid[FRONT_ID_LEN];
    int linked = bp_front_id(&bp, fid);
    fuzz_record_t r;
    for (size_t at = 0; fuzz_next_record(data, size, &at, &r) && linked;) {
        uint8_t kind = r.kind;
        size_t len = r.len;
        const uint8_t *p = r.p;
        switch (kind % 6) {
        case 0: /* a FrontMessage, and a body frame if the kind says so */
        case 1: {
            size_t split = kind % 2 && len ? p[0] % (len + 1) : len;
            struct iovec f[2] = {{(void *)p, split}, {(void *)(p + split), len - split}};
            broker_on_front(bp.d, fid, f, kind % 2 ? 2 : 1);
            break;
        }
        case 2: { /* bytes from a worker, as a link carries them */
            bp_worker_t *w = &bp.w[(kind / 6) % bp.nw];
            if (!w->reaped && len && write(w->fd, p, len) < 0)
                break;
            bp_turns(&bp, 1);
            break;
        }
        case 3: /* the zygote reports a worker's exit */
            bp_worker_exit(&bp, (kind / 6) % bp.nw, len && p[0] % 2 ? SIGKILL : SIGSEGV);
            break;
        case 4:
            if (len && p[0] % 3 == 0)
                broker_new_generation(bp.d, bp.d->gen + 1, bp.cfg);
            else if (len && p[0] % 3 == 1)
                broker_leave(bp.d);
            else
                broker_on_tick(bp.d);
            break;
        default: bp_worker_ready(&bp, (kind / 6) % bp.nw); break;
        }
        broker_release_fronts(bp.d);
        bp_front_drain(&bp);
        linked = bp_front_id(&bp, fid);
    }
    bp_stop(&bp);
    return 0;
}
