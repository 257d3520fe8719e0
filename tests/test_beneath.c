/* vc-front's open() (daemons/vc-front/core/beneath.h): libc's outside a
 * guarded call, and beneath the root, or not at all, inside one. */
#include "../daemons/vc-front/core/beneath.h"
#include "vc_test.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

int main(void)
{
    char dir[] = "/tmp/vc-test-beneath-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char root[256], inside[300], outside[300], link_abs[300], link_rel[300], made[300];
    snprintf(root, sizeof(root), "%s/root", dir);
    snprintf(inside, sizeof(inside), "%s/page.html", root);
    snprintf(outside, sizeof(outside), "%s/secret", dir);
    snprintf(link_abs, sizeof(link_abs), "%s/abs", root);
    snprintf(link_rel, sizeof(link_rel), "%s/rel", root);
    snprintf(made, sizeof(made), "%s/made", dir);
    CHECK(mkdir(root, 0755) == 0);
    FILE *f = fopen(inside, "w");
    fputs("page", f);
    fclose(f);
    f = fopen(outside, "w");
    fputs("secret", f);
    fclose(f);
    CHECK(symlink(outside, link_abs) == 0);
    CHECK(symlink("../secret", link_rel) == 0);
    /* Made by a site's PHP: its pool's user's, never root's
     * (daemons/vc-front/core/root_links.h). */
    CHECK(geteuid() != 0 || lchown(link_abs, 65534, 65534) == 0);
    CHECK(geteuid() != 0 || lchown(link_rel, 65534, 65534) == 0);
    char link_root[300];
    snprintf(link_root, sizeof(link_root), "%s/packaged", root);
    CHECK(symlink(outside, link_root) == 0);

    /* Unguarded: any path, and O_CREAT with its mode, as libc's open(). */
    mode_t old = umask(0);
    int fd = open(made, O_CREAT | O_WRONLY | O_CLOEXEC, 0640);
    CHECK(fd >= 0);
    struct stat st;
    CHECK(fd >= 0 && fstat(fd, &st) == 0 && (st.st_mode & 0777) == 0640);
    close(fd);
    umask(old);
    fd = open(link_abs, O_RDONLY | O_CLOEXEC);
    CHECK(fd >= 0); /* no guard: the link is followed */
    close(fd);

    /* Guarded: a file inside opens; every way out is ENOENT, and counted. */
    uint64_t escapes = beneath_escapes_total();
    beneath_begin(root, strlen(root));
    fd = open(inside, O_RDONLY | O_CLOEXEC);
    CHECK(fd >= 0);
    close(fd);
    errno = 0;
    CHECK(open(link_abs, O_RDONLY | O_CLOEXEC) == -1 && errno == ENOENT);
    errno = 0;
    CHECK(open(link_rel, O_RDONLY | O_CLOEXEC) == -1 && errno == ENOENT);
    errno = 0;
    CHECK(open(outside, O_RDONLY | O_CLOEXEC) == -1 && errno == ENOENT);
    /* Root's own link out of the root is followed (a package's tree). */
    fd = open(link_root, O_RDONLY | O_CLOEXEC);
    CHECK(geteuid() == 0 ? fd >= 0 : fd == -1);
    if (fd >= 0)
        close(fd);
    beneath_end();
    CHECK(beneath_escapes_total() >= escapes + 2);

    /* After the guarded call, the program's own opens are plain again. */
    fd = open(outside, O_RDONLY | O_CLOEXEC);
    CHECK(fd >= 0);
    close(fd);
    beneath_new_turn();

    unlink(link_abs);
    unlink(link_rel);
    unlink(link_root);
    unlink(inside);
    unlink(outside);
    unlink(made);
    rmdir(root);
    rmdir(dir);
    return vc_test_result("beneath");
}
