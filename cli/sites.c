/*
 * vc configtest, and vc ensite / dissite / enconf / disconf, which work like
 * Debian's a2ensite family: NAME-available/NAME.conf is enabled by a
 * relative symlink in NAME-enabled/.
 */
#include "cli.h"
#include "htaccess_report.h"
#include "vc_util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

vc_config_t *cli_configtest_dir(const char *conf_dir, const char *data_dir, size_t *nfiles, char *err, size_t errlen)
{
    Vc__ConfigVersion *v = NULL;
    vc_config_t *cfg = vc_config_load(conf_dir, data_dir, NULL, 0, &v, err, errlen);
    *nfiles = v ? v->n_files : 0;
    vc_config_version_free(&v);
    return cfg;
}

int cmd_configtest(cli_t *cli, int argc, char **argv)
{
    char err[1024] = "";
    size_t nfiles = 0;
    vc_config_t *cfg = cli_configtest_dir(cli->conf_dir, cli->data_dir, &nfiles, err, sizeof(err));
    if (cfg == NULL) {
        fprintf(stderr, "%s\n", err);
        fprintf(stderr, "vc configtest: configuration refused\n");
        return 1;
    }
    for (size_t i = 0; i < cfg->nwarnings; i++)
        fprintf(stderr, "warning: %s\n", cfg->warnings[i]);
    htaccess_report(cfg);
    printf("Syntax OK: %zu file%s from %s, %zu site%s\n", nfiles, nfiles == 1 ? "" : "s",
           cli->conf_dir ? cli->conf_dir : "(built-in defaults)", cfg->nsites, cfg->nsites == 1 ? "" : "s");
    vc_config_destroy(&cfg);
    return 0;
}

static int valid_name(const char *name)
{
    if (!*name || strlen(name) > 200)
        return 0;
    for (const char *p = name; *p; p++)
        if (*p == '/' || (p == name && *p == '.'))
            return 0;
    return 1;
}

int cmd_enable(cli_t *cli, const char *which, int on, int argc, char **argv)
{
    const char *verb = argv[0];
    if (argc != 2) {
        fprintf(stderr, "usage: vc %s NAME\n", verb);
        return 2;
    }
    if (cli->conf_dir == NULL) {
        fprintf(stderr, "vc %s: no configuration directory (pass --conf DIR or run where ./etc exists)\n", verb);
        return 1;
    }
    const char *name = argv[1];
    size_t len = strlen(name);
    char *base = len > 5 && !strcmp(name + len - 5, ".conf") ? vc_strndup(name, len - 5) : vc_strdup(name);
    int rc = 1;
    /* Debian's names: sites-available, but conf-available. */
    const char *dir = strcmp(which, "site") == 0 ? "sites" : "conf";
    char *avail = vc_asprintf("%s/%s-available/%s.conf", cli->conf_dir, dir, base);
    char *enabled_dir = vc_asprintf("%s/%s-enabled", cli->conf_dir, dir);
    char *enabled = vc_asprintf("%s/%s.conf", enabled_dir, base);
    char *target = vc_asprintf("../%s-available/%s.conf", dir, base);
    struct stat st;
    if (!valid_name(base)) {
        fprintf(stderr, "vc %s: \"%s\" is not a valid name\n", verb, name);
    } else if (on) {
        if (stat(avail, &st) != 0) {
            fprintf(stderr, "vc %s: %s %s does not exist (%s)\n", verb, which, base, avail);
        } else if (lstat(enabled, &st) == 0) {
            printf("%s %s already enabled\n", which[0] == 's' ? "Site" : "Conf", base);
            rc = 0;
        } else if (vc_mkdirs(enabled_dir, 0755) < 0 || symlink(target, enabled) != 0) {
            fprintf(stderr, "vc %s: cannot create %s: %s\n", verb, enabled, strerror(errno));
        } else {
            printf("Enabling %s %s.\nTo activate the new configuration, run:\n  vc reload\n", which, base);
            rc = 0;
        }
    } else {
        if (lstat(enabled, &st) != 0) {
            fprintf(stderr, "vc %s: %s %s is not enabled\n", verb, which, base);
        } else if (!S_ISLNK(st.st_mode)) {
            fprintf(stderr, "vc %s: %s is not a symlink; remove it by hand\n", verb, enabled);
        } else if (unlink(enabled) != 0) {
            fprintf(stderr, "vc %s: cannot remove %s: %s\n", verb, enabled, strerror(errno));
        } else {
            printf("%s %s disabled.\nTo activate the new configuration, run:\n  vc reload\n",
                   which[0] == 's' ? "Site" : "Conf", base);
            rc = 0;
        }
    }
    free(base);
    free(avail);
    free(enabled_dir);
    free(enabled);
    free(target);
    return rc;
}
