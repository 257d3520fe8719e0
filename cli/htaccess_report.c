/*
 * What vc configtest says of the sites' .htaccess files: each file the
 * front would read (sites with `htaccess` on), compiled as the front
 * compiles it (libhtaccess/htaccess.h), and every directive it
 * does not apply or that closes a directory, with its file and line. The
 * walk is bounded (depth, directories) and follows no symbolic link: a
 * tree of uploads must not make configtest slow.
 */
#include "htaccess_report.h"
#include "htaccess.h"
#include "vc_util.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_DEPTH 16
#define MAX_DIRS 20000

typedef struct walk {
    size_t dirs, closed, ignored;
    int cut; /* the bound was reached */
} walk_t;

static void report_file(walk_t *w, const char *dir)
{
    char *file = vc_asprintf("%s/.htaccess", dir);
    size_t len;
    char *text = vc_read_file(file, &len);
    if (text) {
        htaccess_t *h = htaccess_compile(file, text, len);
        if (htaccess_unreadable(h)) {
            printf("htaccess: %s: %s and what is below it answer 403\n", htaccess_unreadable(h), dir);
            w->closed++;
        }
        for (size_t i = 0; htaccess_ignored(h, i); i++) {
            printf("htaccess: %s: not applied by the suite\n", htaccess_ignored(h, i));
            w->ignored++;
        }
        htaccess_free(h);
        free(text);
    }
    free(file);
}

static void walk_dir(walk_t *w, const char *dir, int depth)
{
    if (depth > MAX_DEPTH || w->dirs >= MAX_DIRS) {
        w->cut = 1;
        return;
    }
    w->dirs++;
    report_file(w, dir);
    DIR *d = opendir(dir);
    if (d == NULL)
        return;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.' && (!e->d_name[1] || (e->d_name[1] == '.' && !e->d_name[2])))
            continue;
        struct stat st;
        if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode))
            continue;
        char *sub = vc_asprintf("%s/%s", dir, e->d_name);
        walk_dir(w, sub, depth + 1);
        free(sub);
    }
    closedir(d);
}

void htaccess_report(const vc_config_t *cfg)
{
    for (size_t i = 0; i < cfg->nsites; i++) {
        const vc_site_t *s = &cfg->sites[i];
        if (!s->htaccess || s->root == NULL)
            continue;
        walk_t w = {0};
        walk_dir(&w, s->root, 0);
        if (w.closed || w.ignored || w.cut)
            printf("htaccess: site %s: %zu director%s looked at, %zu closed, %zu directive%s not applied%s\n", s->name,
                   w.dirs, w.dirs == 1 ? "y" : "ies", w.closed, w.ignored, w.ignored == 1 ? "" : "s",
                   w.cut ? " (the walk stopped at its bound: the rest is not listed)" : "");
    }
}
