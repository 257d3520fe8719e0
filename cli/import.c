/*
 * vc import nginx|apache PATH [--dry-run] [--force]: another server's sites
 * as the suite's (docs/configuration.md, "Moving from nginx or Apache"). The report says
 * line by line what was converted and what was not. Nothing live is
 * touched until the new sites pass configtest beside the configuration
 * already there: they are checked in a staging directory that links
 * every enabled file, and only then written and enabled.
 */
#include "cli.h"
#include "import_site.h"
#include "vc_util.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Links each file of conf_dir/sub into stage/sub, but those named like
 * the new sites (replaced with --force). */
static int link_enabled(const char *conf_dir, const char *stage, const char *sub, const import_t *im)
{
    char *from = vc_asprintf("%s/%s", conf_dir, sub), *to = vc_asprintf("%s/%s", stage, sub);
    int rc = vc_mkdirs(to, 0700);
    DIR *dir = opendir(from);
    for (struct dirent *e; rc == 0 && dir && (e = readdir(dir)) != NULL;) {
        if (e->d_name[0] == '.')
            continue;
        int replaced = 0;
        for (size_t i = 0; i < im->nsites; i++) {
            char *mine = vc_asprintf("%s.conf", im->sites[i].name);
            replaced |= strcmp(mine, e->d_name) == 0;
            free(mine);
        }
        char *src = vc_asprintf("%s/%s", from, e->d_name), *dst = vc_asprintf("%s/%s", to, e->d_name);
        char real[PATH_MAX];
        if (!replaced && (realpath(src, real) == NULL || symlink(real, dst) != 0))
            rc = -1;
        free(src);
        free(dst);
    }
    if (dir)
        closedir(dir);
    free(from);
    free(to);
    return rc;
}

static void remove_stage(const char *stage)
{
    const char *subs[] = {"sites-enabled", "conf-enabled", ""};
    for (size_t i = 0; i < VC_ARRAY_SIZE(subs); i++) {
        char *d = vc_asprintf("%s/%s", stage, subs[i]);
        DIR *dir = opendir(d);
        for (struct dirent *e; dir && (e = readdir(dir)) != NULL;) {
            if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && strcmp(e->d_name, "sites-enabled") &&
                strcmp(e->d_name, "conf-enabled")) {
                char *f = vc_asprintf("%s/%s", d, e->d_name);
                unlink(f);
                free(f);
            }
        }
        if (dir)
            closedir(dir);
        rmdir(d);
        free(d);
    }
}

static int write_file(const char *path, const char *text)
{
    char *tmp = vc_asprintf("%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    int rc = f && fputs(text, f) >= 0 && fclose(f) == 0 && rename(tmp, path) == 0 ? 0 : -1;
    if (rc < 0)
        unlink(tmp);
    free(tmp);
    return rc;
}

/* The sites beside the enabled configuration, in a staging directory:
 * NULL if configtest passes there, else its message. */
static char *check_staged(cli_t *cli, const char *conf_dir, const import_t *im, const char *from)
{
    char *tmpl = vc_asprintf("%s/.import-XXXXXX", conf_dir);
    char err[1024] = "";
    if (mkdtemp(tmpl) == NULL) {
        char *why = vc_asprintf("cannot stage in %s: %s", conf_dir, strerror(errno));
        free(tmpl);
        return why;
    }
    char *main_conf = vc_asprintf("%s/vc.conf", conf_dir), real[PATH_MAX];
    char *staged_main = vc_asprintf("%s/vc.conf", tmpl);
    int rc = realpath(main_conf, real) ? symlink(real, staged_main) : 0;
    if (rc == 0)
        rc = link_enabled(conf_dir, tmpl, "conf-enabled", im);
    if (rc == 0)
        rc = link_enabled(conf_dir, tmpl, "sites-enabled", im);
    for (size_t i = 0; rc == 0 && i < im->nsites; i++) {
        char *path = vc_asprintf("%s/sites-enabled/%s.conf", tmpl, im->sites[i].name);
        char *text = import_site_text(&im->sites[i], from);
        rc = write_file(path, text);
        free(text);
        free(path);
    }
    char *why = NULL;
    size_t nfiles;
    vc_config_t *cfg = rc == 0 ? cli_configtest_dir(tmpl, cli->data_dir, &nfiles, err, sizeof(err)) : NULL;
    if (rc != 0)
        why = vc_asprintf("cannot stage in %s: %s", tmpl, strerror(errno));
    else if (cfg == NULL)
        why = vc_strdup(err);
    vc_config_destroy(&cfg);
    remove_stage(tmpl);
    free(main_conf);
    free(staged_main);
    free(tmpl);
    return why;
}

/* The listeners and body limit the server had, as a conf file left
 * disabled: the suite's own may differ on purpose (a port it shares). */
static int write_global(const char *conf_dir, const import_t *im, const char *kind)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    fprintf(f,
            "# What %s listened on and accepted, from `vc import %s`. Not enabled:\n"
            "# `vc enconf imported-%s` takes it (vc.conf must not set these too).\n",
            kind, kind, kind);
    const import_list_t *lists[] = {&im->listen, &im->tls_listen};
    const char *names[] = {"listen", "tls_listen"};
    for (size_t k = 0; k < 2; k++) {
        if (lists[k]->n == 0)
            continue;
        fprintf(f, "%s = [", names[k]);
        for (size_t i = 0; i < lists[k]->n; i++)
            fprintf(f, "%s\"%s\"", i ? ", " : "", lists[k]->v[i]);
        fputs("];\n", f);
    }
    if (im->max_body >= 0)
        fprintf(f, "front: { max_body = %lld; };\n", im->max_body);
    fclose(f);
    char *dir = vc_asprintf("%s/conf-available", conf_dir), *path = vc_asprintf("%s/imported-%s.conf", dir, kind);
    int rc = vc_mkdirs(dir, 0755) == 0 ? write_file(path, text) : -1;
    free(text);
    free(dir);
    free(path);
    return rc;
}

static int write_sites(const char *conf_dir, const import_t *im, const char *from)
{
    char *avail = vc_asprintf("%s/sites-available", conf_dir), *enabled = vc_asprintf("%s/sites-enabled", conf_dir);
    int rc = vc_mkdirs(avail, 0755) == 0 && vc_mkdirs(enabled, 0755) == 0 ? 0 : -1;
    for (size_t i = 0; rc == 0 && i < im->nsites; i++) {
        const import_site_t *s = &im->sites[i];
        char *path = vc_asprintf("%s/%s.conf", avail, s->name), *text = import_site_text(s, from);
        char *link = vc_asprintf("%s/%s.conf", enabled, s->name),
             *target = vc_asprintf("../sites-available/%s.conf", s->name);
        rc = write_file(path, text);
        struct stat st;
        if (rc == 0 && lstat(link, &st) != 0)
            rc = symlink(target, link);
        printf("  %s: %s (enabled)\n", s->name, path);
        free(path);
        free(text);
        free(link);
        free(target);
    }
    free(avail);
    free(enabled);
    return rc;
}

/* The sites with nowhere to serve from are dropped: configtest would refuse them. */
static void drop_rootless(import_t *im)
{
    size_t kept = 0;
    for (size_t i = 0; i < im->nsites; i++) {
        if (im->sites[i].root == NULL) {
            import_note(im, im->sites[i].file, im->sites[i].line, IMPORT_NOT_CONVERTED,
                        "server without a root: no site made");
            import_site_free(&im->sites[i]);
            continue;
        }
        im->sites[kept++] = im->sites[i];
    }
    im->nsites = kept;
}

int cmd_import(cli_t *cli, int argc, char **argv)
{
    int dry = 0, force = 0, verbose = 0;
    const char *kind = NULL, *from = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--dry-run") == 0)
            dry = 1;
        else if (strcmp(argv[i], "--force") == 0)
            force = 1;
        else if (strcmp(argv[i], "--verbose") == 0)
            verbose = 1;
        else if (!kind)
            kind = argv[i];
        else if (!from)
            from = argv[i];
        else
            kind = NULL, i = argc;
    }
    if (kind == NULL || from == NULL || (strcmp(kind, "nginx") != 0 && strcmp(kind, "apache") != 0)) {
        fprintf(stderr, "usage: vc import nginx|apache PATH [--dry-run] [--force] [--verbose]\n");
        return 2;
    }
    const char *conf_dir = cli->conf_dir ? cli->conf_dir : VC_DEFAULT_CONF;
    import_t im = {.report = stdout, .max_body = -1, .verbose = verbose};
    char err[1024] = "";
    int (*read)(import_t *, const char *, char *, size_t) = kind[0] == 'n' ? import_nginx : import_apache;
    if (read(&im, from, err, sizeof(err)) < 0) {
        fprintf(stderr, "vc import: %s\n", err);
        return 1;
    }
    drop_rootless(&im);
    import_name_sites(&im);
    int rc = 1;
    char *why = NULL;
    for (size_t i = 0; i < im.nsites && !force; i++) {
        char *path = vc_asprintf("%s/sites-available/%s.conf", conf_dir, im.sites[i].name);
        struct stat st;
        if (stat(path, &st) == 0 && why == NULL)
            why = vc_asprintf("%s exists (--force replaces it)", path);
        free(path);
    }
    printf("%zu directives converted, %zu not needed, %zu NOT CONVERTED; %zu site%s\n", im.counts[IMPORT_CONVERTED],
           im.counts[IMPORT_NOT_NEEDED], im.counts[IMPORT_NOT_CONVERTED], im.nsites, im.nsites == 1 ? "" : "s");
    if (why == NULL && im.nsites == 0)
        why = vc_strdup("no server with a root to import");
    if (why == NULL && vc_mkdirs(conf_dir, 0755) < 0)
        why = vc_asprintf("cannot make %s: %s", conf_dir, strerror(errno));
    if (why == NULL)
        why = check_staged(cli, conf_dir, &im, from);
    if (why) {
        fprintf(stderr, "vc import: nothing written: %s\n", why);
    } else if (dry) {
        printf("configtest passes with them; --dry-run: nothing written\n");
        rc = 0;
    } else if (write_sites(conf_dir, &im, from) < 0 || write_global(conf_dir, &im, kind) < 0) {
        fprintf(stderr, "vc import: writing into %s: %s\n", conf_dir, strerror(errno));
    } else {
        printf("  listeners and body limit: %s/conf-available/imported-%s.conf (not enabled)\n"
               "configtest passes; to serve them, run:\n  vc reload\n",
               conf_dir, kind);
        rc = 0;
    }
    free(why);
    import_free(&im);
    return rc;
}
