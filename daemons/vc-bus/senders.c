#include "senders.h"
#include "vc_log.h"
#include "vc_util.h"
#include "vc_zmq.h"

#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* One pool's user: its pool's name as its events name their source. */
typedef struct pool_user {
    uid_t uid;
    char *source; /* "vc-php" or "vc-php.NAME" */
} pool_user_t;

struct senders {
    int ipc;
    uid_t own;
    pool_user_t *pools;
    size_t npools;
    uint64_t refused;
};

static void forget(senders_t *s)
{
    for (size_t i = 0; i < s->npools; i++)
        free(s->pools[i].source);
    free(s->pools);
    s->pools = NULL;
    s->npools = 0;
}

static void add_pool(senders_t *s, const vc_pool_t *p)
{
    const char *user = p->user && *p->user ? p->user : "www-data";
    struct passwd *pw = getpwnam(user);
    if (pw == NULL)
        return; /* then it cannot have started either */
    s->pools = vc_realloc(s->pools, (s->npools + 1) * sizeof(*s->pools));
    s->pools[s->npools].uid = pw->pw_uid;
    s->pools[s->npools++].source =
        strcmp(p->name, "default") == 0 ? vc_strdup("vc-php") : vc_asprintf("vc-php.%s", p->name);
}

void senders_configure(senders_t *s, const vc_config_t *cfg)
{
    forget(s);
    add_pool(s, &cfg->php);
    for (size_t i = 0; i < cfg->npools; i++)
        add_pool(s, &cfg->pools[i]);
}

senders_t *senders_new(const vc_config_t *cfg, int ipc)
{
    senders_t *s = vc_calloc(1, sizeof(*s));
    s->ipc = ipc;
    s->own = geteuid();
    senders_configure(s, cfg);
    return s;
}

void senders_destroy(senders_t **sp)
{
    if (*sp == NULL)
        return;
    forget(*sp);
    free(*sp);
    *sp = NULL;
}

uint64_t senders_refused(const senders_t *s)
{
    return s->refused;
}

/* A pool's user speaks for the pools it runs, and only of PHP. */
static int pool_may(const senders_t *s, uid_t uid, const Vc__Envelope *env)
{
    if (strncmp(env->topic, "php.", 4) != 0)
        return 0;
    for (size_t i = 0; i < s->npools; i++)
        if (s->pools[i].uid == uid && strcmp(s->pools[i].source, env->source) == 0)
            return 1;
    return 0;
}

int senders_allow(senders_t *s, zmq_msg_t *first, const Vc__Envelope *env)
{
    if (!s->ipc)
        return 1;
    uid_t uid = (uid_t)-1;
    pid_t pid = 0;
    int known = vc_zmsg_peer(first, &uid, &pid) == 0;
    if (known && (uid == s->own || uid == 0 || pool_may(s, uid, env)))
        return 1;
    if (s->refused++ % 1000 == 0) {
        char topic[65]; /* a stranger's bytes: printable in the log */
        size_t n = 0;
        for (; env->topic[n] && n < sizeof(topic) - 1; n++)
            topic[n] = env->topic[n] > ' ' && env->topic[n] < 0x7f ? env->topic[n] : '?';
        topic[n] = '\0';
        vc_log(VC_LOG_WARN, "senders",
               "refused an event \"%s\" from uid %ld (pid %ld): only the suite's user and root publish on the "
               "bus, and a pool's user only its own pool's \"php.\" events (%llu refused so far)",
               topic, known ? (long)uid : -1L, (long)pid, (unsigned long long)s->refused);
    }
    return 0;
}
