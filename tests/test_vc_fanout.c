/* vc_fanout: every item runs once, on a thread of its own, at the same
 * time as the others (each waits until all have started); last() is
 * called once, after the last run ended; over and end see it. */
#include "vc_fanout.h"
#include "vc_test.h"

#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

#define N 8

typedef struct item {
    int runs;
    pthread_t thread;
} item_t;

static atomic_int started, lasts;

static void run(void *arg)
{
    item_t *it = arg;
    it->runs++;
    it->thread = pthread_self();
    atomic_fetch_add(&started, 1);
    /* At once, or this never ends: a fan-out that ran them in turn hangs
     * here (the test's timeout fails it). */
    while (atomic_load(&started) < N)
        usleep(1000);
}

static void last(void *arg)
{
    CHECK(arg == &lasts);
    atomic_fetch_add(&lasts, 1);
}

int main(void)
{
    item_t items[N] = {0};
    vc_fanout_t *fo = vc_fanout_start(items, N, sizeof(items[0]), run, NULL, last, &lasts);
    while (!vc_fanout_over(fo))
        usleep(1000);
    CHECK(atomic_load(&lasts) == 1);
    for (int i = 0; i < N; i++) {
        CHECK(items[i].runs == 1);
        CHECK(!pthread_equal(items[i].thread, pthread_self()));
        for (int k = 0; k < i; k++)
            CHECK(!pthread_equal(items[i].thread, items[k].thread));
    }
    vc_fanout_end(fo);
    /* None to call: over at once, last never called. */
    fo = vc_fanout_start(items, 0, sizeof(items[0]), run, NULL, last, &lasts);
    CHECK(vc_fanout_over(fo));
    vc_fanout_end(fo);
    CHECK(atomic_load(&lasts) == 1);
    vc_fanout_end(NULL);
    return vc_test_result("vc_fanout");
}
