/*
 * The zygote: the process that starts PHP once (module startup, OPcache's
 * shared memory, and in worker mode the application's boot) and forks
 * every worker from that warm state, so workers share its pages
 * copy-on-write. It holds no ZeroMQ and no LMDB: those must not cross a
 * fork.
 *
 * It talks to the broker over a SOCK_SEQPACKET socketpair:
 *   broker -> zygote: zygote_cmd_t  (spawn a worker), with the worker's end
 *                     of its link to the broker (SCM_RIGHTS, libcommon/vc_link.h)
 *   zygote -> broker: zygote_note_t (ready, forked pid, exited pid + status);
 *                     a forked worker's note carries its /proc/PID
 *                     directory (SCM_RIGHTS), which signals it
 */
#ifndef VC_PHP_ZYGOTE_H
#define VC_PHP_ZYGOTE_H

#include <sys/types.h>

#include "vc_config.h"

enum { ZYGOTE_SPAWN = 1 };
enum { ZYGOTE_READY = 1, ZYGOTE_FORKED, ZYGOTE_EXITED, ZYGOTE_FAILED };

typedef struct zygote_cmd {
    int op;
} zygote_cmd_t;

typedef struct zygote_note {
    int op;
    pid_t pid;
    int status; /* waitpid() status for ZYGOTE_EXITED */
} zygote_note_t;

/* Runs the zygote in this (freshly forked) process. Never returns. */
void zygote_main(const vc_config_t *cfg, int sock) __attribute__((noreturn));

/* Tells the broker PHP is ready, then forks a worker each time it asks.
 * Returns only in a forked worker (with the zygote's descriptors closed
 * and signals unblocked): the worker's link to the broker. The zygote
 * itself exits from here. */
int zygote_serve(const vc_config_t *cfg, int sock, int sigfd);

/* Tells the broker the boot failed (before zygote_serve). */
void zygote_boot_failed(int sock);

#endif
