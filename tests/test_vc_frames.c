/* Frames on the request path (libcommon/vc_frames.c) and the frames a link
 * buffer lends out (vc_link_take): copies, shares and borrows hold what
 * they say; a shared frame keeps its bytes while the buffer it came from
 * is compacted, refilled, grown and reset; small frames are copied, large
 * ones shared; a duplicate is by reference. Run under ASan, a frame that
 * outlived its block, or a block left behind, fails here. */
#include "vc_frames.h"
#include "vc_link.h"
#include "vc_test.h"

#include <endian.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define LARGE (128u * 1024u)

static int all(const vc_frame_t *m, char c, size_t len)
{
    if (m->len != len)
        return 0;
    for (size_t i = 0; i < len; i++)
        if (m->data[i] != c)
            return 0;
    return 1;
}

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

    /* Resizing a block someone else holds leaves theirs alone. */
    vc_block_t *blk = vc_block_new(8), *held = blk;
    memcpy(blk->data, "12345678", 8);
    vc_block_ref(held);
    vc_block_resize(&blk, 4, 64);
    CHECK(blk != held && blk->cap == 64 && !memcmp(blk->data, "1234", 4) && held->refs == 1);
    CHECK(!memcmp(held->data, "12345678", 8));
    vc_block_unref(&held);
    vc_block_unref(&blk);
    CHECK(blk == NULL);
}

/* One message of frames [small 'h'][LARGE 'b'] over a socketpair, parsed
 * out of b into fr through vc_link_take. */
static void send_and_take(int fds[2], vc_link_buf_t *b, vc_frames_t *fr, char fill)
{
    static char large[LARGE];
    memset(large, fill, sizeof(large));
    struct iovec two[2] = {{"hh", 2}, {large, LARGE}};
    CHECK(vc_link_send(fds[0], two, 2) == 0);
    struct iovec f[4];
    int n;
    while ((n = vc_link_parse(b, f, 4)) == 0)
        CHECK(vc_link_fill(fds[1], b, 0) > 0);
    CHECK(n == 2);
    vc_link_take(b, fr, f, 2);
}

static void frames_from_a_link(void)
{
    int fds[2];
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, fds) == 0);
    int size = 1 << 20;
    setsockopt(fds[0], SOL_SOCKET, SO_SNDBUF, &size, sizeof(size));
    vc_link_buf_t b = {0};
    vc_frames_t fr = {0};
    send_and_take(fds, &b, &fr, 'b');
    /* The small frame is copied, the large one points into the buffer. */
    CHECK(fr.n == 2 && fr.f[0].block != b.blk && fr.f[1].block == b.blk);
    CHECK(fr.f[1].data >= b.blk->data && fr.f[1].data < b.blk->data + b.blk->cap);
    vc_block_t *first = b.blk;

    /* The buffer is compacted and refilled: the shared block is not
     * written over; the buffer goes on in a block of its own. */
    vc_link_compact(&b);
    send_and_take(fds, &b, &fr, 'c');
    CHECK(b.blk != first && fr.f[3].block == b.blk);
    CHECK(all(&fr.f[1], 'b', LARGE) && all(&fr.f[3], 'c', LARGE));

    /* Bytes of a message not yet whole move to a new block when the old
     * one is held. */
    vc_block_t *second = b.blk;
    uint32_t head[2] = {htole32(1), htole32(1)}; /* one frame of one byte */
    vc_link_put(&b, head, sizeof(head));
    CHECK(b.blk == second); /* written past the frames: they are safe */
    vc_link_compact(&b);
    CHECK(b.blk != second && b.off == 0 && b.len == sizeof(head));
    vc_link_put(&b, "x", 1);
    struct iovec f[2];
    CHECK(vc_link_parse(&b, f, 2) == 1 && f[0].iov_len == 1 && *(char *)f[0].iov_base == 'x');
    vc_link_reset(&b);
    CHECK(all(&fr.f[1], 'b', LARGE) && all(&fr.f[3], 'c', LARGE));

    /* The frames let go: the blocks go with the last of them (ASan's
     * leak check says whether they did). */
    vc_frames_fini(&fr);
    vc_link_buf_free(&b);
    CHECK(b.blk == NULL);
    close(fds[0]);
    close(fds[1]);
}

int main(void)
{
    frames_alone();
    frames_from_a_link();
    return vc_test_result("vc_frames");
}
