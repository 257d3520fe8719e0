/* libFuzzer: the front's path resolution, on a small real tree, with any
 * bytes as the path. Nothing may crash, and whatever it returns must lie
 * inside the root. */
#include "../daemons/vc-front/core/route.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static route_site_t site;
static char root[256];

static void remove_tree(void)
{
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", root);
}

static void make_tree(void)
{
    char tmpl[] = "/tmp/vc-fuzz-route-XXXXXX";
    char *d = mkdtemp(tmpl);
    if (d == NULL || realpath(d, root) == NULL)
        abort();
    char p[512];
    const char *files[] = {"index.php", "app.php", "style.css", ".env", "a/b/c.php", "a/index.html", "x.jpg"};
    snprintf(p, sizeof(p), "%s/a", root);
    mkdir(p, 0755);
    snprintf(p, sizeof(p), "%s/a/b", root);
    mkdir(p, 0755);
    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        snprintf(p, sizeof(p), "%s/%s", root, files[i]);
        FILE *f = fopen(p, "w");
        if (f)
            fclose(f);
    }
    snprintf(p, sizeof(p), "%s/out.php", root);
    if (symlink("/etc/passwd", p) != 0)
        abort();
    site.root = root;
    site.root_len = strlen(root);
    site.front_controller = 1;
    atexit(remove_tree);
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    if (site.root == NULL)
        make_tree();
    static route_t rt;
    route_kind_t k = route_resolve(&site, (const char *)data, size, &rt);
    if (k == ROUTE_PHP || k == ROUTE_STATIC) {
        if (strncmp(rt.file, root, site.root_len) != 0 || (rt.file[site.root_len] != '/' && rt.file[site.root_len]))
            abort(); /* escaped the root */
    }
    return 0;
}
