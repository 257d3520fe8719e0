/*
 * The cache's warm-up from the panel: `vc cache warm --sitemap URL --json
 * --events ID`, the command an operator would type, started with an
 * argument vector (no shell), as the panel's own user, one at a time.
 * Its progress comes back over the bus (cache.warm.progress each second,
 * cache.warm.done at the end; live.c hands them here), and the cache page
 * asks GET /api/cache/warm for it.
 */
#include "warm.h"
#include "forms.h"
#include "panel.h"
#include "vc_events.h"
#include "vc_util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <sodium.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static struct {
    pid_t pid;     /* the command, while it runs */
    char id[24];   /* its --events id */
    char *sitemap; /* what it warms */
    json_t *last;  /* its last progress or end, as fields */
    int done;      /* cache.warm.done came, or the command ended without it */
    int64_t started_ms;
} warming;

void warm_heard(const Vc__Envelope *e)
{
    const char *id = NULL;
    for (size_t i = 0; i < e->n_fields; i++)
        if (strcmp(e->fields[i]->key, "id") == 0)
            id = e->fields[i]->value;
    if (id == NULL || strcmp(id, warming.id) != 0)
        return; /* another's (a `vc cache warm --events` by hand) */
    json_decref(warming.last);
    warming.last = json_object();
    for (size_t i = 0; i < e->n_fields; i++)
        json_object_set_new(warming.last, e->fields[i]->key, json_string(e->fields[i]->value));
    if (strcmp(e->topic, VC_EVENT(CACHE_WARM_DONE)) == 0)
        warming.done = 1;
}

void warm_tick(void)
{
    int status;
    if (warming.pid <= 0 || waitpid(warming.pid, &status, WNOHANG) != warming.pid)
        return;
    warming.pid = 0;
    if (!warming.done) { /* it ended without saying how: said here */
        warming.done = 1;
        if (warming.last == NULL)
            warming.last = json_object();
        char why[64];
        snprintf(why, sizeof(why), "vc cache warm ended (%s %d) before saying how it went",
                 WIFEXITED(status) ? "status" : "signal", WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
        json_object_set_new(warming.last, "result", json_string(why));
    }
}

/* vc, beside the panel's own binary. */
static char *vc_path(void)
{
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (n <= 0)
        return NULL;
    self[n] = '\0';
    char *slash = strrchr(self, '/');
    if (slash == NULL)
        return NULL;
    *slash = '\0';
    return vc_asprintf("%s/vc", self);
}

static int spawn(panel_t *p, const char *sitemap, const char *id)
{
    char *vc = vc_path();
    const char *argv[16];
    size_t n = 0;
    argv[n++] = "vc";
    argv[n++] = "--data";
    argv[n++] = p->d.data_dir;
    if (p->d.conf_dir) {
        argv[n++] = "--conf";
        argv[n++] = p->d.conf_dir;
    }
    const char *rest[] = {"cache", "warm", "--sitemap", sitemap, "--json", "--events", id, NULL};
    for (size_t i = 0; i < VC_ARRAY_SIZE(rest); i++)
        argv[n++] = rest[i];
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    for (int fd = 0; fd < 3; fd++) /* what it says goes on the bus */
        posix_spawn_file_actions_addopen(&fa, fd, "/dev/null", fd ? O_WRONLY : O_RDONLY, 0);
    posix_spawnattr_t at;
    posix_spawnattr_init(&at);
    sigset_t none, dfl;
    sigemptyset(&none);
    sigemptyset(&dfl);
    sigaddset(&dfl, SIGPIPE);
    sigaddset(&dfl, SIGTERM);
    posix_spawnattr_setsigmask(&at, &none); /* ours are blocked for the signalfd */
    posix_spawnattr_setsigdefault(&at, &dfl);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    int rc = vc ? posix_spawn(&warming.pid, vc, &fa, &at, (char *const *)argv, environ) : -1;
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    free(vc);
    return rc;
}

/* POST /api/cache/warm {"sitemap": URL} */
static void start(preq_t *r)
{
    const char *sitemap = form_str(r->body, "sitemap", 2048);
    int ok = sitemap && (strncmp(sitemap, "http://", 7) == 0 || strncmp(sitemap, "https://", 8) == 0);
    for (const char *c = sitemap; ok && *c; c++)
        ok = (unsigned char)*c > ' ' && *c != 0x7f;
    if (!ok) {
        http_error(r, 400, "a warm-up is {\"sitemap\": an http:// or https:// URL}");
        return;
    }
    warm_tick(); /* one that just ended is reaped first */
    if (warming.pid > 0) {
        http_error(r, 409, "a warm-up of %s is running", warming.sitemap);
        return;
    }
    unsigned char raw[8];
    randombytes_buf(raw, sizeof(raw));
    sodium_bin2hex(warming.id, sizeof(warming.id), raw, sizeof(raw));
    json_decref(warming.last);
    warming.last = NULL;
    warming.done = 0;
    free(warming.sitemap);
    warming.sitemap = vc_strdup(sitemap);
    warming.started_ms = vc_wall_ms();
    int rc = spawn(r->p, sitemap, warming.id);
    audit_record(r, "cache.warm", sitemap, rc == 0 ? "ok" : "vc could not be started");
    if (rc != 0) {
        warming.pid = 0;
        http_error(r, 500, "vc could not be started: %s", strerror(rc > 0 ? rc : errno));
        return;
    }
    http_json(r, 200, json_pack("{s:b,s:s}", "ok", 1, "id", warming.id));
}

/* GET /api/cache/warm: the last warm-up, running or ended. */
static void state(preq_t *r)
{
    warm_tick();
    if (warming.sitemap == NULL) {
        http_json(r, 200, json_pack("{s:b}", "running", 0));
        return;
    }
    /* Running until the command is gone: a new one may start then. */
    http_json(r, 200,
              json_pack("{s:b,s:s,s:s,s:I,s:O?}", "running", warming.pid > 0, "id", warming.id, "sitemap",
                        warming.sitemap, "started_ms", (json_int_t)warming.started_ms, "progress", warming.last));
}

/* clang-format off */
const route_t warm_routes[] = {
    {"POST", "/api/cache/warm", ACCESS_ADMIN, start},
    {"GET", "/api/cache/warm", ACCESS_VIEWER, state},
};
/* clang-format on */
const size_t warm_nroutes = VC_ARRAY_SIZE(warm_routes);
