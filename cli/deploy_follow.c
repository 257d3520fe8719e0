/*
 * What a site's release hooks print in its pool (before_switch,
 * after_switch), shown by `vc deploy` as it comes: vc-php publishes each
 * line (php.hook.output, live only), and this thread reads the bus's
 * events for them while vc-fed switches. The release's log keeps it all
 * (`vc releases SITE --log`); a line the bus dropped is only there.
 */
#include "deploy.h"
#include "vc_bus.h"
#include "vc_config.h"
#include "vc_events.h"
#include "vc_util.h"
#include "vc_zmq.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

/* How long the bus may take to say it has the subscription. */
#define WELCOME_WAIT_MS 2000

struct deploy_follow {
    void *sub;
    char *site;
    pthread_t thread;
    atomic_int stop;
    atomic_size_t printed;
};

static const char *field(const Vc__Envelope *ev, const char *key)
{
    for (size_t i = 0; i < ev->n_fields; i++)
        if (strcmp(ev->fields[i]->key, key) == 0)
            return ev->fields[i]->value;
    return NULL;
}

/* One message: 1 if it was the bus's welcome. */
static int take(deploy_follow_t *f, vc_zparts_t *fr)
{
    if (fr->n == 1)
        return zmq_msg_size(&fr->f[0]) == strlen(VC_BUS_WELCOME) &&
               memcmp(zmq_msg_data(&fr->f[0]), VC_BUS_WELCOME, strlen(VC_BUS_WELCOME)) == 0;
    if (fr->n != 2)
        return 0;
    Vc__Envelope *ev = vc__envelope__unpack(NULL, zmq_msg_size(&fr->f[1]), zmq_msg_data(&fr->f[1]));
    if (ev == NULL)
        return 0;
    const char *site = field(ev, "site"), *line = field(ev, "line");
    if (site && line && strcmp(site, f->site) == 0 && strncmp(ev->source, "vc-php", 6) == 0) {
        printf("  | %s\n", line);
        fflush(stdout);
        atomic_fetch_add(&f->printed, 1);
    }
    vc__envelope__free_unpacked(ev, NULL);
    return 0;
}

static void *follow(void *arg)
{
    deploy_follow_t *f = arg;
    vc_zparts_t fr = {0};
    zmq_pollitem_t it = {.socket = f->sub, .events = ZMQ_POLLIN};
    while (!atomic_load(&f->stop)) {
        if (zmq_poll(&it, 1, 100) <= 0)
            continue;
        while (vc_zparts_recv(f->sub, &fr, ZMQ_DONTWAIT) > 0) {
            take(f, &fr);
            vc_zparts_close(&fr);
        }
    }
    vc_zparts_fini(&fr);
    return NULL;
}

deploy_follow_t *deploy_follow_start(void *zctx, const struct vc_config *cfg, const char *site)
{
    char *ep = vc_config_endpoint(cfg, "bus-out");
    void *sub = vc_socket(zctx, ZMQ_SUB, ep, 0);
    free(ep);
    if (sub == NULL)
        return NULL;
    const char *topic = VC_EVENT(PHP_HOOK_OUTPUT);
    zmq_setsockopt(sub, ZMQ_SUBSCRIBE, topic, strlen(topic));
    zmq_setsockopt(sub, ZMQ_SUBSCRIBE, VC_BUS_WELCOME, strlen(VC_BUS_WELCOME));
    deploy_follow_t *f = vc_calloc(1, sizeof(*f));
    f->sub = sub;
    f->site = vc_strdup(site);
    /* The first lines come as soon as the switch starts: not before the
     * bus has the subscription. */
    vc_zparts_t fr = {0};
    zmq_pollitem_t it = {.socket = sub, .events = ZMQ_POLLIN};
    uint64_t until = vc_mono_ms() + WELCOME_WAIT_MS;
    int welcomed = 0;
    while (!welcomed && vc_mono_ms() < until && zmq_poll(&it, 1, 100) >= 0)
        while (!welcomed && vc_zparts_recv(sub, &fr, ZMQ_DONTWAIT) > 0) {
            welcomed = take(f, &fr);
            vc_zparts_close(&fr);
        }
    vc_zparts_fini(&fr);
    if (pthread_create(&f->thread, NULL, follow, f) != 0) {
        zmq_close(sub);
        free(f->site);
        free(f);
        return NULL;
    }
    return f;
}

size_t deploy_follow_stop(deploy_follow_t *f)
{
    if (f == NULL)
        return 0;
    /* Lines still on their way from the pool (its last ones come just
     * before the switch's answer): a moment to take them. */
    uint64_t until = vc_mono_ms() + 200;
    while (vc_mono_ms() < until)
        nanosleep(&(struct timespec){0, 20000000}, NULL);
    atomic_store(&f->stop, 1);
    pthread_join(f->thread, NULL);
    size_t n = atomic_load(&f->printed);
    zmq_close(f->sub);
    free(f->site);
    free(f);
    return n;
}
