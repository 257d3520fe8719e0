/*
 * Counters of the sites' background work (work_metrics.h), from the
 * events their pools publish. A pool runs as its own user and may not
 * write RUN/metrics, so the bus, which sees every event, counts for it.
 */
#include "work_metrics.h"
#include "vc_events.h"
#include "vc_log.h"
#include "vc_metrics.h"
#include "vc_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The events counted, by the suffix of their topic after "php.background."
 * or "php.schedule.". */
static const char *const background_events[] = {"started", "exited", "restarted", "failed"};
static const char *const schedule_events[] = {"started", "skipped", "finished", "failed"};
#define EVENTS 4

typedef struct series {
    char *site, *name, *source; /* source: the pool that may speak of it ("vc-php", "vc-php.NAME") */
    int schedule;
    uint64_t count[EVENTS];
} series_t;

struct work_metrics {
    series_t *s;
    size_t n;
    uint64_t next_ms, failed;
};

work_metrics_t *work_metrics_new(void)
{
    return vc_calloc(1, sizeof(work_metrics_t));
}

static void forget(work_metrics_t *w, series_t **old, size_t *nold)
{
    *old = w->s;
    *nold = w->n;
    w->s = NULL;
    w->n = 0;
}

static void free_series(series_t *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(s[i].site);
        free(s[i].name);
        free(s[i].source);
    }
    free(s);
}

/* Adds one series, keeping its counts from before a reload. */
static void add(work_metrics_t *w, const vc_site_t *site, const char *name, int schedule, const series_t *old,
                size_t nold)
{
    w->s = vc_realloc(w->s, (w->n + 1) * sizeof(*w->s));
    series_t *s = &w->s[w->n++];
    memset(s, 0, sizeof(*s));
    s->site = vc_strdup(site->name);
    s->name = vc_strdup(name);
    int named = site->pool && strcmp(site->pool, "default") != 0;
    s->source = vc_asprintf("vc-php%s%s", named ? "." : "", named ? site->pool : "");
    s->schedule = schedule;
    for (size_t i = 0; i < nold; i++)
        if (!strcmp(old[i].site, s->site) && !strcmp(old[i].name, s->name) && old[i].schedule == schedule)
            memcpy(s->count, old[i].count, sizeof(s->count));
}

void work_metrics_configure(work_metrics_t *w, const vc_config_t *cfg)
{
    series_t *old;
    size_t nold;
    forget(w, &old, &nold);
    for (size_t i = 0; i < cfg->nsites; i++) {
        const vc_site_t *site = &cfg->sites[i];
        for (size_t k = 0; k < site->nbackground; k++)
            add(w, site, site->background[k].name, 0, old, nold);
        for (size_t k = 0; k < site->nschedule; k++) {
            char name[32];
            snprintf(name, sizeof(name), "schedule:%zu", k + 1);
            add(w, site, name, 1, old, nold);
        }
    }
    free_series(old, nold);
}

static const char *field(const Vc__Envelope *env, const char *key)
{
    for (size_t i = 0; i < env->n_fields; i++)
        if (strcmp(env->fields[i]->key, key) == 0)
            return env->fields[i]->value;
    return NULL;
}

void work_metrics_count(work_metrics_t *w, const Vc__Envelope *env)
{
    const char *kind = NULL;
    int schedule = 0;
    if (strncmp(env->topic, "php.background.", 15) == 0)
        kind = env->topic + 15;
    else if (strncmp(env->topic, "php.schedule.", 13) == 0)
        kind = env->topic + 13, schedule = 1;
    if (kind == NULL)
        return;
    const char *const *names = schedule ? schedule_events : background_events;
    int which = -1;
    for (int i = 0; i < EVENTS; i++)
        if (strcmp(kind, names[i]) == 0)
            which = i;
    const char *site = field(env, "site"), *name = field(env, "name");
    if (which < 0 || site == NULL || name == NULL)
        return;
    /* Only what the configuration names, from the pool that runs it: a
     * pool's scripts can publish its events, not grow the series. */
    for (size_t i = 0; i < w->n; i++) {
        series_t *s = &w->s[i];
        if (s->schedule == schedule && !strcmp(s->site, site) && !strcmp(s->name, name) &&
            !strcmp(s->source, env->source)) {
            s->count[which]++;
            return;
        }
    }
}

/* A label's value as Prometheus's text format escapes it (a site's name
 * is its file's: any character but '/'). */
static void label(FILE *out, const char *v)
{
    for (; *v; v++) {
        if (*v == '\\' || *v == '"')
            fputc('\\', out);
        if (*v == '\n')
            fputs("\\n", out);
        else
            fputc(*v, out);
    }
}

static void write_all(FILE *out, const void *arg)
{
    const work_metrics_t *w = arg;
    static const struct {
        const char *name, *help, *label;
        int schedule;
    } families[] = {
        {"vc_background_events_total",
         "A site's background processes: started, exited (by themselves or stopped), restarted, failed "
         "(start_retries starts in a row).",
         "event", 0},
        {"vc_schedule_runs_total",
         "A site's schedule entries' runs: started, skipped (the last run still ran), finished (exit 0), failed.",
         "outcome", 1},
    };
    for (size_t f = 0; f < VC_ARRAY_SIZE(families); f++) {
        fprintf(out, "# HELP %s %s\n# TYPE %s counter\n", families[f].name, families[f].help, families[f].name);
        const char *const *names = families[f].schedule ? schedule_events : background_events;
        for (size_t i = 0; i < w->n; i++) {
            const series_t *s = &w->s[i];
            if (s->schedule != families[f].schedule)
                continue;
            for (int e = 0; e < EVENTS; e++) {
                fprintf(out, "%s{site=\"", families[f].name);
                label(out, s->site);
                fputs("\",name=\"", out);
                label(out, s->name); /* a-z, 0-9, _ and - (configtest), or "schedule:N" */
                fprintf(out, "\",%s=\"%s\"} %llu\n", families[f].label, names[e], (unsigned long long)s->count[e]);
            }
        }
    }
}

void work_metrics_tick(work_metrics_t *w, const vc_config_t *cfg)
{
    uint64_t now = vc_mono_ms();
    if (now < w->next_ms)
        return;
    w->next_ms = now + 1000;
    int r = vc_metrics_publish_from(cfg, "vc-bus", write_all, w);
    if (r < 0 && w->failed++ == 0)
        vc_log(VC_LOG_WARN, "metrics", "the background work's metrics could not be written: %s", vc_strerror(r));
}

void work_metrics_free(work_metrics_t **pw)
{
    if (*pw == NULL)
        return;
    free_series((*pw)->s, (*pw)->n);
    free(*pw);
    *pw = NULL;
}
