#include "vc_test.h"
#include "vc_tickets.h"
#include "vc_util.h"

#include <sys/stat.h>
#include <time.h>
#include <utime.h>

int main(void)
{
    char *dir = vc_test_tmpdir();
    char *path = vc_asprintf("%s/tickets", dir);
    vc_ticket_key_t k1[VC_TICKETS_KEEP], k2[VC_TICKETS_KEEP];
    CHECK(vc_tickets_load(path, k1) == 0);
    CHECK(vc_tickets_rotate(path, 3600) == 1);
    CHECK(vc_tickets_load(path, k1) == 1);
    struct stat st;
    CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0600);
    /* Young enough: left alone. */
    CHECK(vc_tickets_rotate(path, 3600) == 0);
    /* Aged: a new key in front, the old one kept behind it, at most KEEP. */
    for (int i = 0; i < 5; i++) {
        struct utimbuf old = {time(NULL) - 7200, time(NULL) - 7200};
        utime(path, &old);
        CHECK(vc_tickets_rotate(path, 3600) == 1);
    }
    int n = vc_tickets_load(path, k2);
    CHECK(n == VC_TICKETS_KEEP);
    CHECK(memcmp(k2[0].name, k1[0].name, 16) != 0);
    CHECK(memcmp(k2[1].name, k2[0].name, 16) != 0);
    /* A path that cannot be written: -1, not a crash. */
    CHECK(vc_tickets_rotate("/proc/none/tickets", 1) == -1);
    free(path);
    vc_test_rmtree(dir);
    free(dir);
    return vc_test_result("vc_tickets");
}
