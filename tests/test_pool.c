/* vc-php's pool sizing rules, driven with a fake clock. */
#include "../daemons/vc-php/pool.h"
#include "vc_test.h"

int main(void)
{
    vc_config_t cfg = {0};
    pool_size_t p;

    /* Static: never moves. */
    cfg.php.workers = 4;
    pool_size_init(&p, &cfg);
    CHECK(p.target == 4 && !p.dynamic);
    CHECK(pool_size_tick(&p, 0, 4, 100, 0, 1000) == 0);

    /* min/max: grows only after pressure lasts, never past max. */
    cfg.php.min_workers = 2;
    cfg.php.max_workers = 3;
    pool_size_init(&p, &cfg);
    CHECK(p.dynamic && p.target == 2);
    CHECK(pool_size_tick(&p, 0, 2, 5, 0, 1000) == 0);
    CHECK(pool_size_tick(&p, 0, 2, 5, 0, 1050) == 0);
    CHECK(pool_size_tick(&p, 0, 2, 5, 0, 1100) == 1 && p.target == 3);
    CHECK(pool_size_tick(&p, 0, 3, 5, 0, 1300) == 0 && p.target == 3);
    /* Queue drained but no idle worker: no change either way. */
    CHECK(pool_size_tick(&p, 0, 3, 0, 0, 1400) == 0);
    /* Idle for 10 s: shrinks by one, not below min. */
    CHECK(pool_size_tick(&p, 2, 1, 0, 0, 2000) == 0);
    CHECK(pool_size_tick(&p, 2, 1, 0, 0, 11999) == 0);
    CHECK(pool_size_tick(&p, 2, 1, 0, 0, 12000) == -1 && p.target == 2);
    CHECK(pool_size_tick(&p, 2, 0, 0, 0, 40000) == 0 && p.target == 2);

    /* auto: max from memory available and a worker's PSS. */
    cfg.php.workers = 0;
    cfg.php.min_workers = cfg.php.max_workers = 0;
    pool_size_init(&p, &cfg);
    CHECK(p.automatic && p.dynamic && p.target == p.min && p.min >= 1);
    long avail = pool_mem_available_kib();
    CHECK(avail > 0);
    pool_size_tick(&p, 1, 0, 0, 4096, 1000);
    CHECK(p.max == (int64_t)(avail / 2 / 4096) || p.max == p.min * 8);

    /* vc scale: fixed from then on. */
    pool_size_set(&p, 7);
    CHECK(p.target == 7 && !p.dynamic);
    CHECK(pool_size_tick(&p, 0, 7, 50, 0, 99999) == 0);
    /* A reload with the same sizing keeps it; another sizing replaces it. */
    CHECK(pool_size_reconfigure(&p, &cfg) == 1 && p.target == 7 && !p.dynamic);
    cfg.php.workers = 5;
    CHECK(pool_size_reconfigure(&p, &cfg) == 0 && p.target == 5 && !p.scaled);
    CHECK(pool_size_reconfigure(&p, &cfg) == 0 && p.target == 5);
    return vc_test_result("pool");
}
