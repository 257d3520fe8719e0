/*
 * What background.c, background_spawn.c and schedule.c share
 * (background.h): the table of entries and their processes.
 */
#ifndef VC_PHP_BACKGROUND_INTERNAL_H
#define VC_PHP_BACKGROUND_INTERNAL_H

#include "background.h"
#include "vc_cron.h"

#include <time.h>

/* Debian's PHP CLI, the version libphp is (a `php` alternative may be
 * another). */
#ifndef PHP_CLI_BINARY
#define PHP_CLI_BINARY "/usr/bin/php8.2"
#endif

/* A process's life, as supervisor names its states:
 *   STOPPED   not running (never started, stopped, or a schedule between runs)
 *   STARTING  running for less than start_secs
 *   RUNNING   past start_secs
 *   BACKOFF   exited while STARTING: started again after a delay
 *   STOPPING  sent its stop signal; SIGKILL at stop_wait
 *   FAILED    start_retries failed starts in a row: left until `vc bg start` */
enum bstate { B_STOPPED, B_STARTING, B_RUNNING, B_BACKOFF, B_STOPPING, B_FAILED };
extern const char *const bstate_names[];

#define BG_LINE_MAX 4096

typedef struct bproc {
    pid_t pid; /* 0: none (reaped) */
    int out;   /* its stdout and stderr; -1 once at its end */
    char line[BG_LINE_MAX];
    size_t len;
    enum bstate state;
    int64_t started_ms, stop_sent_ms, next_start_ms; /* monotonic */
    int failed_starts;                               /* in a row */
    int again;                                       /* stopped to be started anew */
    const char *stop_why;                            /* why it was stopped */
} bproc_t;

typedef struct bentry {
    unsigned id;
    char *site, *name; /* name: the background entry's, or "schedule:N" (N from 1) */
    vc_background_t spec;
    char *app_dir;  /* where it runs; NULL: not there (nothing starts) */
    char **argv;    /* what is exec'd (vc_words.h, php expanded) */
    unsigned after; /* the entry it replaces: it starts once that one's processes are gone (0: none) */
    int retired;    /* replaced or removed: stops, never starts again */
    int held;       /* `vc bg stop`: not started until `vc bg start` */
    bproc_t *procs;
    size_t nprocs;
    uint64_t starts, exits, restarts, failures;
    /* A schedule entry (is_schedule): one run at a time. */
    int is_schedule;
    char *line; /* the cron line as written */
    vc_cron_t cron;
    char *tz;
    int64_t timeout_ms;
    time_t next_run, last_run;
    int last_status; /* waitpid() status of the last run; -1: none yet */
    int64_t last_ms; /* how long it took */
    time_t last_failure;
    uint64_t skipped; /* minutes due while the last run still ran */
    time_t awaiting;  /* in a cluster: the minute said due, until vc-mesh says run it here (0: none) */
    /* A release hook's run (is_hook, hooks.c): its output kept for vc-fed. */
    int is_hook;
    char *out;
    size_t outlen, outcap;
    int64_t done_ms; /* when it ended (monotonic); 0: runs */
} bentry_t;

struct background {
    uint32_t magic;
    vc_bus_t *bus;
    const vc_config_t *cfg;
    bentry_t *e;
    size_t n, cap;
    unsigned next_id;
    int stopping;
    /* The pool's background lock (POOL_HOME/background.lock), held while
     * this vc-php runs background processes: a successor (`vc restart
     * php`, a reload that changes the wall) starts its own only once the
     * one before has stopped all of its own; -1: not held. */
    int lock;
    char *lock_path;
    unsigned lock_waits;       /* tries that found it held */
    int64_t memory_checked_ms; /* when max_memory was last read (monotonic) */
    /* Minutes pass this much faster for schedules (VC_SCHEDULE_MINUTE_MS,
     * for tests): 1 outside tests. */
    int64_t minute_ms;
    int64_t clock_origin_ms; /* wall time when the clock started */
    int64_t mono_origin_ms;
};
#define BACKGROUND_MAGIC 0x62676e64u /* "bgnd" */

/* background_spawn.c: the argv a command runs as (php as the pool's
 * PHP CLI), or NULL with the reason logged. */
char **bg_argv(const vc_config_t *cfg, const char *command);
/* Forks and execs e's argv in its directory, its output on a pipe into
 * p->out. 0, or -1 (logged). */
int bg_spawn(background_t *b, bentry_t *e, bproc_t *p, size_t index);

/* background.c, for schedule.c and background_ctl.c: e's entry by id
 * (NULL if gone), an event about e, and p asked to stop (its stop
 * signal; SIGKILL at stop_wait), to be started anew if again. */
void bg_stop(bentry_t *e, bproc_t *p, const char *why, int again);
/* Whether this vc-php may run background work now (not stopping, and it
 * holds the pool's background lock). */
int bg_may_run(background_t *b);
bentry_t *bg_entry(background_t *b, unsigned id);
void bg_event(background_t *b, const bentry_t *e, const char *topic, const bproc_t *p, const char *status);

/* hooks.c: a hook's output line, its end, its verbs (hook-run,
 * hook-status, hook-stop), and dropping runs ended long ago. */
void hook_output(background_t *b, bentry_t *e, const char *line, size_t n);
void hook_ended(background_t *b, bentry_t *e, int status);
void hooks_verb(background_t *b, const Vc__Command *cmd, Vc__Reply *reply);
void hooks_sweep(background_t *b);

/* background.c, for hooks.c: a new entry (not yet started) and a start. */
bentry_t *bg_add_entry(background_t *b, const char *site, const char *name, const char *app_dir);
int bg_start_once(background_t *b, bentry_t *e);

/* schedule.c: the time schedules see (VC_SCHEDULE_MINUTE_MS speeds it
 * up), runs due now, an entry's next run, and a run that ended. */
time_t schedule_now(const background_t *b);
void schedule_tick(background_t *b, bentry_t *e);
void schedule_plan(background_t *b, bentry_t *e);
void schedule_ended(background_t *b, bentry_t *e, bproc_t *p, int status);
/* Milliseconds until e's next run (of the real clock). */
int64_t schedule_wait_ms(const background_t *b, const bentry_t *e);
/* "schedule-run SITE NAME MINUTE": vc-mesh took that minute of the entry
 * for this node (in a cluster). */
void schedule_run_verb(background_t *b, const Vc__Command *cmd, Vc__Reply *reply);

#endif
