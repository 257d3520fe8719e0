/*
 * The broker signals the worker's process, never whatever process holds
 * its pid by then (daemons/vc-php/broker.c, broker_signal). Workers are
 * the zygote's children, not the broker's: one that exited and was
 * reaped leaves its pid free for any other program, and a SIGTERM the
 * broker meant for it once stopped a whole other suite. Here the pid the
 * broker knows for its worker is given to another process (a decoy), as
 * pid reuse would, and a reload tells the worker to exit: the worker gets
 * the SIGTERM, the decoy nothing.
 */
#include "broker_peer.h"
#include "vc_test.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    broker_peer_t bp;
    bp_start(&bp, "php: { workers = 1; };\n", 1);
    pid_t decoy = fork();
    if (decoy == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        for (;;)
            pause();
    }
    CHECK(decoy > 0 && bp.d->nw == 1 && bp.d->w[0].pidfd >= 0);
    bp.d->w[0].pid = decoy;                 /* the broker's pid for it is now another's */
    broker_new_generation(bp.d, 2, bp.cfg); /* a reload: the starting worker is told to go */
    CHECK(bp_worker_signalled(&bp, 0) == SIGTERM);
    int status;
    CHECK(waitpid(decoy, &status, WNOHANG) == 0); /* the decoy runs on */
    kill(decoy, SIGKILL);
    waitpid(decoy, &status, 0);
    bp.d->w[0].pid = bp.w[0].pid;
    bp_stop(&bp);
    return vc_test_result("broker signals");
}
