#include "vc_daemon.h"
#include "vc_events.h"
#include "vc_confstore.h"
#include "vc_curve.h"
#include "vc_log.h"
#include "vc_proc.h"
#include "vc_util.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zmq.h>

static void usage(const char *name, FILE *out)
{
    fprintf(out,
            "usage: %s --data DIR [--conf DIR] [--health]\n"
            "  Runs one daemon of the Velocity suite; `vc up` starts it for you.\n"
            "  --data DIR   the suite's data directory (or VC_DATA)\n"
            "  --conf DIR   run alone, without `vc up` (a container): the configuration\n"
            "               is read from DIR and the environment, not from the store\n"
            "  --health     ask the running daemon whether it is healthy: exit 0 if so\n",
            name);
}

/* What `vc up` makes before it starts a daemon, made by the daemon itself
 * when it runs alone: the log directory and, for a pool, its sessions and
 * temporary files (TMPDIR, for the programs a script runs). */
static void prepare_alone(vc_daemon_t *d)
{
    vc_mkdirs(d->cfg->log_dir, 0750);
    vc_mkdirs(d->cfg->state_dir, 0700);
    if (strncmp(d->name, "vc-php", 6) != 0)
        return;
    char *home = vc_config_pool_home(d->data_dir, d->cfg->php.name);
    char *sessions = vc_asprintf("%s/sessions", home), *tmp = vc_asprintf("%s/tmp", home);
    vc_mkdirs(sessions, 0700);
    vc_mkdirs(tmp, 0700);
    setenv("TMPDIR", tmp, 1);
    free(sessions);
    free(tmp);
    free(home);
}

int vc_daemon_health(const vc_daemon_t *d)
{
    char *ep = vc_asprintf("ctl-%s", d->name);
    char *ctl_ep = vc_config_endpoint(d->cfg, ep);
    void *zctx = zmq_ctx_new();
    Vc__Reply *reply = NULL;
    int r = vc_ctl_call(zctx, ctl_ep, "status", NULL, 0, 2000, &reply);
    const char *health = reply ? vc_reply_get(reply, "health") : NULL;
    int ok = r == 0 && reply->ok && (health == NULL || strcmp(health, "ok") == 0);
    if (ok)
        printf("%s: healthy: %s\n", d->name, reply->message ? reply->message : "");
    else
        fprintf(stderr, "%s: not healthy: %s (%s)\n", d->name,
                r < 0            ? vc_strerror(r)
                : health         ? health
                : reply->message ? reply->message
                                 : "refused",
                ctl_ep);
    if (reply)
        vc__reply__free_unpacked(reply, NULL);
    zmq_ctx_term(zctx);
    free(ep);
    free(ctl_ep);
    return ok ? 0 : 1;
}

void vc_daemon_load(vc_daemon_t *d, const char *name, int argc, char **argv)
{
    memset(d, 0, sizeof(*d));
    d->name = name;
    vc_proc_ready_take();
    /* A second copy of a daemon (several fronts) is "vc-front.1": its own
     * pid file and control endpoint. */
    const char *inst = getenv("VC_INSTANCE");
    static char named[48];
    if (inst && atoi(inst) > 0) {
        snprintf(named, sizeof(named), "%s.%d", name, atoi(inst));
        d->name = named;
    }
    /* A named PHP pool is "vc-php.shop": its own pid file, control
     * endpoint and directory (vc_config_run_dir_of). */
    const char *pool = getenv("VC_POOL");
    if (pool && *pool && strcmp(pool, "default") != 0) {
        snprintf(named, sizeof(named), "%s.%s", name, pool);
        d->name = named;
    }
    d->sigfd = -1;
    const char *data = getenv("VC_DATA"), *conf = NULL;
    int health = 0;
    static const struct option opts[] = {
        {"data", required_argument, NULL, 'd'}, {"conf", required_argument, NULL, 'c'},
        {"health", no_argument, NULL, 'H'},     {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},    {NULL, 0, NULL, 0},
    };
    for (int c; (c = getopt_long(argc, argv, "d:hV", opts, NULL)) != -1;) {
        switch (c) {
        case 'd': data = optarg; break;
        case 'c': conf = optarg; break;
        case 'H': health = 1; break;
        case 'h': usage(name, stdout); exit(0);
        case 'V': printf("%s %s\n", name, VC_VERSION); exit(0);
        default: usage(name, stderr); exit(2);
        }
    }
    if (data == NULL) {
        usage(name, stderr);
        exit(2);
    }
    /* Alone, nobody made it for us (an empty volume is the usual start). */
    if (conf && !health)
        vc_mkdirs(data, 0750);
    d->data_dir = realpath(data, NULL);
    vc_log_init(name, VC_LOG_INFO, getenv("VC_LOG_FORMAT") && !strcmp(getenv("VC_LOG_FORMAT"), "json"), 2);
    if (d->data_dir == NULL) {
        vc_log(VC_LOG_CRIT, "main", "realpath() failed while opening the data directory \"%s\"", data);
        exit(1);
    }
    char err[1024] = "";
    if (conf) {
        /* "--conf ''": no files, the built-in defaults and the environment. */
        char *real = *conf ? realpath(conf, NULL) : vc_strdup("");
        if (real == NULL) {
            vc_log(VC_LOG_CRIT, "main", "the configuration directory \"%s\" does not exist (--conf)", conf);
            exit(1);
        }
        vc_confstore_use_files(*real ? real : NULL);
        if (strncmp(name, "vc-front", 8) != 0 && strncmp(name, "vc-php", 6) != 0)
            vc_config_roots_elsewhere();
        d->conf_dir = real;
    }
    d->cfg = vc_confstore_load(d->data_dir, err, sizeof(err));
    if (d->cfg == NULL) {
        vc_log(VC_LOG_CRIT, "main", "cannot load the configuration: %s", err);
        exit(1);
    }
    if (vc_config_select_pool(d->cfg, pool) < 0) {
        vc_log(VC_LOG_CRIT, "main", "the pool \"%s\" is not in the configuration", pool);
        exit(1);
    }
    vc_log_set_level(d->cfg->log_level);
    vc_log_set_json(d->cfg->log_json);
    vc_curve_use(d->cfg->curve_secret_key); /* checked by the configuration */
    if (health)
        exit(vc_daemon_health(d));
    if (d->conf_dir && geteuid() == 0 && !d->cfg->allow_root) {
        /* Nobody would drop root for us: PHP would run as root. */
        vc_log(VC_LOG_CRIT, "main",
               "run alone (--conf), %s would stay root: start it as an unprivileged user (a container's USER), "
               "or set allow_root = true",
               d->name);
        exit(1);
    }
    if (d->conf_dir)
        prepare_alone(d);
}

void vc_daemon_start(vc_daemon_t *d, vc_ctl_fn fn, void *ctx)
{
    d->sigfd = vc_proc_signalfd();
    if (d->sigfd < 0) {
        vc_log(VC_LOG_CRIT, "main", "signalfd() failed: %s", vc_strerror(d->sigfd));
        exit(1);
    }
    char *run_dir = vc_config_run_dir_of(d->cfg, d->name);
    vc_mkdirs(run_dir, 0700);
    d->pidfile = vc_asprintf("%s/%s.pid", run_dir, d->name);
    free(run_dir);
    pid_t other = vc_proc_pidfile_ours(d->pidfile);
    /* VC_REPLACING: the supervisor starts us to take over from a running
     * copy, which stops once we are ready. */
    int replacing = getenv("VC_REPLACING") != NULL;
    unsetenv("VC_REPLACING");
    if (other > 0 && other != getpid() && !replacing) {
        vc_log(VC_LOG_CRIT, "main", "%s already runs as pid %d (%s)", d->name, (int)other, d->pidfile);
        exit(1);
    }
    vc_proc_pidfile_write(d->pidfile);
    d->zctx = zmq_ctx_new();
    char *ep = vc_asprintf("ctl-%s", d->name);
    char *ctl_ep = vc_config_endpoint(d->cfg, ep);
    d->ctl = vc_ctl_new(d->zctx, ctl_ep, d->name, fn, ctx);
    free(ep);
    free(ctl_ep);
    if (d->ctl == NULL)
        exit(1);
    /* Started by a root supervisor: commands only from it and the suite's
     * user (a pool's scripts share the pool's user). */
    const char *suite_uid = getenv("VC_SUITE_UID");
    if (suite_uid && *suite_uid)
        vc_ctl_trust(d->ctl, (uid_t)strtoul(suite_uid, NULL, 10));
    if (!d->binds_bus)
        vc_daemon_connect_bus(d);
}

void vc_daemon_connect_bus(vc_daemon_t *d)
{
    char *bus_ep = vc_config_endpoint(d->cfg, "bus-in");
    d->bus = vc_bus_new(d->zctx, bus_ep, d->name);
    free(bus_ep);
}

/* "vc-php" -> "php", "vc-front.1" -> "front": the first part of the
 * daemon's topics. */
static const char *short_name(const char *name, char *buf, size_t len)
{
    snprintf(buf, len, "%s", strncmp(name, "vc-", 3) == 0 ? name + 3 : name);
    char *dot = strchr(buf, '.');
    if (dot)
        *dot = '\0';
    return buf;
}

void vc_daemon_announce(vc_daemon_t *d)
{
    if (d->announced)
        return;
    d->announced = 1;
    char topic[64], pid[16], buf[48];
    vc_event_topic_of(VC_EV_DAEMON_STARTED, short_name(d->name, buf, sizeof(buf)), topic, sizeof(topic));
    snprintf(pid, sizeof(pid), "%d", (int)getpid());
    vc_bus_publish(d->bus, topic, VC__SEVERITY__INFO, "daemon", d->name, "pid", pid, "version", VC_VERSION, NULL);
}

void vc_daemon_ready(vc_daemon_t *d)
{
    vc_ctl_publish(d->ctl);
    vc_daemon_announce(d);
    vc_log(VC_LOG_INFO, "main", "%s %s ready", d->name, VC_VERSION);
    vc_proc_ready();
}

void vc_daemon_reload(vc_daemon_t *d, void (*apply)(void *arg, const vc_config_t *cfg), void *arg, Vc__Reply *reply)
{
    char err[512];
    vc_config_t *cfg = vc_confstore_load(d->data_dir, err, sizeof(err));
    if (cfg == NULL) {
        vc_reply_fail(reply, "%s", err);
        return;
    }
    if (apply)
        apply(arg, cfg);
    vc_config_destroy(&d->cfg);
    d->cfg = cfg;
    vc_reply_ok(reply, "reloaded");
}

void vc_daemon_fini(vc_daemon_t *d)
{
    if (d->bus) {
        char topic[64], buf[48];
        vc_event_topic_of(VC_EV_DAEMON_STOPPED, short_name(d->name, buf, sizeof(buf)), topic, sizeof(topic));
        vc_bus_publish(d->bus, topic, VC__SEVERITY__INFO, "daemon", d->name, NULL);
    }
    vc_bus_destroy(&d->bus);
    vc_ctl_destroy(&d->ctl);
    if (d->zctx)
        zmq_ctx_term(d->zctx);
    d->zctx = NULL;
    /* A replacement may own the pid file by now. */
    if (d->pidfile && vc_proc_pidfile_alive(d->pidfile) == getpid())
        unlink(d->pidfile);
    free(d->pidfile);
    vc_config_destroy(&d->cfg);
    free(d->data_dir);
    free(d->conf_dir);
    if (d->sigfd >= 0)
        close(d->sigfd);
}
