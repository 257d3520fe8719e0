#include "pool.h"
#include "vc_log.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Requests waiting this long with no idle worker: grow. */
#define GROW_AFTER_MS 100
/* Idle workers for this long: shrink. */
#define SHRINK_AFTER_MS 10000
/* Auto: PHP workers may take this share of the memory available. */
#define AUTO_MEMORY_SHARE 0.5

long pool_mem_available_kib(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    long kib = 0;
    char line[128];
    while (f && fgets(line, sizeof(line), f))
        if (sscanf(line, "MemAvailable: %ld kB", &kib) == 1)
            break;
    if (f)
        fclose(f);
    return kib;
}

static void sizing_of(const vc_config_t *cfg, int64_t out[3])
{
    out[0] = cfg->php.workers;
    out[1] = cfg->php.min_workers;
    out[2] = cfg->php.max_workers;
}

void pool_size_init(pool_size_t *p, const vc_config_t *cfg)
{
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    p->automatic = cfg->php.workers == 0;
    p->dynamic = p->automatic || (cfg->php.min_workers > 0 && cfg->php.max_workers > 0);
    if (p->automatic) {
        p->min = cfg->php.min_workers > 0 ? cfg->php.min_workers : (ncpu > 0 ? ncpu : 2);
        p->max = cfg->php.max_workers > 0 ? cfg->php.max_workers : p->min * 8;
    } else if (p->dynamic) {
        p->min = cfg->php.min_workers;
        p->max = cfg->php.max_workers;
    } else {
        p->min = p->max = cfg->php.workers;
    }
    p->target = p->min;
    p->pressure_since_ms = p->idle_since_ms = 0;
    p->scaled = 0;
    sizing_of(cfg, p->scaled_under);
}

void pool_size_set(pool_size_t *p, int64_t n)
{
    p->dynamic = p->automatic = 0;
    p->min = p->max = p->target = n;
    p->scaled = 1;
}

int pool_size_reconfigure(pool_size_t *p, const vc_config_t *cfg)
{
    int64_t now[3];
    sizing_of(cfg, now);
    if (p->scaled && memcmp(now, p->scaled_under, sizeof(now)) == 0)
        return 1;
    int64_t n = p->target;
    int scaled = p->scaled;
    pool_size_init(p, cfg);
    if (scaled)
        vc_log(VC_LOG_NOTICE, "pool",
               "the configuration's pool size changed: it replaces the %lld workers vc scale set", (long long)n);
    return 0;
}

int pool_size_tick(pool_size_t *p, int idle, int busy, size_t queued, long pss_kib, uint64_t now)
{
    if (!p->dynamic)
        return 0;
    if (p->automatic && pss_kib > 0) {
        /* The most workers the memory can hold, sampled at bounded cost
         * (one worker's smaps_rollup now and then). */
        long fit = (long)(pool_mem_available_kib() * AUTO_MEMORY_SHARE) / pss_kib;
        p->pss_kib = pss_kib;
        if (fit >= p->min)
            p->max = fit;
    }
    if (queued > 0 && idle == 0) {
        p->idle_since_ms = 0;
        if (p->pressure_since_ms == 0)
            p->pressure_since_ms = now;
        if (now - p->pressure_since_ms >= GROW_AFTER_MS && p->target < p->max) {
            p->target++;
            p->pressure_since_ms = now;
            return 1;
        }
        return 0;
    }
    p->pressure_since_ms = 0;
    if (idle > 0 && busy + idle > p->min) {
        if (p->idle_since_ms == 0)
            p->idle_since_ms = now;
        if (now - p->idle_since_ms >= SHRINK_AFTER_MS && p->target > p->min) {
            p->target--;
            p->idle_since_ms = now;
            return -1;
        }
        return 0;
    }
    p->idle_since_ms = 0;
    return 0;
}
