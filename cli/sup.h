/*
 * The supervisor's state (vc up) and its daemons: what up.c (the
 * configuration, commands and the main loop) and children.c (starting,
 * watching, restarting, replacing and stopping each daemon) share.
 */
#ifndef VC_CLI_SUP_H
#define VC_CLI_SUP_H

#include "cli.h"
#include "privs.h"
#include "vc_bus.h"
#include "vc_ctl.h"
#include "vc_listen.h"
#include "vc_settings.h"
#include "vc_store.h"

#include <stdint.h>
#include <sys/types.h>

/* A command that waits for replacements (replace.c): answered once every
 * successor it started is ready or dropped. */
typedef struct sup_op {
    vc_ctl_later_t *later; /* who asked; NULL: nobody waits (SIGHUP) */
    int pending;           /* replacements under way, and the caller's own */
    int failed;
    char done[1024]; /* the answer if all went well */
    char why[1024];  /* the first failure */
} sup_op_t;

typedef struct child {
    const vc_section_t *sec;     /* the daemon's own declaration (vc_settings.h) */
    const vc_supervision_t *how; /* sec->supervision */
    const char *binary;          /* "vc-front" */
    char name[48];               /* "vc-front", "vc-front.1" for a second front, "vc-php.shop" for a pool */
    int instance;
    pid_t pid;
    int ready_fd; /* read end of the readiness pipe, -1 once ready */
    int ready;
    uint64_t started_ms;
    uint64_t restart_at_ms; /* 0: not waiting to restart */
    unsigned backoff_ms;
    unsigned restarts;
    int restart_pending; /* announce the restart once it is ready */
    int last_status;
    int pool; /* vc-php: which pool (an index into privs.pools); else -1 */
    /* replace.c: the successor being started, until it is ready */
    pid_t next_pid;
    int next_ready_fd;
    uint64_t next_deadline_ms;
    /* The commands this replacement answers; and those that came while it
     * was under way, which a replacement after it answers, since the
     * successor may have read the configuration before they stored theirs. */
    sup_op_t **ops, **again;
    size_t nops, nagain;
} child_t;

typedef struct sup sup_t;
struct sup {
    cli_t *cli;
    char *data_dir;
    char *conf_dir;   /* absolute, or NULL */
    char **overrides; /* key, value pairs from the command line */
    size_t noverrides;
    vc_config_t *cfg;
    vc_store_t *store;
    int sigfd;
    void *zctx;
    vc_ctl_t *ctl;
    vc_bus_t *bus;
    char *pidfile;
    child_t *kids; /* one per daemon process, as many as the configuration asks */
    size_t nkids;
    pid_t *retiring; /* replaced daemons finishing their work */
    size_t nretiring, cap_retiring;
    privs_t privs;            /* who the daemons and the pool run as */
    vc_listener_t *listeners; /* held here so the ports never close */
    char *tickets;            /* DATA/tls/tickets */
    size_t nlisteners;
    int stopping;
    int userns;               /* --userns: in a user namespace of its own (userns.h) */
    int no_detect;            /* --no-detect: --root as it is, whatever application it holds */
    void (*on_hup)(sup_t *s); /* SIGHUP: a reload nobody waits for (up.c's) */
    uint64_t started_ms;
};

/* How many processes of a daemon the configuration asks for, as its
 * supervision entry says (vc_settings.h): one, one per pool, or a setting
 * (front.processes). */
size_t sup_copies_of(const sup_t *s, const vc_section_t *sec);
/* The same for another configuration (a reload's). */
size_t sup_copies_in(const sup_t *s, const vc_config_t *cfg, const vc_section_t *sec);
/* k gets the listening sockets (a front). */
int sup_serves_clients(const child_t *k);
/* Whether k's successor can run beside it while it finishes (sup_replace):
 * fronts, and pools linked over a Unix socket. */
int sup_overlaps(const sup_t *s, const child_t *k);
/* Forks and execs k as its user; its readiness pipe is k->ready_fd. */
void sup_spawn(sup_t *s, child_t *k);
/* The same for a process of k's (replacing: a successor): its pid and the
 * read end of its readiness pipe, or -1 (logged). */
pid_t sup_spawn_process(sup_t *s, const child_t *k, int replacing, int *ready_fd);

/* replace.c. An op starts with the caller's own hold, let go with
 * sup_op_release once it started what it wanted. */
/* Reload: a new version into the store, then every daemon but asker
 * (NULL: none) is told; 0, or -1 with why (the running one stays). */
int sup_reload(sup_t *s, sup_op_t *op, const char *asker, char *err, size_t errlen);
/* The site-file verbs (site_edit.c). */
struct Vc__Command;
struct Vc__Reply;
void sup_site_list(void *arg, const struct Vc__Command *cmd, struct Vc__Reply *reply);
void sup_site_get(void *arg, const struct Vc__Command *cmd, struct Vc__Reply *reply);
void sup_site_put(void *arg, const struct Vc__Command *cmd, struct Vc__Reply *reply);
void sup_site_enable(void *arg, const struct Vc__Command *cmd, struct Vc__Reply *reply);
void sup_site_disable(void *arg, const struct Vc__Command *cmd, struct Vc__Reply *reply);
sup_op_t *sup_op_new(vc_ctl_later_t *later, const char *done);
void sup_op_release(sup_t *s, sup_op_t *op);
void sup_op_fail(sup_op_t *op, const char *why);
/* Starts k's successor; k keeps running until it is ready. -1 if it could
 * not even start (op says why). */
int sup_replace(sup_t *s, child_t *k, sup_op_t *op);
/* k's successor wrote on (or closed) its readiness pipe. */
void sup_successor_readable(sup_t *s, child_t *k);
/* A reaped pid that was a successor: 1 (dropped), else 0. */
int sup_successor_exited(sup_t *s, pid_t pid, int status);
/* Successors late to be ready are dropped; at a stop, all of them. */
void sup_successors_tick(sup_t *s);
void sup_successors_stop(sup_t *s);
/* Waits until k says it is ready (or dies, or times out): at start-up,
 * so each daemon finds the ones before it running. Returns 0 or -1. */
int sup_wait_ready(child_t *k);
/* Collects exited daemons and schedules their restarts (with backoff). */
void sup_reap(sup_t *s);
void sup_restart_due(sup_t *s);
/* A restarted daemon is ready: says so on the bus. */
void sup_announce_restart(sup_t *s, child_t *k);
/* Milliseconds until the next restart is due, or -1. */
long sup_next_timeout(sup_t *s);
/* SIGTERM to every daemon, then SIGKILL past a grace. */
void sup_stop_children(sup_t *s);

/* supervise.c: the processes the configuration asks for, in start order
 * (s->kids); starting them one after the other, each ready before the
 * next (0, or -1 and s->stopping); and watching them until the suite
 * stops. */
void sup_plan(sup_t *s);
int sup_start_all(sup_t *s);
void sup_run(sup_t *s);

/* terminal.c: with panel.terminal on, forks the panel's terminal starter
 * (in vc-panel's process, before it execs) and sets VC_TERMINAL_FD. 0, or
 * -1 (said on stderr). */
int sup_terminal_start(sup_t *s);

#endif
