/*
 * A pool's background work (docs/background.md): its sites' background
 * processes (site.background, kept running as supervisor keeps a
 * program) and scheduled commands (site.schedule, run as cron runs a
 * line), both started by the pool's vc-php, so they run as the pool's
 * user, inside its wall, with its PHP settings and in the site's
 * application directory (vc_site_app_dir).
 *
 * `php` in a command is Debian's PHP CLI (PHP_CLI_BINARY) given the
 * pool's ini settings: the CLI is what `artisan queue:work` and
 * `messenger:consume` expect (PHP_SAPI "cli", STDIN/STDOUT/STDERR,
 * pcntl's signals), and a process of its own keeps a job's memory out of
 * the zygote's pages (docs/background.md says why, with the figures).
 *
 * In parts: background.c (the table, starts, exits, stops, timers),
 * background_spawn.c (a process's start: its argv, fds, signals),
 * schedule.c (which minute runs what) and background_ctl.c (what `vc bg`
 * and `vc schedule` ask), sharing background_internal.h.
 */
#ifndef VC_PHP_BACKGROUND_H
#define VC_PHP_BACKGROUND_H

#include <stdint.h>
#include <sys/types.h>
#include <zmq.h>

#include "vc_bus.h"
#include "vc_config.h"
#include "vc_ctl.h"

typedef struct background background_t;

/* bus may be NULL. */
background_t *background_new(vc_bus_t *bus);
void background_destroy(background_t **b);

/* The configuration of the generation now current (borrowed until the
 * next call): entries that changed (their command, settings or the
 * release their directory resolves to) stop and start anew once the
 * old copies are gone, new ones start, removed ones stop. */
void background_configure(background_t *b, const vc_config_t *cfg);

/* A child vc-php reaped: 1 if it was one of ours. */
int background_reaped(background_t *b, pid_t pid, int status);

/* The processes' output pipes, to poll for POLLIN, and their reading. */
size_t background_pollitems(background_t *b, zmq_pollitem_t *items, size_t max);
void background_on_poll(background_t *b, const zmq_pollitem_t *items, size_t n);

/* Starts, restarts, stops past their wait, recycles and schedule runs
 * due now; and milliseconds until the next. */
void background_tick(background_t *b);
long background_next_timeout(background_t *b);

/* Stopping vc-php: each process gets its stop signal (once). 1 once
 * none is left; background_kill_all() ends the rest. */
int background_stop_all(background_t *b);
void background_kill_all(background_t *b);

/* The control verbs `vc bg` and `vc schedule` call (background_ctl.c):
 * "background [SITE]" (a record a process or schedule entry), and
 * "background-start|stop|restart SITE NAME". */
void background_verb(background_t *b, const Vc__Command *cmd, Vc__Reply *reply);

#endif
