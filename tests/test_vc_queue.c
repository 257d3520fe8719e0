/* vc_queue: order, removal anywhere, batches taken and put back, the bound. */
#include "vc_queue.h"
#include "vc_test.h"

typedef struct item {
    int v;
    vc_qlink_t link;
} item_t;

static int order(const vc_queue_t *q, const char *want)
{
    char got[64] = "";
    size_t n = 0;
    for (const vc_qlink_t *l = q->head; l; l = l->next)
        got[n++] = (char)('0' + VC_QUEUE_ITEM(l, item_t, link)->v);
    got[n] = '\0';
    return strcmp(got, want) == 0 && n == q->len && (n == 0 ? q->tail == NULL : q->tail->next == NULL);
}

int main(void)
{
    item_t it[8];
    for (int i = 0; i < 8; i++)
        it[i].v = i;
    vc_queue_t q = {.max = 4};
    CHECK(vc_queue_pop(&q) == NULL && order(&q, ""));
    vc_queue_push(&q, &it[1].link);
    vc_queue_push(&q, &it[2].link);
    vc_queue_push_head(&q, &it[0].link);
    vc_queue_push(&q, &it[3].link);
    CHECK(order(&q, "0123") && vc_queue_full(&q));
    /* Out of the middle, the tail, the head; and not twice. */
    CHECK(vc_queue_remove(&q, &it[2].link) && order(&q, "013"));
    CHECK(!vc_queue_remove(&q, &it[2].link));
    CHECK(vc_queue_remove(&q, &it[3].link) && order(&q, "01"));
    vc_queue_push(&q, &it[4].link);
    CHECK(order(&q, "014") && !vc_queue_full(&q));
    CHECK(vc_queue_remove(&q, &it[0].link) && order(&q, "14"));
    /* A batch from the head, and back in front of what came since. */
    vc_queue_push(&q, &it[5].link);
    vc_queue_t batch;
    vc_queue_take(&q, 2, &batch);
    CHECK(order(&batch, "14") && order(&q, "5"));
    vc_queue_push(&q, &it[6].link);
    vc_queue_put_back(&q, &batch);
    CHECK(order(&q, "1456") && order(&batch, ""));
    vc_queue_take(&q, 10, &batch);
    CHECK(order(&batch, "1456") && order(&q, ""));
    vc_queue_put_back(&q, &batch);
    CHECK(order(&q, "1456"));
    CHECK(VC_QUEUE_ITEM(vc_queue_pop(&q), item_t, link)->v == 1 && order(&q, "456"));
    /* An unbounded queue is never full; one with no room always is. */
    vc_queue_t u = {.max = VC_QUEUE_UNBOUNDED}, none = {.max = 0};
    vc_queue_push(&u, &it[7].link);
    CHECK(!vc_queue_full(&u) && vc_queue_full(&none));
    return vc_test_result("vc_queue");
}
