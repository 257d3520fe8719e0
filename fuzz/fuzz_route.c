/* libFuzzer: the front's path resolution, on a small real tree, with any
 * bytes as the path. Nothing may crash, and whatever it returns must lie
 * inside the root. The same bytes are read as the name in an
 * X-Accel-Redirect or X-Sendfile header (handoff_name.h), which PHP sends:
 * what comes out has no NUL and no ".." segment, and an X-Accel-Redirect
 * URI resolves inside the root too. */
#include "../daemons/vc-front/core/handoff_name.h"
#include "../daemons/vc-front/core/route.h"

#include <fnmatch.h>
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
    /* A site's link, not root's (root's own are followed out of the root:
     * daemons/vc-front/core/root_links.h). */
    if (symlink("/etc/passwd", p) != 0 || (geteuid() == 0 && lchown(p, 65534, 65534) != 0))
        abort();
    site.root = root;
    site.root_len = strlen(root);
    site.front_controller = 1;
    atexit(remove_tree);
}

static void handoff(const unsigned char *data, size_t size)
{
    static char name[4097];
    static route_t rt;
    for (int accel = 0; accel < 2; accel++) {
        ssize_t n = handoff_name((const char *)data, size, accel, name, size % 2 ? sizeof(name) : 16);
        if (n < 0)
            continue;
        if ((size_t)n != strlen(name) || (size_t)n > size || strstr(name, "/../") || strncmp(name, "../", 3) == 0 ||
            strcmp(name, "..") == 0 || (n >= 3 && strcmp(name + n - 3, "/..") == 0))
            abort(); /* a name the front would look for, but should not */
        if (accel && name[0] == '/' &&
            (route_resolve(&site, name, (size_t)n, &rt) == ROUTE_STATIC &&
             (strncmp(rt.file, root, site.root_len) != 0 || (rt.file[site.root_len] != '/' && rt.file[site.root_len]))))
            abort(); /* escaped the root */
    }
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    if (site.root == NULL)
        make_tree();
    static route_t rt;
    /* An entry-script allowlist on every other input (by its length). */
    static char *entries[] = {"index.php", "a/*.php"};
    site.entry_scripts = entries;
    site.nentry_scripts = size % 2 ? 2 : 0;
    route_kind_t k = route_resolve(&site, (const char *)data, size, &rt);
    if (k == ROUTE_PHP || k == ROUTE_STATIC) {
        if (strncmp(rt.file, root, site.root_len) != 0 || (rt.file[site.root_len] != '/' && rt.file[site.root_len]))
            abort(); /* escaped the root */
    }
    if (k == ROUTE_PHP && site.nentry_scripts && fnmatch(entries[0], rt.script_name + 1, FNM_PATHNAME) != 0 &&
        fnmatch(entries[1], rt.script_name + 1, FNM_PATHNAME) != 0)
        abort(); /* ran a script the allowlist leaves out */
    handoff(data, size);
    return 0;
}
