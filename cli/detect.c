#include "detect.h"
#include "vc_util.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* One rule: the files that say which application it is (all of them,
 * from the directory given), and the document root from there. */
typedef struct rule {
    const char *app;
    const char *marks[3];
    const char *root; /* "" : the directory itself */
    /* Where it keeps its data outside the tree the wall leaves writable,
     * by its own installer's default (MediaWiki's SQLite: $IP/../data),
     * or NULL. */
    const char *data;
} rule_t;

/* In order: the first whose marks are all there wins. A framework before
 * the plain public/index.php, which each of them also has. */
static const rule_t rules[] = {
    {"Laravel", {"artisan", "public/index.php", NULL}, "public", NULL},
    {"Symfony", {"bin/console", "public/index.php", NULL}, "public", NULL},
    {"Drupal (Composer layout)", {"web/core/lib/Drupal.php", "web/index.php", NULL}, "web", NULL},
    {"Drupal", {"core/lib/Drupal.php", "index.php", NULL}, "", NULL},
    {"WordPress", {"wp-login.php", "wp-includes/version.php", NULL}, "", NULL},
    {"MediaWiki", {"includes/MediaWiki.php", "index.php", NULL}, "", "../data"},
    {"MediaWiki", {"includes/MediaWiki.php", "api.php", NULL}, "", "../data"},
    {"an application with public/index.php", {"public/index.php", NULL, NULL}, "public", NULL},
};

static int exists(const char *dir, const char *rel)
{
    char *p = vc_asprintf("%s/%s", dir, rel);
    struct stat st;
    int ok = stat(p, &st) == 0;
    free(p);
    return ok;
}

detected_t detect_app(const char *dir)
{
    for (size_t i = 0; i < VC_ARRAY_SIZE(rules); i++) {
        int all = 1;
        for (size_t m = 0; m < VC_ARRAY_SIZE(rules[i].marks) && rules[i].marks[m] && all; m++)
            all = exists(dir, rules[i].marks[m]);
        if (!all)
            continue;
        /* A plain public/index.php beside an index.php of its own is not
         * a public/ layout: the directory serves itself. */
        if (!strcmp(rules[i].root, "public") && i + 1 == VC_ARRAY_SIZE(rules) && exists(dir, "index.php"))
            break;
        char *root = *rules[i].root ? vc_asprintf("%s/%s", dir, rules[i].root) : vc_strdup(dir);
        char *data = NULL;
        if (rules[i].data) {
            char *at = vc_asprintf("%s/%s", dir, rules[i].data);
            struct stat st;
            data = stat(at, &st) == 0 && S_ISDIR(st.st_mode) ? realpath(at, NULL) : NULL;
            free(at);
        }
        return (detected_t){.app = rules[i].app, .root = root, .data = data};
    }
    return (detected_t){0};
}
