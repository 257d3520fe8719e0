/* A release's links resolved as the kernel would (libcommon/vc_release_links.c):
 * each manifest here is accepted or refused as a whole by vc_release_parse. */
#include "vc_release.h"
#include "vc_test.h"

#include <string.h>

static const char header[] = "velocity-release 1\nsite s\nid a\ncreated 1\nsigner k\nmessage \n";

static int accepted(const char *entries)
{
    char text[4096], why[512];
    snprintf(text, sizeof(text), "%s%s", header, entries);
    vc_release_t r;
    if (vc_release_parse(text, strlen(text), &r, why, sizeof(why)) < 0)
        return 0;
    vc_release_free(&r);
    return 1;
}

int main(void)
{
    /* Plain links inside the release, and a Laravel public/storage link
     * through a path the release does not hold (a shared one). */
    CHECK(accepted("d 755 public\nl public/current.css v2.css\nl public/storage ../storage/app/public\n"));
    CHECK(accepted("d 755 a\nl a/r ..\nl b a/r/a/r/a\n"));
    /* The review's two-link escape: each link passes as text. */
    CHECK(!accepted("d 755 a\nd 755 a/b\nd 755 a/b/c\nl a/b/c/r ../../..\nl public a/b/c/r/../../../../ANY\n"));
    CHECK(!accepted("d 755 a\nd 755 a/b\nl a/b/r ../..\nl a/x b/r/..\n"));
    /* ".." from a path the manifest does not hold as a directory: from a
     * file, or from a name that a shared path's link may fill. */
    CHECK(!accepted("d 755 a\nl a/x ../storage/../..\n"));
    CHECK(!accepted("f 644 0 0e5751c026e543b2e8ab2eb06099daa1d1e5df47778f7787faab45cdf12fe3a8 f\nl x f/..\n"));
    /* Loops, and links that name each other. */
    CHECK(!accepted("l a b\nl b a\n"));
    CHECK(!accepted("l a a/x\n"));
    CHECK(!accepted("l a ./.././x\n"));
    return vc_test_result("vc_release_links");
}
