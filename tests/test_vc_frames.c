/* Frames on the request path (libcommon/vc_frames.c): copies, shares and
 * borrows hold what they say, a push moves, a duplicate is by reference.
 * Run under ASan, a frame that outlived its block, or a block left
 * behind, fails here. */
#include "vc_frames.h"
#include "vc_test.h"

#include <endian.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void frames_alone(void)
{
    vc_frames_t a = {0}, b = {0};
    char x[] = "head", y[] = "body";
    struct iovec two[2] = {{x, 4}, {y, 4}};
    vc_frames_copy(&a, two, 2);
    CHECK(a.n == 2 && a.f[0].block == a.f[1].block && a.f[0].block->refs == 2);
    memset(x, '?', 4); /* a copy: the caller's buffer may change */
    CHECK(!memcmp(a.f[0].data, "head", 4) && !memcmp(a.f[1].data, "body", 4));
    CHECK(vc_frames_bytes(&a) == 8);

    /* A duplicate shares the block; closing one side leaves the other. */
    vc_frames_dup(&b, &a, 1);
    CHECK(b.n == 1 && b.f[0].block == a.f[0].block && a.f[0].block->refs == 3);
    vc_frames_close(&a);
    CHECK(b.f[0].block->refs == 1 && !memcmp(b.f[0].data, "head", 4));

    /* A push moves: the source is emptied, no reference is added. */
    vc_frames_t q = {0};
    vc_frames_push(&q, &b.f[0]);
    CHECK(b.f[0].block == NULL && b.f[0].data == NULL && q.f[0].block->refs == 1);

    /* A borrowed frame has no block; its duplicate is a copy. */
    vc_frames_t bor = {0}, dup = {0};
    vc_frames_borrow(&bor, two + 1, 1);
    CHECK(bor.f[0].block == NULL && bor.f[0].data == y);
    vc_frames_dup(&dup, &bor, 1);
    CHECK(dup.f[0].block != NULL && dup.f[0].data != y && !memcmp(dup.f[0].data, "body", 4));
    vc_frames_fini(&a);
    vc_frames_fini(&b);
    vc_frames_fini(&q);
    vc_frames_fini(&bor);
    vc_frames_fini(&dup);
}

int main(void)
{
    frames_alone();
    return vc_test_result("vc_frames");
}
