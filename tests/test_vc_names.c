/* vc_names: entries found by name, made once, never moved; removal from
 * inside a walk; a thousand names in few buckets (long chains). */
#include "vc_names.h"
#include "vc_test.h"

#include <stdio.h>
#include <string.h>

typedef struct room {
    vc_named_t named;
    int value;
} room_t;

static int count(void *entry, void *arg)
{
    (void)entry;
    (*(int *)arg)++;
    return 0;
}

static vc_names_t *walked;

static int drop_odd(void *entry, void *arg)
{
    (void)arg;
    room_t *r = entry;
    if (r->value % 2)
        vc_names_remove(walked, r);
    return 0;
}

static int dropped;

static void drop(void *entry)
{
    (void)entry;
    dropped++;
}

int main(void)
{
    vc_names_t t;
    vc_names_init(&t, 8);
    int made = 0;
    room_t *a = vc_names_get(&t, "chat", sizeof(room_t), &made);
    CHECK(made && a && strcmp(a->named.name, "chat") == 0 && a->value == 0);
    a->value = 7;
    room_t *again = vc_names_get(&t, "chat", sizeof(room_t), &made);
    CHECK(!made && again == a && again->value == 7);
    CHECK(vc_names_find(&t, "chat") == a && vc_names_find(&t, "cha") == NULL && vc_names_find(&t, "chat2") == NULL);
    char name[32];
    for (int i = 0; i < 1000; i++) {
        snprintf(name, sizeof(name), "room-%d", i);
        room_t *r = vc_names_get(&t, name, sizeof(room_t), &made);
        CHECK(made);
        r->value = i;
    }
    CHECK(t.n == 1001);
    CHECK(vc_names_find(&t, "chat") == a); /* not moved by the others */
    int n = 0;
    vc_names_each(&t, count, &n);
    CHECK(n == 1001);
    walked = &t;
    vc_names_each(&t, drop_odd, NULL); /* "chat" (7) and the 500 odd ones */
    CHECK(t.n == 500 && vc_names_find(&t, "chat") == NULL && vc_names_find(&t, "room-3") == NULL);
    room_t *r4 = vc_names_find(&t, "room-4");
    CHECK(r4 && r4->value == 4);
    vc_names_remove(&t, r4);
    CHECK(t.n == 499 && vc_names_find(&t, "room-4") == NULL && vc_names_find(&t, "room-6") != NULL);
    vc_names_fini(&t, drop);
    CHECK(dropped == 499 && t.keys.buckets == NULL);
    return vc_test_result("vc_names");
}
