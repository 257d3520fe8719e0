/*
 * The broker's lend, recall, give-back and leaving state machine
 * (daemons/vc-php/broker.c, lending.c, exits.c, leaving.c), driven
 * without PHP: this test is a scripted fake front on a real link to the
 * broker's real fronts listener, and plays the workers itself (each a
 * socketpair end, with a paused child process as its pid, so the signals
 * the broker sends hit our own children). The broker's loop is turned by
 * hand, as daemons/vc-php/main.c turns it.
 */
#include "broker_peer.h"
#include "vc_test.h"

#include <signal.h>
#include <sys/wait.h>

static broker_peer_t bp;

/* What the fake worker w was sent by whoever holds its link: a request's
 * id, or 0 for nothing. */
static uint64_t worker_got_request(int w)
{
    vc_frames_t fr = {0};
    uint64_t id = 0;
    if (bp_worker_read(&bp, w, &fr, 200) && fr.n >= 2) {
        Vc__FrontMessage *fm = vc__front_message__unpack(NULL, fr.f[1].len, (const uint8_t *)fr.f[1].data);
        if (fm && fm->kind_case == VC__FRONT_MESSAGE__KIND_REQUEST)
            id = fm->request->id;
        if (fm)
            vc__front_message__free_unpacked(fm, NULL);
    }
    vc_frames_fini(&fr);
    return id;
}

static int lent_count(void)
{
    int n = 0;
    for (size_t i = 0; i < bp.d->nw; i++)
        n += bp.d->w[i].state == W_LENT;
    return n;
}

static worker_t *by_slot(uint32_t slot)
{
    for (size_t i = 0; i < bp.d->nw; i++)
        if (bp.d->w[i].slot == (int)slot)
            return &bp.d->w[i];
    return NULL;
}

/* The broker's state for the worker in slot, or -1 if it has none. */
static int state_of(uint32_t slot)
{
    worker_t *w = by_slot(slot);
    return w ? (int)w->state : -1;
}

static int fake_of(const worker_t *w)
{
    if (w == NULL)
        return -1;
    for (int i = 0; i < bp.nw; i++)
        if (bp.w[i].pid == w->pid)
            return i;
    return -1;
}

/* What the steps below hand on: the lend messages (with the front's end
 * of each lent link), the two workers' slots and their fakes. */
typedef struct scene {
    bp_msg_t m1, m2, m3;
    uint32_t slot_a, slot_b;
    int wa, wb;
} scene_t;

/* Both workers say ready: they are lent to the front, each with its link,
 * the first with the board. 0, or -1 if the workers are not known. */
static int both_lent(scene_t *s)
{
    bp_worker_ready(&bp, 0);
    bp_worker_ready(&bp, 1);
    CHECK(bp_front_next(&bp, &s->m1, 500) && s->m1.bm->kind_case == VC__BACK_MESSAGE__KIND_LEND);
    CHECK(bp_front_next(&bp, &s->m2, 500) && s->m2.bm->kind_case == VC__BACK_MESSAGE__KIND_LEND);
    CHECK(s->m1.fd >= 0 && s->m2.fd >= 0 && s->m1.bm->lend->board && s->m1.board != NULL && !s->m2.bm->lend->board);
    CHECK(s->m1.bm->lend->slot != s->m2.bm->lend->slot);
    CHECK(lent_count() == 2);
    s->slot_a = s->m1.bm->lend->slot;
    s->slot_b = s->m2.bm->lend->slot;
    s->wa = fake_of(by_slot(s->slot_a));
    s->wb = fake_of(by_slot(s->slot_b));
    CHECK(s->wa >= 0 && s->wb >= 0 && s->wa != s->wb);
    return s->wa < 0 || s->wb < 0 ? -1 : 0;
}

/* The front uses A itself; a request relayed by the broker waits, B is
 * called back (idle on the board), serves it, answers through the broker,
 * and is lent again. */
static void relayed_request_recalls_the_idle_one(scene_t *s)
{
    /* The front's own request reaches the worker on the lent link, not
     * through the broker. */
    bp_lent_request(&bp, &s->m1, 41, "GET");
    CHECK(worker_got_request(s->wa) == 41);
    bp_board_state(&bp, s->slot_a, VC_BOARD_BUSY);

    /* A request relayed by the broker (as from a front over TCP) waits:
     * both workers are lent. The broker calls one back (any), idle ones
     * first by the board: B, which is idle there. */
    bp_front_request(&bp, 7, "POST");
    bp_msg_t r;
    CHECK(bp_front_next(&bp, &r, 500) && r.bm->kind_case == VC__BACK_MESSAGE__KIND_RECALL);
    CHECK(r.bm->recall->slot == s->slot_b && r.bm->recall->any);
    CHECK(bp.d->queue.len == 1);
    /* Nothing reached B while it is still the front's. */
    CHECK(worker_got_request(s->wb) == 0);
    /* Given back: the queued request goes to B, once. */
    close(s->m2.fd);
    s->m2.fd = -1;
    bp_give_back(&bp, s->slot_b, 0, VC__OUTCOME__OUTCOME_NONE, -1);
    CHECK(worker_got_request(s->wb) == 7);
    CHECK(bp.d->queue.len == 0 && state_of(s->slot_b) == W_BUSY);
    bp_msg_free(&r);

    /* B answers through the broker, which passes it to the front whole. */
    bp_worker_answer(&bp, s->wb, 7);
    bp_msg_t ans;
    CHECK(bp_front_next(&bp, &ans, 500) && ans.bm->kind_case == VC__BACK_MESSAGE__KIND_HEAD && ans.bm->head->id == 7);
    bp_msg_free(&ans);

    /* B idle again is lent again. */
    CHECK(bp_front_next(&bp, &s->m3, 500) && s->m3.bm->kind_case == VC__BACK_MESSAGE__KIND_LEND &&
          s->m3.bm->lend->slot == s->slot_b);
}

/* A reload: both lent workers are of the old generation and must come
 * back themselves (any unset). A is busy at the front: the broker waits
 * for its give-back and never takes it before; B, idle, goes back at once
 * and is told to exit. */
static void reload_recalls_the_old_generation(scene_t *s)
{
    broker_new_generation(bp.d, bp.d->gen + 1, bp.cfg);
    bp_msg_t ra, rb;
    CHECK(bp_front_next(&bp, &ra, 500) && ra.bm->kind_case == VC__BACK_MESSAGE__KIND_RECALL && !ra.bm->recall->any);
    CHECK(bp_front_next(&bp, &rb, 500) && rb.bm->kind_case == VC__BACK_MESSAGE__KIND_RECALL && !rb.bm->recall->any);
    CHECK((ra.bm->recall->slot == s->slot_a) != (rb.bm->recall->slot == s->slot_a));
    CHECK(state_of(s->slot_a) == W_LENT && by_slot(s->slot_a)->recalled);
    bp_msg_free(&ra);
    bp_msg_free(&rb);
    close(s->m3.fd);
    s->m3.fd = -1;
    bp_give_back(&bp, s->slot_b, 0, VC__OUTCOME__OUTCOME_NONE, -1);
    bp_turns(&bp, 3);
    CHECK(state_of(s->slot_b) == W_RETIRED);
    CHECK(bp_worker_signalled(&bp, s->wb) == SIGTERM);
}

/* A's lent worker died while its request ran, at the front: the front
 * says what it did (a GET not begun: retried), the broker reports the
 * exit with it, once the zygote reports it. */
static void a_lent_worker_dies_at_the_front(scene_t *s)
{
    close(s->m1.fd);
    s->m1.fd = -1;
    uint64_t crashed = bp.d->crashed;
    bp_give_back(&bp, s->slot_a, 1, VC__OUTCOME__OUTCOME_RETRIED, -1);
    bp_turns(&bp, 3);
    CHECK(state_of(s->slot_a) == W_LENT && by_slot(s->slot_a)->front_said);
    bp_worker_exit(&bp, s->wa, SIGKILL);
    CHECK(bp.d->crashed == crashed + 1 && bp.d->nlost == 0);
    CHECK(by_slot(s->slot_a) == NULL);
}

/* Leaving: the front is told, a request queued here comes back to it
 * unstarted, one sent after comes back too, and once nothing of the
 * front's is here and it said Left, its link is closed. */
static void leaving_hands_back_what_is_queued(scene_t *s)
{
    bp_worker_exit(&bp, s->wb, SIGTERM);
    bp_turns(&bp, 3);
    CHECK(bp.d->nw == 0);
    bp_front_request(&bp, 8, "POST");
    bp_turns(&bp, 3);
    CHECK(bp.d->queue.len == 1);
    broker_leave(bp.d);
    bp_msg_t lv, lv8, lv9;
    CHECK(bp_front_next(&bp, &lv, 500) && lv.bm->kind_case == VC__BACK_MESSAGE__KIND_LEAVING &&
          lv.bm->leaving->n_unstarted == 0);
    CHECK(bp_front_next(&bp, &lv8, 500) && lv8.bm->kind_case == VC__BACK_MESSAGE__KIND_LEAVING &&
          lv8.bm->leaving->n_unstarted == 1 && lv8.bm->leaving->unstarted[0] == 8);
    CHECK(bp.d->queue.len == 0);
    bp_front_request(&bp, 9, "GET");
    CHECK(bp_front_next(&bp, &lv9, 500) && lv9.bm->kind_case == VC__BACK_MESSAGE__KIND_LEAVING &&
          lv9.bm->leaving->unstarted[0] == 9);
    /* Holding nothing, but the front has not said Left: what it sent may
     * still be on the way, so the link stays. Once it says so, it goes. */
    broker_release_fronts(bp.d);
    CHECK(!bp_front_closed(&bp, 100));
    /* No worker is left, but the process may not go yet either. */
    CHECK(bp.d->nw == 0 && !broker_has_left(bp.d));
    bp_front_left(&bp);
    broker_release_fronts(bp.d);
    bp_turns(&bp, 2);
    CHECK(bp_front_closed(&bp, 500));
    broker_release_fronts(bp.d);
    CHECK(broker_has_left(bp.d));
    bp_msg_free(&lv);
    bp_msg_free(&lv8);
    bp_msg_free(&lv9);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    bp_start(&bp, "php: { workers = 2; };\n", 2);
    scene_t s = {.m1 = {.fd = -1}, .m2 = {.fd = -1}, .m3 = {.fd = -1}};
    if (both_lent(&s) == 0) {
        relayed_request_recalls_the_idle_one(&s);
        reload_recalls_the_old_generation(&s);
        a_lent_worker_dies_at_the_front(&s);
        leaving_hands_back_what_is_queued(&s);
    }
    bp_msg_free(&s.m1);
    bp_msg_free(&s.m2);
    bp_msg_free(&s.m3);
    bp_stop(&bp);
    return vc_test_result("broker");
}
