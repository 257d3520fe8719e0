/* The front's path resolution, on a real directory tree. */
#include "../daemons/vc-front/core/route.h"
#include "vc_test.h"

#include <sys/stat.h>
#include <unistd.h>

static route_site_t site;
static char *root;         /* the site's root, a real path */
static char outside[4200]; /* beside it */

static route_kind_t go(const char *path, route_t *rt)
{
    return route_resolve(&site, path, strlen(path), rt);
}

/* The site's tree, and links out of it made by a site's PHP and by root. */
static void make_tree(void)
{
    vc_test_write(outside, "secret.php", "<?php echo 'secret';");
    vc_test_write(outside, "secret.txt", "secret");
    vc_test_write(root, "index.php", "<?php");
    vc_test_write(root, "app.php", "<?php");
    vc_test_write(root, "style.css", "body{}");
    vc_test_write(root, ".htaccess", "deny");
    vc_test_write(root, ".user.ini", "x=1");
    vc_test_write(root, ".git/config", "[core]");
    vc_test_write(root, "upload.jpg", "GIF89a<?php system('id');");
    vc_test_write(root, "docs/index.html", "<p>docs");
    vc_test_write(root, "blog/index.php", "<?php");
    vc_test_write(root, "empty/keep", "");
    vc_test_write(root, ".well-known/acme-challenge/tok", "tok");
    vc_test_write(root, "lib.phar", "<?php __HALT_COMPILER();");
    vc_test_write(root, "view.phtml", "<?php");
    vc_test_write(root, "Old.PHP", "<?php");
    vc_test_write(root, "conf.inc", "<?php $pw = 1;");
    char link[4300];
    snprintf(link, sizeof(link), "%s/escape.php", root);
    CHECK(symlink(outside, link) == 0 || 1);
    unlink(link);
    snprintf(link, sizeof(link), "%s/evil.php", root);
    char target[4300];
    snprintf(target, sizeof(target), "%s/secret.php", outside);
    CHECK(symlink(target, link) == 0);
    /* Made by a site's PHP: its pool's user's, never root's. */
    CHECK(geteuid() != 0 || lchown(link, 65534, 65534) == 0);
    snprintf(link, sizeof(link), "%s/leak.txt", root);
    snprintf(target, sizeof(target), "%s/secret.txt", outside);
    CHECK(symlink(target, link) == 0);
    CHECK(geteuid() != 0 || lchown(link, 65534, 65534) == 0);
    /* Made by root, as a Debian package links its tree into its root. */
    snprintf(link, sizeof(link), "%s/packaged.php", root);
    snprintf(target, sizeof(target), "%s/secret.php", outside);
    CHECK(symlink(target, link) == 0);
    snprintf(link, sizeof(link), "%s/data.php", root);
    snprintf(target, sizeof(target), "%s/style.css", root);
    CHECK(symlink(target, link) == 0); /* a .php name for a non-.php file */
}

/* Scripts, PATH_INFO, static files, indexes, the front controller, dotfiles. */
static void php_and_static_files(void)
{
    route_t rt;
    char want[4300];
    /* PHP source by other names is never a static file. */
    CHECK(go("/lib.phar", &rt) == ROUTE_NOT_FOUND);
    CHECK(go("/view.phtml", &rt) == ROUTE_NOT_FOUND);
    CHECK(go("/Old.PHP", &rt) == ROUTE_NOT_FOUND);
    CHECK(go("/conf.inc", &rt) == ROUTE_NOT_FOUND);
    CHECK(go("/style.css", &rt) == ROUTE_STATIC);

    CHECK(go("/app.php", &rt) == ROUTE_PHP);
    snprintf(want, sizeof(want), "%s/app.php", root);
    CHECK_STR(rt.file, want);
    CHECK_STR(rt.script_name, "/app.php");
    CHECK_STR(rt.path_info, "");

    /* PATH_INFO split at the first .php followed by '/'. */
    CHECK(go("/app.php/users/42", &rt) == ROUTE_PHP);
    CHECK_STR(rt.script_name, "/app.php");
    CHECK_STR(rt.path_info, "/users/42");
    CHECK_STR(rt.document_uri, "/app.php");
    CHECK(go("/app.php/x.php/y", &rt) == ROUTE_PHP);
    CHECK_STR(rt.script_name, "/app.php");
    CHECK_STR(rt.path_info, "/x.php/y");

    /* CVE-2019-11043 style and upload shapes: a .php that does not exist
     * is a 404, never the file before it. */
    CHECK(go("/upload.jpg/x.php", &rt) == ROUTE_NOT_FOUND);
    CHECK(go("/upload.jpg", &rt) == ROUTE_STATIC);
    CHECK(go("/missing.php", &rt) == ROUTE_NOT_FOUND);
    CHECK(go("/missing.php/info", &rt) == ROUTE_NOT_FOUND);
    CHECK(go("/app.phpx", &rt) == ROUTE_PHP); /* front controller */
    CHECK_STR(rt.script_name, "/index.php");

    /* Static files, directories, indexes. */
    CHECK(go("/style.css", &rt) == ROUTE_STATIC);
    CHECK(go("/docs", &rt) == ROUTE_DIR_REDIRECT);
    CHECK(go("/docs/", &rt) == ROUTE_STATIC);
    CHECK(go("/blog/", &rt) == ROUTE_PHP);
    CHECK_STR(rt.script_name, "/blog/index.php");
    CHECK(go("/empty/", &rt) == ROUTE_FORBIDDEN);
    CHECK(go("/", &rt) == ROUTE_PHP);
    CHECK_STR(rt.script_name, "/index.php");

    /* Front controller for what does not exist; off: 404. */
    CHECK(go("/some/route", &rt) == ROUTE_PHP);
    CHECK_STR(rt.script_name, "/index.php");
    CHECK_STR(rt.document_uri, "/index.php");
    site.front_controller = 0;
    CHECK(go("/some/route", &rt) == ROUTE_NOT_FOUND);
    site.front_controller = 1;

    /* Dotfiles never, /.well-known/ yes. */
    CHECK(go("/.htaccess", &rt) == ROUTE_NOT_FOUND);
    CHECK(go("/.user.ini", &rt) == ROUTE_NOT_FOUND);
    CHECK(go("/.git/config", &rt) == ROUTE_NOT_FOUND);
    CHECK(go("/docs/.hidden", &rt) == ROUTE_NOT_FOUND);
    CHECK(go("/.well-known/acme-challenge/tok", &rt) == ROUTE_STATIC);
    CHECK(go("/../etc/passwd", &rt) == ROUTE_NOT_FOUND);
    CHECK(go("/docs/../../x", &rt) == ROUTE_NOT_FOUND);
}

/* A .htaccess's DirectoryIndex: its names in order, relative or from
 * the root; none found, or none given (disabled), is 403. */
static void directory_index(void)
{
    route_t rt;
    const char *names[] = {"home.html", "index.php", "/index.php"};
    site.index = names;
    site.nindex = 3;
    site.index_set = 1;
    CHECK(go("/docs/", &rt) == ROUTE_PHP); /* its index.html is not a name given: the one from the root */
    CHECK_STR(rt.script_name, "/index.php");
    CHECK(go("/blog/", &rt) == ROUTE_PHP);
    CHECK_STR(rt.script_name, "/blog/index.php");
    site.nindex = 2;
    CHECK(go("/empty/", &rt) == ROUTE_FORBIDDEN);
    site.nindex = 3;
    names[0] = "index.html";
    CHECK(go("/docs/", &rt) == ROUTE_STATIC);
    CHECK_STR(rt.document_uri, "/docs/index.html");
    names[0] = "../index.php"; /* never above the directory by a name */
    site.nindex = 1;
    CHECK(go("/blog/", &rt) == ROUTE_FORBIDDEN);
    site.nindex = 0;
    CHECK(go("/blog/", &rt) == ROUTE_FORBIDDEN);
    site.index_set = 0;
    CHECK(go("/blog/", &rt) == ROUTE_PHP);
}

/* Links out of the root: only root's are followed. */
static void symlinks(void)
{
    route_t rt;
    char want[4300];
    /* Symlinks out of the root: neither executed nor served. */
    CHECK(go("/evil.php", &rt) == ROUTE_NOT_FOUND);
    CHECK(go("/leak.txt", &rt) == ROUTE_PHP); /* not served: falls to index.php */
    CHECK_STR(rt.script_name, "/index.php");
    CHECK(go("/data.php", &rt) == ROUTE_NOT_FOUND);
    /* Root's own link is followed, as Apache and nginx follow it; a link
     * another user made is not, even to the same file. */
    if (geteuid() == 0) {
        CHECK(go("/packaged.php", &rt) == ROUTE_PHP);
        snprintf(want, sizeof(want), "%s/secret.php", outside);
        CHECK_STR(rt.file, want);
    } else {
        CHECK(go("/packaged.php", &rt) == ROUTE_NOT_FOUND);
    }
}

/* What the path cache keeps, and what it checks every time. */
static void the_path_cache(void)
{
    route_t rt;
    char want[4300];
    /* Resolutions are cached for a second, but whether the result lies
     * inside the root is checked on every lookup: a site whose root is the
     * parent directory may run evil.php's target; the site itself still
     * may not, right after. */
    route_site_t parent = {.root = strdup(root), .front_controller = 0};
    *strrchr((char *)parent.root, '/') = '\0';
    parent.root_len = strlen(parent.root);
    char via_parent[4400];
    snprintf(via_parent, sizeof(via_parent), "%s/evil.php", root + parent.root_len);
    if (parent.root_len > 0 && strstr(via_parent, "/.") == NULL) {
        CHECK(route_resolve(&parent, via_parent, strlen(via_parent), &rt) == ROUTE_PHP);
        CHECK(go("/evil.php", &rt) == ROUTE_NOT_FOUND);
    }
    free((char *)parent.root);
    /* A file that appears shows at once (misses are not kept); one that
     * goes is gone within the second. */
    site.front_controller = 0;
    CHECK(go("/new.php", &rt) == ROUTE_NOT_FOUND);
    vc_test_write(root, "new.php", "<?php");
    CHECK(go("/new.php", &rt) == ROUTE_PHP);
    snprintf(want, sizeof(want), "%s/new.php", root);
    unlink(want);
    usleep(1100 * 1000);
    CHECK(go("/new.php", &rt) == ROUTE_NOT_FOUND);
    site.front_controller = 1;
}

/* Paths no client should send: 400. */
static void bytes_no_client_sends(void)
{
    route_t rt;
    /* Bytes no client should send. */
    CHECK(route_resolve(&site, "/app.php\0.jpg", 13, &rt) == ROUTE_BAD);
    CHECK(go("", &rt) == ROUTE_BAD);
    CHECK(go("app.php", &rt) == ROUTE_BAD);
    char longpath[PATH_MAX + 10];
    memset(longpath, 'a', sizeof(longpath) - 1);
    longpath[0] = '/';
    longpath[sizeof(longpath) - 1] = '\0';
    CHECK(go(longpath, &rt) == ROUTE_BAD);
}

/* site.entry_scripts. */
static void entry_scripts(void)
{
    route_t rt;
    /* An allowlist of entry scripts: any other .php file is as if it were
     * not there (an uploaded shell.php). */
    vc_test_write(root, "uploads/shell.php", "<?php system($_GET['c']);");
    vc_test_write(root, "blog/sub/deep.php", "<?php");
    char *entries[] = {"index.php", "app.php", "blog/*.php"};
    site.entry_scripts = entries;
    site.nentry_scripts = 3;
    CHECK(go("/uploads/shell.php", &rt) == ROUTE_PHP); /* the front controller, not the upload */
    CHECK_STR(rt.script_name, "/index.php");
    CHECK(go("/uploads/shell.php/x", &rt) == ROUTE_PHP && !strcmp(rt.script_name, "/index.php"));
    CHECK(go("/app.php/users/1", &rt) == ROUTE_PHP && !strcmp(rt.path_info, "/users/1"));
    CHECK(go("/blog/", &rt) == ROUTE_PHP && !strcmp(rt.script_name, "/blog/index.php"));
    CHECK(go("/blog/sub/deep.php", &rt) == ROUTE_PHP); /* '*' stops at '/' */
    CHECK_STR(rt.script_name, "/index.php");
    CHECK(go("/missing.php", &rt) == ROUTE_PHP); /* not there: the front controller too */
    CHECK_STR(rt.script_name, "/index.php");
    site.front_controller = 0;
    CHECK(go("/uploads/shell.php", &rt) == ROUTE_NOT_FOUND);
    CHECK_STR(rt.why, "not an entry script");
    CHECK(go("/index.php", &rt) == ROUTE_PHP);
    /* The front controller itself left out: nothing runs in its place. */
    site.front_controller = 1;
    entries[0] = "none.php";
    CHECK(go("/uploads/shell.php", &rt) == ROUTE_NOT_FOUND);
    site.nentry_scripts = 0;
    CHECK(go("/uploads/shell.php", &rt) == ROUTE_PHP && !strcmp(rt.script_name, "/uploads/shell.php"));
}

/* site.deny: a prefix is 403 for scripts, files and what is not there. */
static void denied_prefixes(void)
{
    route_t rt;
    vc_test_write(root, "config/settings.php", "<?php");
    vc_test_write(root, "config/db.ini", "password=x");
    char *deny[] = {"/config/"};
    site.deny = deny;
    site.ndeny = 1;
    CHECK(go("/config/settings.php", &rt) == ROUTE_FORBIDDEN);
    CHECK(go("/config/db.ini", &rt) == ROUTE_FORBIDDEN);
    CHECK(go("/config/nothing", &rt) == ROUTE_FORBIDDEN);
    CHECK(go("/config", &rt) != ROUTE_FORBIDDEN); /* the prefix as written, as nginx's */
    CHECK(go("/configx/a", &rt) == ROUTE_PHP);    /* the front controller */
    site.ndeny = 0;
    CHECK(go("/config/db.ini", &rt) == ROUTE_STATIC);
}

int main(void)
{
    char *tmp = vc_test_tmpdir();
    root = realpath(tmp, NULL);
    snprintf(outside, sizeof(outside), "%s-outside", root);
    mkdir(outside, 0755);
    make_tree();
    site.root = root;
    site.root_len = strlen(root);
    site.front_controller = 1;
    php_and_static_files();
    directory_index();
    symlinks();
    the_path_cache();
    bytes_no_client_sends();
    entry_scripts();
    denied_prefixes();
    vc_test_rmtree(root);
    vc_test_rmtree(outside);
    free(root);
    free(tmp);
    return vc_test_result("route");
}
