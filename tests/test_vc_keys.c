/* vc_keys: entries found by hash, several under one hash told apart by
 * the finder; removal of one of them; a thousand entries in few buckets. */
#include "vc_keys.h"
#include "vc_test.h"
#include "vc_util.h"

#include <string.h>

typedef struct thing {
    int value;
    vc_keyed_t link;
} thing_t;

static int same_value(const vc_keyed_t *k, const void *arg)
{
    return VC_CONTAINER(k, thing_t, link)->value == *(const int *)arg;
}

int main(void)
{
    vc_keys_t t;
    vc_keys_init(&t, 4);
    static thing_t things[1000];
    for (int i = 0; i < 1000; i++) {
        things[i].value = i;
        vc_keys_add(&t, &things[i].link, (uint64_t)(i % 100)); /* ten a hash */
    }
    CHECK(t.n == 1000);
    int want = 742;
    vc_keyed_t *k = vc_keys_find(&t, 42, same_value, &want);
    CHECK(k && VC_CONTAINER(k, thing_t, link) == &things[742]);
    want = 743; /* not under hash 42 */
    CHECK(vc_keys_find(&t, 42, same_value, &want) == NULL);
    k = vc_keys_find(&t, 7, NULL, NULL); /* the first under 7, any of them */
    CHECK(k && VC_CONTAINER(k, thing_t, link)->value % 100 == 7);
    CHECK(vc_keys_find(&t, 100, NULL, NULL) == NULL);
    CHECK(vc_keys_remove(&t, &things[742].link) == 1 && t.n == 999);
    CHECK(vc_keys_remove(&t, &things[742].link) == 0 && t.n == 999);
    want = 742;
    CHECK(vc_keys_find(&t, 42, same_value, &want) == NULL);
    want = 842;
    CHECK(vc_keys_find(&t, 42, same_value, &want) != NULL);
    size_t n = 0;
    VC_KEYS_EACH(&t, e)
    {
        (void)e;
        n++;
    }
    CHECK(n == 999);
    vc_keys_fini(&t);
    CHECK(t.buckets == NULL && vc_keys_remove(&t, &things[1].link) == 0);
    return vc_test_result("vc_keys");
}
