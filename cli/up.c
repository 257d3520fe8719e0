/*
 * vc up: the supervisor. Loads the configuration into the store, starts
 * every daemon, restarts one that dies (with backoff, announced on the
 * bus), reloads on request, and on SIGTERM or Ctrl-C stops them all.
 */
#include "cli.h"
#include "detect.h"
#include "vc_events.h"
#include "privs.h"
#include "userns.h"
#include "sup.h"
#include "vc_bus.h"
#include "vc_confstore.h"
#include "vc_curve.h"
#include "vc_listen.h"
#include "vc_tickets.h"
#include "vc_ctl.h"
#include "vc_log.h"
#include "walls.h"
#include "vc_zmq.h"
#include "vc_proc.h"
#include "vc_store.h"
#include "vc_util.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

/* ---- configuration ------------------------------------------------------ */

static int same_pools(const vc_config_t *a, const vc_config_t *b)
{
    if (a->npools != b->npools)
        return 0;
    for (size_t i = 0; i < a->npools; i++)
        if (strcmp(a->pools[i].name, b->pools[i].name) != 0 || strcmp(a->pools[i].user, b->pools[i].user) != 0 ||
            strcmp(a->pools[i].group ? a->pools[i].group : "", b->pools[i].group ? b->pools[i].group : "") != 0)
            return 0;
    return strcmp(a->php.user, b->php.user) == 0 &&
           strcmp(a->php.group ? a->php.group : "", b->php.group ? b->php.group : "") == 0 &&
           strcmp(a->user, b->user) == 0;
}

/* Gathers, validates and stores a new configuration version. On refusal the
 * reason ("file:line: ...") is in err and the store is unchanged. */
static vc_config_t *load_config(sup_t *s, char *err, size_t errlen)
{
    Vc__ConfigVersion *v = NULL;
    vc_config_t *cfg = vc_config_load(s->conf_dir, s->data_dir, s->overrides, s->noverrides, &v, err, errlen);
    if (cfg == NULL)
        return NULL;
    if (cfg != NULL && s->cfg != NULL && !same_pools(s->cfg, cfg)) {
        /* Each pool is a daemon of its own, started with its user: the
         * set is fixed while the suite runs. */
        snprintf(err, errlen, "the pools or users changed: restart the suite (vc stop; vc up) to apply them");
        vc_config_destroy(&cfg);
    }
    /* So is the set of daemons (vc-mesh with cluster.node, vc-fed with a
     * deployed site, front.processes). */
    for (size_t i = 0; cfg != NULL && s->cfg != NULL && vc_sections[i]; i++) {
        const vc_section_t *sec = vc_sections[i];
        if (sec->supervision && sec->supervision->copies != VC_COPIES_PER_POOL &&
            sup_copies_in(s, s->cfg, sec) != sup_copies_in(s, cfg, sec)) {
            snprintf(err, errlen,
                     "%s would run %zu times instead of %zu: restart the suite (vc stop; vc up) to apply it",
                     sec->supervision->binary, sup_copies_in(s, cfg, sec), sup_copies_in(s, s->cfg, sec));
            vc_config_destroy(&cfg);
        }
    }
    if (cfg != NULL && s->store != NULL) {
        int64_t n = vc_confstore_put(s->store, v, 20);
        if (n < 0) {
            snprintf(err, errlen, "cannot store the configuration: %s", vc_strerror((int)n));
            vc_config_destroy(&cfg);
        } else {
            cfg->version = (uint64_t)n;
            /* The pool reads its copy: its user may not open LMDB. */
            if (privs_write_pool_config(&s->privs, cfg, s->data_dir, v, err, errlen) < 0)
                vc_config_destroy(&cfg);
        }
    }
    vc_config_version_free(&v);
    for (size_t i = 0; cfg && i < cfg->nwarnings; i++)
        vc_log(VC_LOG_WARN, "config", "%s", cfg->warnings[i]);
    return cfg;
}

/* ---- children ------------------------------------------------------------ */

/* The wall pool k would have under cfg (walls_plan_text); NULL if cfg
 * has no such pool. */
static char *wall_of(const sup_t *s, const vc_config_t *cfg, const child_t *k)
{
    const char *name = s->privs.pools[k->pool].name;
    int pool = strcmp(name, "default") == 0 ? 0 : -1;
    for (size_t i = 0; pool < 0 && i < cfg->npools; i++)
        if (strcmp(cfg->pools[i].name, name) == 0)
            pool = (int)i + 1;
    if (pool < 0)
        return NULL;
    walls_ctx_t w = {
        .cfg = cfg, .pool = pool, .data_dir = s->data_dir, .conf_dir = s->conf_dir, .bin_dir = s->cli->bin_dir};
    return walls_plan_text(&w);
}

/* A pool whose wall a reload changes (a site added, removed or moved: its
 * directories become writable to it, or hidden from it) is replaced by a
 * new generation inside the new wall, as `vc restart php` would, with no
 * failed request; the others only reload. 1 if k is replaced. */
static int replace_if_walled_anew(sup_t *s, child_t *k, const char *before, sup_op_t *op)
{
    char *after = before ? wall_of(s, s->cfg, k) : NULL;
    int changed = after && strcmp(before, after) != 0;
    free(after);
    if (!changed)
        return 0;
    vc_log(VC_LOG_NOTICE, "up",
           "%s: its wall changed with the configuration (a site added, removed or moved): "
           "replaced by a new generation inside the new one",
           k->name);
    if (sup_overlaps(s, k)) {
        sup_replace(s, k, op);
    } else if (k->pid > 0) {
        k->backoff_ms = 0;
        kill(k->pid, SIGTERM);
    }
    return 1;
}

/* Reload: a new version into the store, then each daemon is told, but
 * the one that asked (asker, or NULL), which waits for this answer and
 * takes the stored version itself. A refused configuration leaves the
 * running one in place. */
int sup_reload(sup_t *s, sup_op_t *op, const char *asker, char *err, size_t errlen)
{
    sd_notify(0, "RELOADING=1");
    vc_config_t *cfg = load_config(s, err, errlen);
    if (cfg == NULL) {
        vc_log(VC_LOG_ERR, "up", "reload refused: %s", err);
        vc_bus_publish(s->bus, VC_EVENT(CONFIG_REFUSED), VC__SEVERITY__ERROR, "reason", err, NULL);
        sd_notifyf(0, "READY=1\nSTATUS=reload refused: %s", err); /* the running configuration serves on */
        return -1;
    }
    size_t nwalls = s->nkids;
    char **walls = vc_calloc(nwalls + 1, sizeof(char *));
    for (size_t i = 0; i < nwalls; i++)
        walls[i] = s->kids[i].pool >= 0 ? wall_of(s, s->cfg, &s->kids[i]) : NULL;
    vc_config_destroy(&s->cfg);
    s->cfg = cfg;
    privs_prepare_deploys(&s->privs, cfg); /* a site newly deployed */
    char ver[24];
    snprintf(ver, sizeof(ver), "%llu", (unsigned long long)cfg->version);
    vc_log(VC_LOG_NOTICE, "up", "configuration version %s loaded", ver);
    vc_bus_publish(s->bus, VC_EVENT(CONFIG_CHANGED), VC__SEVERITY__NOTICE, "version", ver, NULL);
    for (size_t i = 0; i < s->nkids; i++) {
        if (s->kids[i].pid <= 0 || (asker && strcmp(s->kids[i].name, asker) == 0))
            continue;
        if (replace_if_walled_anew(s, &s->kids[i], i < nwalls ? walls[i] : NULL, op))
            continue;
        if (s->kids[i].how->reload_by_replacing) {
            /* A front applies a configuration by being replaced; the
             * command is answered once its successor serves. */
            sup_replace(s, &s->kids[i], op);
            continue;
        }
        char *name = vc_asprintf("ctl-%s", s->kids[i].name);
        char *ep = vc_config_endpoint(s->cfg, name);
        Vc__Reply *r = NULL;
        int rc = vc_ctl_call(s->zctx, ep, "reload", NULL, 0, 5000, &r);
        if (rc < 0 || !r->ok)
            vc_log(VC_LOG_WARN, "up", "%s did not take the reload: %s", s->kids[i].name,
                   rc < 0 ? vc_strerror(rc) : r->message);
        if (r)
            vc__reply__free_unpacked(r, NULL);
        free(ep);
        free(name);
    }
    for (size_t i = 0; i < nwalls; i++)
        free(walls[i]);
    free(walls);
    snprintf(err, errlen, "configuration version %s loaded", ver);
    sd_notifyf(0, "READY=1\nSTATUS=configuration version %s", ver);
    return 0;
}

/* SIGHUP: a reload nobody waits for. */
static void reload_unasked(sup_t *s)
{
    char err[1024];
    sup_op_t *op = sup_op_new(NULL, "");
    sup_reload(s, op, NULL, err, sizeof(err));
    sup_op_release(s, op);
}

static void on_status(void *arg, const Vc__Command *cmd, Vc__Reply *reply)
{
    sup_t *s = arg;
    vc_reply_field(reply, "health", "ok");
    vc_reply_field(reply, "data", "%s", s->data_dir);
    /* Whether the sites' PHP is kept apart from the suite by users. */
    if (s->privs.drop)
        vc_reply_field(reply, "separation", "users%s",
                       s->userns ? " (in a user namespace: ids from /etc/subuid stand for them)" : "");
    else
        vc_reply_field(reply, "separation", "none: %s",
                       geteuid() == 0 ? "allow_root is set, everything runs as root"
                                      : "started as a normal user, the sites' PHP runs as the suite's user");
    vc_reply_field(reply, "config_version", "%llu", (unsigned long long)s->cfg->version);
    uint64_t now = vc_mono_ms();
    for (size_t i = 0; i < s->nkids; i++) {
        child_t *k = &s->kids[i];
        Vc__Record *rec = vc_reply_record(reply);
        vc_record_field(rec, "daemon", "%s", k->name);
        vc_record_field(rec, "pid", "%d", (int)k->pid);
        vc_record_field(rec, "state", "%s", k->pid <= 0 ? "restarting" : k->ready ? "running" : "starting");
        vc_record_field(rec, "restarts", "%u", k->restarts);
        vc_record_field(rec, "uptime_ms", "%llu", (unsigned long long)(k->pid > 0 ? now - k->started_ms : 0));
    }
}

static void on_reload(void *arg, const Vc__Command *cmd, Vc__Reply *reply)
{
    sup_t *s = arg;
    char msg[1024];
    if (cmd->n_args > 1) {
        vc_reply_fail(reply, "usage: reload [DAEMON]");
        return;
    }
    sup_op_t *op = sup_op_new(vc_ctl_defer(s->ctl), "");
    if (sup_reload(s, op, cmd->n_args ? cmd->args[0] : NULL, msg, sizeof(msg)) == 0)
        snprintf(op->done, sizeof(op->done), "%s", msg);
    else
        sup_op_fail(op, msg);
    sup_op_release(s, op); /* answers now, or once the fronts are replaced */
}

static void on_stop(void *arg, const Vc__Command *cmd, Vc__Reply *reply)
{
    sup_t *s = arg;
    s->stopping = 1;
    vc_reply_ok(reply, "stopping");
}

/* restart [NAME]: "front" is every front; no name is everything. */
static void on_restart(void *arg, const Vc__Command *cmd, Vc__Reply *reply)
{
    sup_t *s = arg;
    const char *what = cmd->n_args ? cmd->args[0] : "";
    size_t wl = strlen(what);
    int matched = 0;
    sup_op_t *op = sup_op_new(vc_ctl_defer(s->ctl), "");
    for (size_t i = 0; i < s->nkids; i++) {
        child_t *k = &s->kids[i];
        const char *shortname = k->name + 3;
        if (wl && strcmp(what, k->name) && strcmp(what, k->binary) && strcmp(what, shortname) &&
            strncmp(what, k->binary + 3, wl))
            continue;
        matched++;
        if (sup_overlaps(s, k)) {
            sup_replace(s, k, op); /* answered once its successor serves */
        } else if (k->pid > 0) {
            /* The others restart through the ordinary path, at once. */
            k->backoff_ms = 0;
            kill(k->pid, SIGTERM);
        }
    }
    snprintf(op->done, sizeof(op->done), "restarted %d daemon%s", matched, matched == 1 ? "" : "s");
    if (!matched) {
        char why[160];
        snprintf(why, sizeof(why), "no daemon \"%s\"", what);
        sup_op_fail(op, why);
    }
    sup_op_release(s, op);
}

static const vc_verb_t verbs[] = {
    {"status", "", "the supervisor, and a record a daemon", on_status},
    {"ping", "", "as status", on_status},
    {"reload", "[DAEMON]", "store the configuration anew and hand it to every daemon (but DAEMON, which asks)",
     on_reload},
    {"stop", "", "stop the suite", on_stop},
    {"restart", "[DAEMON]", "restart a daemon (front, php, bus, ...) or all", on_restart},
    {"site-list", "", "the site files of sites-available, a record each, enabled or not", sup_site_list},
    {"site-get", "NAME", "a site file's text (the payload)", sup_site_get},
    {"site-put", "NAME [DAEMON] (+ the file's text)", "write a site file; refused and undone if configtest refuses it",
     sup_site_put},
    {"site-enable", "NAME [DAEMON]", "enable a site (checked, then reloaded but for DAEMON, which asks)",
     sup_site_enable},
    {"site-disable", "NAME [DAEMON]", "disable a site (checked, then reloaded but for DAEMON)", sup_site_disable},
};

static void on_command(void *arg, const Vc__Command *cmd, Vc__Reply *reply)
{
    vc_verbs_run(verbs, VC_ARRAY_SIZE(verbs), arg, cmd, reply);
}

/* Root's socket, which the suite's user may reach for what its daemons
 * need, judged by which of the supervisor's children connected (the
 * kernel's pid, SO_PEERCRED): vc-fed asks a reload when a configuration
 * release switches (docs/deploys.md); vc-panel shows the daemons' states,
 * asks a reload, and changes site files (checked by configtest and the
 * path rules); any other process of the suite's user (a daemon taken over,
 * a shell as vc) only status and ping. Stop, restart and the rest stay
 * root's. docs/SECURITY.md's table says the same. */
static const char *const fed_verbs[] = {"reload", NULL};
static const char *const panel_verbs[] = {"reload",      "site-list",    "site-get", "site-put",
                                          "site-enable", "site-disable", NULL};

static int suite_caller_may(void *arg, pid_t pid, const char *verb)
{
    const sup_t *s = arg;
    const char *const *may = NULL;
    for (size_t i = 0; i < s->nkids && may == NULL; i++)
        if (s->kids[i].pid == pid && pid > 0)
            may = !strcmp(s->kids[i].name, "vc-fed")     ? fed_verbs
                  : !strcmp(s->kids[i].name, "vc-panel") ? panel_verbs
                                                         : NULL;
    for (size_t i = 0; may && may[i]; i++)
        if (!strcmp(may[i], verb))
            return 1;
    return !strcmp(verb, "status") || !strcmp(verb, "ping");
}

static void open_to_suite(sup_t *s, const char *path)
{
    if (chown(path, 0, s->privs.gid) != 0 || chmod(path, 0660) != 0)
        vc_log(VC_LOG_WARN, "up", "the control socket \"%s\" stays root's alone: %s", path, strerror(errno));
    vc_ctl_trust_callers(s->ctl, s->privs.uid, suite_caller_may, s);
}

/* ---- the command --------------------------------------------------------- */

static char *find_example_root(const char *bin_dir)
{
    /* Installed: PREFIX/bin/vc and PREFIX/share/velocity/examples/hello.
     * In the build tree: build/bin/vc and examples/hello in the source. */
    const char *candidates[] = {"../share/velocity/examples/hello/public", "../../examples/hello/public"};
    for (size_t i = 0; i < VC_ARRAY_SIZE(candidates); i++) {
        char *p = vc_asprintf("%s/%s", bin_dir, candidates[i]);
        char *real = realpath(p, NULL);
        free(p);
        if (real)
            return real;
    }
    return NULL;
}

static void add_override(sup_t *s, const char *key, const char *value)
{
    s->overrides = vc_realloc(s->overrides, (s->noverrides + 2) * sizeof(char *));
    s->overrides[s->noverrides++] = vc_strdup(key);
    s->overrides[s->noverrides++] = vc_strdup(value);
}

static void up_usage(FILE *out)
{
    fputs("usage: vc up [-d] [--root DIR] [--listen ADDR] [--tls-listen ADDR]\n"
          "             [--mode classic|worker|fork] [--workers N] [--worker-script FILE]\n"
          "             [--worker-restore] [--userns] [--no-detect]\n"
          "  Serves --root (default ./public if it exists, else the bundled example app)\n"
          "  --root DIR: Laravel, Symfony, Drupal, WordPress and MediaWiki are recognised\n"
          "  and served from the document root they need (DIR/public, DIR/web, DIR);\n"
          "  --no-detect serves DIR as it is.\n"
          "  on :8080 and :8443, with state, logs and sockets under --data (./var).\n"
          "  --userns: started as a normal user, run the daemons and each pool as users\n"
          "  of their own all the same, in a user namespace (ids from /etc/subuid).\n",
          out);
}

/* -d: the parent waits until the suite is up, then returns. */
static int daemonize(const char *log_path)
{
    int p[2];
    if (pipe(p) != 0)
        return -1;
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid > 0) {
        close(p[1]);
        char c = 0;
        ssize_t n = read(p[0], &c, 1);
        close(p[0]);
        if (n == 1 && c == 'R')
            exit(0);
        fprintf(stderr, "vc: the suite did not start; see %s\n", log_path);
        exit(1);
    }
    close(p[0]);
    setsid();
    int fd = open(log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0640); /* never through a link */
    int null = open("/dev/null", O_RDONLY);
    if (fd >= 0) {
        dup2(fd, 1);
        dup2(fd, 2);
        close(fd);
    }
    if (null >= 0) {
        dup2(null, 0);
        close(null);
    }
    return p[1];
}

/* Whether the configuration directory enables a site of its own. */
static int sites_enabled(const char *conf_dir)
{
    char err[512];
    Vc__ConfigVersion *v = conf_dir ? vc_config_gather(conf_dir, err, sizeof(err)) : NULL;
    int any = 0;
    for (size_t i = 0; v && i < v->n_files; i++)
        any |= v->files[i]->site;
    vc_config_version_free(&v);
    return any;
}

/* `vc up`'s options into s's overrides; 0, or the exit code (2 for a
 * usage error, 1 after --help: the caller returns 0 then). */
static int up_options(sup_t *s, int argc, char **argv, int *background, const char **root)
{
    static const struct option opts[] = {
        {"root", required_argument, NULL, 'r'},
        {"listen", required_argument, NULL, 'l'},
        {"tls-listen", required_argument, NULL, 't'},
        {"mode", required_argument, NULL, 'm'},
        {"workers", required_argument, NULL, 'w'},
        {"worker-script", required_argument, NULL, 's'},
        {"worker-restore", no_argument, NULL, 'R'},
        {"userns", no_argument, NULL, 'U'},
        {"no-detect", no_argument, NULL, 'D'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    optind = 1;
    for (int c; (c = getopt_long(argc, argv, "dh", opts, NULL)) != -1;) {
        switch (c) {
        case 'd': *background = 1; break;
        case 'r': *root = optarg; break;
        case 'l': add_override(s, "listen", optarg); break;
        case 't': add_override(s, "tls_listen", optarg); break;
        case 'm': add_override(s, "php.mode", optarg); break;
        case 'w': add_override(s, "php.workers", optarg); break;
        case 's': {
            char *real = realpath(optarg, NULL);
            add_override(s, "php.worker_script", real ? real : optarg);
            free(real);
            break;
        }
        case 'R': add_override(s, "php.worker_restore", "true"); break;
        case 'U': s->userns = 1; break;
        case 'D': s->no_detect = 1; break;
        case 'h': up_usage(stdout); return 1;
        default: up_usage(stderr); return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "vc up: unexpected argument \"%s\"\n", argv[optind]);
        return 2;
    }
    return 0;
}

/* path made absolute, its links left as they are: "APP/current/public"
 * stays that, so the configuration resolves it again at each reload and
 * restart and follows a `current` link a deploy tool flips
 * (docs/background.md). NULL if it is not there. */
static char *absolute_unresolved(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return NULL;
    char cwd[4096];
    char *abs = path[0] == '/' ? vc_strdup(path) : vc_asprintf("%s/%s", getcwd(cwd, sizeof(cwd)) ? cwd : "", path);
    size_t n = strlen(abs);
    while (n > 1 && abs[n - 1] == '/')
        abs[--n] = '\0';
    return abs;
}

/* The document root of the embedded default site: --root, else ./public,
 * else the example app; needed only when no site is enabled. 0 or -1. */
static int default_root(sup_t *s, const cli_t *cli, const char *root)
{
    char *root_real = NULL;
    struct stat st;
    if (root && *root) {
        root_real = absolute_unresolved(root);
        detected_t d = root_real && !s->no_detect ? detect_app(root_real) : (detected_t){0};
        if (d.app) {
            fprintf(stderr, "vc up: %s holds %s: serving %s (--no-detect serves %s as it is)\n", root_real, d.app,
                    d.root, root_real);
            free(root_real);
            root_real = absolute_unresolved(d.root);
            free(d.root);
        }
        if (d.data) {
            /* The pool's wall keeps the file system read-only but for the
             * site's tree: the application's own data beside it stays
             * writable, as php-fpm would have it. */
            fprintf(stderr, "vc up: the application keeps its data in %s: writable to its PHP (php.writable_dirs)\n",
                    d.data);
            add_override(s, "php.writable_dirs", d.data);
            free(d.data);
        }
    } else if (stat("./public", &st) == 0 && S_ISDIR(st.st_mode))
        root_real = realpath("./public", NULL);
    else
        root_real = find_example_root(cli->bin_dir);
    if (root_real == NULL && (root || !sites_enabled(cli->conf_dir))) {
        fprintf(stderr, "vc up: no document root: %s\n", root ? root : "pass --root DIR");
        return -1;
    }
    if (root_real)
        add_override(s, root && *root ? "root" : "fallback_root", root_real);
    free(root_real);
    /* The file wins over the environment for VC_ROOT: it was applied above. */
    unsetenv("VC_ROOT");
    return 0;
}

/* The suite's lock under run/, held for the suite's life (kept open,
 * inherited by the daemonized copy): of two `vc up` started together, one
 * wins, and the loser touches nothing of the winner's. The descriptor, or
 * -1 having said why. */
static int take_suite_lock(const sup_t *s, const char *run)
{
    char *lock = vc_asprintf("%s/vc.lock", run);
    int lock_fd = vc_proc_lock(lock);
    free(lock);
    if (lock_fd < 0 && errno != EWOULDBLOCK) {
        /* A link planted where the lock goes (O_NOFOLLOW refuses it), or
         * a directory we cannot write: not another suite. */
        fprintf(stderr, "vc up: cannot take the lock %s/vc.lock: %s%s\n", run, strerror(errno),
                errno == ELOOP ? " (it is a symbolic link, which the suite does not follow: remove it)" : "");
        return -1;
    }
    if (lock_fd < 0) {
        pid_t other = vc_proc_pidfile_alive(s->pidfile);
        if (other > 0)
            fprintf(stderr, "vc up: a suite already runs under %s (pid %d)\n", s->data_dir, (int)other);
        else /* it holds the lock, and has not written its pid yet */
            fprintf(stderr, "vc up: a suite is starting under %s (it holds %s/vc.lock)\n", s->data_dir, run);
        return -1;
    }
    /* Its time says when this suite started: `vc status --wait` tells a
     * suite that came and went from one that never came. */
    futimens(lock_fd, NULL);
    return lock_fd;
}

/* --userns: the trees are checked as their owners are seen from
 * outside, then the suite goes in (userns.h). 0, or -1 having said why. */
static int go_into_userns(const sup_t *s)
{
    char err[1024];
    if (privs_check_tree_outside(s->data_dir, "data directory", err, sizeof(err)) < 0 ||
        (s->conf_dir && privs_check_tree_outside(s->conf_dir, "configuration directory", err, sizeof(err)) < 0) ||
        userns_enter(err, sizeof(err)) < 0) {
        fprintf(stderr, "vc up: %s\n", err);
        return -1;
    }
    return 0;
}

/* Up to the lock: options, the default root, the data and configuration
 * directories, the user namespace. 0, or the exit code. */
static int up_begin(sup_t *s, cli_t *cli, int argc, char **argv, int *background)
{
    const char *root = getenv("VC_ROOT");
    const char *userns = getenv("VC_USERNS"); /* as --userns, for a unit file */
    s->userns = userns && strcmp(userns, "1") == 0;
    int rc = up_options(s, argc, argv, background, &root);
    if (rc)
        return rc == 1 ? -1 : rc;
    if (default_root(s, cli, root) < 0)
        return 1;
    if (vc_mkdirs(cli->data_dir, 0750) < 0 || (s->data_dir = realpath(cli->data_dir, NULL)) == NULL) {
        fprintf(stderr, "vc up: cannot create the data directory %s: %s\n", cli->data_dir, strerror(errno));
        return 1;
    }
    s->conf_dir = cli->conf_dir ? realpath(cli->conf_dir, NULL) : NULL;
    if (cli->conf_dir && s->conf_dir == NULL) {
        fprintf(stderr, "vc up: configuration directory %s: %s\n", cli->conf_dir, strerror(errno));
        return 1;
    }
    if (s->userns && go_into_userns(s) < 0)
        return 1;
    char *run = vc_asprintf("%s/run", s->data_dir);
    vc_mkdirs(run, 0700);
    s->pidfile = vc_asprintf("%s/vc.pid", run);
    int lock_fd = take_suite_lock(s, run);
    free(run);
    return lock_fd < 0 ? 1 : 0; /* the lock stays held, by the descriptor, for the suite's life */
}

/* The configuration, validated before anything starts (an error names
 * file and line), and the users it names. 0, or 1 having said why. */
static int up_check(sup_t *s)
{
    char err[1024] = "";
    s->cfg = load_config(s, err, sizeof(err));
    if (s->cfg == NULL) {
        fprintf(stderr, "vc up: %s\n", err);
        return 1;
    }
    vc_log_set_level(s->cfg->log_level);
    vc_log_set_json(s->cfg->log_json);
    if (privs_resolve(&s->privs, s->cfg, err, sizeof(err)) < 0 ||
        privs_check_tree(&s->privs, s->data_dir, "data directory", err, sizeof(err)) < 0 ||
        (s->conf_dir && privs_check_tree(&s->privs, s->conf_dir, "configuration directory", err, sizeof(err)) < 0)) {
        fprintf(stderr, "vc up: %s\n", err);
        return 1;
    }
    vc_mkdirs(s->cfg->log_dir, 0750);
    return 0;
}

/* The store, the configuration stored in it, the control socket, the TLS
 * ticket keys and the data directory's owners. 0, or 1 (logged). */
static int up_open(sup_t *s)
{
    char err[1024] = "";
    s->store = vc_store_open(s->cfg->state_dir, (size_t)s->cfg->store.map_size, err, sizeof(err));
    vc_config_destroy(&s->cfg);
    if (s->store == NULL || (s->cfg = load_config(s, err, sizeof(err))) == NULL) {
        vc_log(VC_LOG_CRIT, "up", "%s", err);
        return 1;
    }
    vc_curve_use(s->cfg->curve_secret_key); /* ZeroMQ over TCP; a change needs a restart */
    s->sigfd = vc_proc_signalfd();
    vc_proc_pidfile_write(s->pidfile);
    s->zctx = zmq_ctx_new();
    char *ctl_ep = vc_config_endpoint(s->cfg, "ctl-vc");
    s->ctl = vc_ctl_new(s->zctx, ctl_ep, "vc", on_command, s);
    if (s->ctl)
        vc_ctl_publish(s->ctl); /* the only one: `vc up` refused a second */
    if (s->ctl && s->privs.drop && strncmp(ctl_ep, "ipc://", 6) == 0)
        open_to_suite(s, ctl_ep + 6);
    free(ctl_ep);
    if (s->ctl == NULL)
        return 1;
    s->started_ms = vc_mono_ms();
    /* Session ticket keys every front shares, rotated from here. */
    char *tls_dir = vc_asprintf("%s/tls", s->data_dir);
    vc_mkdirs(tls_dir, 0700);
    s->tickets = vc_asprintf("%s/tickets", tls_dir);
    free(tls_dir);
    if (vc_tickets_rotate(s->tickets, VC_TICKETS_ROTATE_S) < 0)
        vc_log(VC_LOG_WARN, "up", "cannot write the TLS ticket keys \"%s\"", s->tickets);
    if (privs_prepare(&s->privs, s->cfg, s->data_dir, err, sizeof(err)) < 0 ||
        walls_check(s->cfg, err, sizeof(err)) < 0) {
        vc_log(VC_LOG_CRIT, "up", "%s", err);
        return 1;
    }
    return 0;
}

/* The ports, bound here once and handed to every front; those systemd
 * bound for us (velocity.socket) are taken as they are. A taken admin
 * port is an error too: the other holder would answer for our metrics.
 * 0, or 1 (logged). */
static int up_bind(sup_t *s)
{
    int nsystemd = sd_listen_fds(1);
    for (int i = 0; i < nsystemd; i++)
        vc_listen_adopt(SD_LISTEN_FDS_START + i);
    for (size_t i = 0; i < s->cfg->nlisten; i++)
        if (vc_listen_open(s->cfg->listen[i], VC_LISTEN_HTTP, &s->listeners, &s->nlisteners) < 0)
            return 1;
    for (size_t i = 0; i < s->cfg->ntls_listen; i++)
        if (vc_listen_open(s->cfg->tls_listen[i], VC_LISTEN_HTTPS, &s->listeners, &s->nlisteners) < 0)
            return 1;
    if (s->cfg->admin_listen && *s->cfg->admin_listen &&
        vc_listen_open(s->cfg->admin_listen, VC_LISTEN_ADMIN, &s->listeners, &s->nlisteners) < 0)
        return 1;
    vc_listen_adopted_unused();
    return 0;
}

/* Every daemon is ready: said on the bus, in the log, to systemd
 * (Type=notify) and to the parent that waits in `vc up -d`. */
static void up_announce(sup_t *s, int *ready_fd)
{
    vc_bus_publish(s->bus, VC_EVENT(VC_STARTED), VC__SEVERITY__INFO, "data", s->data_dir, NULL);
    vc_log(VC_LOG_NOTICE, "up", "suite running: http %s, https %s, root %s", s->cfg->listen[0],
           s->cfg->ntls_listen ? s->cfg->tls_listen[0] : "off", s->cfg->sites[0].root);
    sd_notifyf(0, "READY=1\nSTATUS=serving http %s, https %s", s->cfg->listen[0],
               s->cfg->ntls_listen ? s->cfg->tls_listen[0] : "off");
    if (*ready_fd >= 0) {
        ssize_t unused = write(*ready_fd, "R", 1);
        (void)unused;
        close(*ready_fd);
        *ready_fd = -1;
    }
}

/* The stop: successors, then every daemon, then what the suite held. */
static void up_end(sup_t *s, int ready_fd)
{
    sd_notify(0, "STOPPING=1");
    vc_log(VC_LOG_NOTICE, "up", "stopping the suite");
    sup_successors_stop(s);
    sup_stop_children(s);
    if (ready_fd >= 0)
        close(ready_fd);
    vc_bus_destroy(&s->bus);
    vc_ctl_destroy(&s->ctl);
    zmq_ctx_term(s->zctx);
    unlink(s->pidfile);
    free(s->pidfile);
    vc_listen_free(&s->listeners, &s->nlisteners, 1);
    free(s->tickets);
    vc_config_destroy(&s->cfg);
    vc_store_destroy(&s->store);
    for (size_t i = 0; i < s->noverrides; i++)
        free(s->overrides[i]);
    free(s->overrides);
    free(s->data_dir);
    free(s->conf_dir);
    free(s->kids);
    free(s->retiring);
    privs_fini(&s->privs);
    vc_log(VC_LOG_NOTICE, "up", "stopped");
}

int cmd_up(cli_t *cli, int argc, char **argv)
{
    sup_t s = {.cli = cli, .sigfd = -1, .on_hup = reload_unasked};
    int background = 0;
    int rc = up_begin(&s, cli, argc, argv, &background);
    if (rc)
        return rc < 0 ? 0 : rc; /* -1: --help */
    if (up_check(&s))
        return 1;
    int ready_fd = -1;
    if (background) {
        char *log_path = vc_asprintf("%s/vc.log", s.cfg->log_dir);
        ready_fd = daemonize(log_path);
        free(log_path);
    }
    if (up_open(&s) || up_bind(&s))
        return 1;
    sup_plan(&s);
    if (sup_start_all(&s) == 0)
        up_announce(&s, &ready_fd);
    sup_run(&s);
    up_end(&s, ready_fd);
    return 0;
}
