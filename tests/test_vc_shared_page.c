/* vc_shared_page: what the maker writes, the receiver reads, and the
 * other way; a receiver refuses a memfd it could be made to fault on (not
 * sealed against shrinking, or smaller than asked); the maker's seals
 * hold against the receiver. The quiet words (vc_lent_quiet.h) on it. */
#include "vc_lent_quiet.h"
#include "vc_shared_page.h"
#include "vc_test.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>

int main(void)
{
    vc_lent_quiet_t *front = NULL;
    int fd = vc_shared_page_create("test-quiet", sizeof(vc_lent_quiet_t), (void **)&front);
    CHECK(fd >= 0 && front != NULL);
    /* The receiver gets its own descriptor (as SCM_RIGHTS gives one). */
    int copy = dup(fd);
    vc_lent_quiet_t *worker = vc_shared_page_map(copy, sizeof(vc_lent_quiet_t));
    CHECK(worker != NULL);
    CHECK(fcntl(copy, F_GETFD) < 0 && errno == EBADF); /* closed by the map */
    /* The seals hold for whoever holds the descriptor. */
    CHECK(ftruncate(fd, 0) < 0 && errno == EPERM);
    CHECK(ftruncate(fd, 2 * sizeof(vc_lent_quiet_t)) < 0 && errno == EPERM);
    CHECK(fcntl(fd, F_ADD_SEALS, 0) < 0 && errno == EPERM); /* sealed for good */

    CHECK(!vc_lent_quiet_is(front, 3));
    vc_lent_quiet_set(worker, 3, 1);
    CHECK(vc_lent_quiet_is(front, 3) && !vc_lent_quiet_is(front, 2));
    vc_lent_quiet_set(front, 3, 0);
    CHECK(!vc_lent_quiet_is(worker, 3));
    /* Ids past the page, and no page, are never quiet and never written. */
    vc_lent_quiet_set(worker, VC_LENT_CONNS_MAX, 1);
    CHECK(!vc_lent_quiet_is(front, VC_LENT_CONNS_MAX));
    vc_lent_quiet_set(NULL, 1, 1);
    CHECK(!vc_lent_quiet_is(NULL, 1));

    /* A memfd not sealed against shrinking, or too small, is refused. */
    int loose = memfd_create("test-loose", MFD_CLOEXEC);
    CHECK(loose >= 0 && ftruncate(loose, 4096) == 0);
    CHECK(vc_shared_page_map(loose, 64) == NULL);
    void *small_map = NULL;
    int small = vc_shared_page_create("test-small", 8, &small_map);
    CHECK(small >= 0 && vc_shared_page_map(small, 4 * 4096) == NULL);
    CHECK(vc_shared_page_map(-1, 8) == NULL);

    vc_shared_page_unmap(&small_map, 8);
    vc_shared_page_unmap((void **)&worker, sizeof(*worker));
    vc_shared_page_unmap((void **)&front, sizeof(*front));
    CHECK(front == NULL && worker == NULL && small_map == NULL);
    close(fd);
    return vc_test_result("vc_shared_page");
}
