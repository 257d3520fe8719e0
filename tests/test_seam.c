/* vc-front's backend seam: backends registered from their own files (here
 * by constructors, as SEAM_BACKEND does) are asked by stage, in order,
 * until one takes the request, each with its own per-site state. */
#include "../daemons/vc-front/core/seam.h"
#include "vc_test.h"

static char asked[64];
static size_t nasked;

static void note(char c)
{
    if (nasked < sizeof(asked) - 1)
        asked[nasked++] = c;
    asked[nasked] = '\0';
}

static int init_a(front_t *f, site_rt_t *s, void **state)
{
    (void)f;
    *state = (void *)s->conf; /* any per-site pointer */
    return 0;
}

/* a (order 10) takes only PHP routes; b (20) takes statics; c (5) is
 * early and takes nothing; d (30) takes anything routed. */
static int take_a(const seam_request_t *r, void *state)
{
    note('a');
    CHECK(state == (void *)r->site->conf);
    return r->kind == ROUTE_PHP;
}
static int take_b(const seam_request_t *r, void *state)
{
    note('b');
    CHECK(state == NULL); /* no site_init: nothing kept */
    return r->kind == ROUTE_STATIC;
}
static int take_c(const seam_request_t *r, void *state)
{
    (void)r, (void)state;
    note('c');
    return 0;
}
static int take_d(const seam_request_t *r, void *state)
{
    (void)r, (void)state;
    note('d');
    return 1;
}

/* Registered out of order, as constructors run in link order. */
static const seam_backend_t b = {.name = "b", .stage = SEAM_ROUTED, .order = 20, .take = take_b};
static const seam_backend_t d = {.name = "d", .stage = SEAM_ROUTED, .order = 30, .take = take_d};
static const seam_backend_t a = {.name = "a", .stage = SEAM_ROUTED, .order = 10, .site_init = init_a, .take = take_a};
static const seam_backend_t c = {.name = "c", .stage = SEAM_EARLY, .order = 5, .take = take_c};
SEAM_BACKEND(b)
SEAM_BACKEND(d)
SEAM_BACKEND(a)
SEAM_BACKEND(c)

static const char *run_after(seam_stage_t stage, front_t *f, route_kind_t kind, const seam_backend_t *after)
{
    nasked = 0;
    asked[0] = '\0';
    seam_request_t r = {.f = f, .site = &f->sites[1], .kind = kind};
    note(seam_dispatch_after(stage, &r, after) ? '+' : '-');
    return asked;
}

static const char *run(seam_stage_t stage, front_t *f, route_kind_t kind)
{
    return run_after(stage, f, kind, NULL);
}

int main(void)
{
    static front_t f = {.magic = FRONT_MAGIC};
    vc_site_t confs[2] = {{.name = "one"}, {.name = "two"}};
    site_rt_t sites[2] = {{.conf = &confs[0]}, {.conf = &confs[1]}};
    f.sites = sites;
    f.nsites = 2;
    CHECK(seam_init_sites(&f) == 0);
    CHECK(sites[0].backend_state != NULL && sites[1].backend_state != NULL);
    CHECK_STR(run(SEAM_ROUTED, &f, ROUTE_PHP), "a+");
    CHECK_STR(run(SEAM_ROUTED, &f, ROUTE_STATIC), "ab+");
    CHECK_STR(run(SEAM_ROUTED, &f, ROUTE_NOT_FOUND), "abd+");
    CHECK_STR(run(SEAM_EARLY, &f, ROUTE_PHP), "c-");
    /* A backend that held a request hands it on to those after it. */
    CHECK_STR(run_after(SEAM_ROUTED, &f, ROUTE_PHP, &a), "bd+");
    CHECK_STR(run_after(SEAM_ROUTED, &f, ROUTE_STATIC, &b), "d+");
    CHECK_STR(run_after(SEAM_ROUTED, &f, ROUTE_PHP, &d), "-");
    for (size_t i = 0; i < f.nsites; i++)
        free(sites[i].backend_state);
    return vc_test_result("seam");
}
