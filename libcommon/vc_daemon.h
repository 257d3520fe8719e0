/*
 * vc_daemon: the start every daemon shares, in two steps so vc-php can fork
 * its zygote between them:
 *
 *   vc_daemon_load()   arguments, configuration from the store, logging.
 *                      Opens nothing that must not cross a fork.
 *   vc_daemon_start()  signals, pid file, ZeroMQ context, control endpoint,
 *                      bus publisher; announces "<daemon>.started".
 */
#ifndef VC_DAEMON_H
#define VC_DAEMON_H

#include "vc_bus.h"
#include "vc_config.h"
#include "vc_ctl.h"

typedef struct vc_daemon {
    const char *name; /* "vc-bus"; static storage */
    char *data_dir;   /* absolute */
    vc_config_t *cfg; /* owned */
    int sigfd;
    void *zctx;
    vc_ctl_t *ctl;
    vc_bus_t *bus;
    char *pidfile;
    int binds_bus;  /* vc-bus: connects its publisher once it has bound bus-in */
    int announced;  /* "<daemon>.started" went out */
    char *conf_dir; /* --conf DIR: run alone, configuration from files ("": none) */
} vc_daemon_t;

/* Parses --data DIR (or VC_DATA), --conf DIR, --health, --help and
 * --version; loads the current configuration. Exits with a message on bad
 * usage or no configuration; with --health, exits with its answer. */
void vc_daemon_load(vc_daemon_t *d, const char *name, int argc, char **argv);
/* Asks the daemon's control endpoint for its status: 0 when it answers
 * and says it is healthy (a line on stdout), else 1 (why, on stderr). */
int vc_daemon_health(const vc_daemon_t *d);
/* Exits with a logged reason on failure. Connects the event publisher to
 * bus-in, unless binds_bus is set (then vc_daemon_connect_bus, once bound). */
void vc_daemon_start(vc_daemon_t *d, vc_ctl_fn fn, void *ctx);
void vc_daemon_connect_bus(vc_daemon_t *d);
/* Announces "<daemon>.started" (topic "bus.started" for vc-bus), once. */
void vc_daemon_announce(vc_daemon_t *d);
/* Announces the start if not done yet and tells the supervisor the daemon
 * is ready. Call once every socket is bound. */
void vc_daemon_ready(vc_daemon_t *d);
/* The `reload` verb: loads the stored configuration, hands it to apply
 * (may be NULL) before it replaces d->cfg, and answers "reloaded"; or
 * refuses with why, the running configuration kept. */
struct Vc__Reply;
void vc_daemon_reload(vc_daemon_t *d, void (*apply)(void *arg, const vc_config_t *cfg), void *arg,
                      struct Vc__Reply *reply);
/* Announces "<daemon>.stopped", closes everything, removes the pid file. */
void vc_daemon_fini(vc_daemon_t *d);

#endif
