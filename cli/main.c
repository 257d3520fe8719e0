/*
 * vc: runs the suite (`vc up`) and controls it, apache2ctl-style.
 */
#include "cli.h"
#include "vc_log.h"
#include "vc_util.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The directory of the running executable, so `vc up` finds the daemons
 * next to it. */
static char *self_dir(void)
{
    char buf[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
    if (n <= 0)
        return vc_strdup(".");
    buf[n] = '\0';
    char *slash = strrchr(buf, '/');
    if (slash)
        *slash = '\0';
    return vc_strdup(buf);
}

static int is_dir(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

int main(int argc, char **argv)
{
    cli_t cli = {.argv0 = argv[0]};
    vc_log_init("vc", VC_LOG_INFO, 0, 2);
    const char *data = getenv("VC_DATA"), *conf = getenv("VC_CONF");
    int i = 1;
    for (; i < argc && argv[i][0] == '-'; i++) {
        if (!strcmp(argv[i], "--data") && i + 1 < argc)
            data = argv[++i];
        else if (!strncmp(argv[i], "--data=", 7))
            data = argv[i] + 7;
        else if (!strcmp(argv[i], "--conf") && i + 1 < argc)
            conf = argv[++i];
        else if (!strncmp(argv[i], "--conf=", 7))
            conf = argv[i] + 7;
        else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            cli_usage(stdout);
            return 0;
        } else if (!strcmp(argv[i], "--version")) {
            printf("vc %s\n", VC_VERSION);
            return 0;
        } else {
            fprintf(stderr, "vc: unknown option %s\n", argv[i]);
            cli_usage(stderr);
            return 2;
        }
    }
    if (i >= argc) {
        cli_usage(stderr);
        return 2;
    }
    cli.data_dir = vc_strdup(data && *data ? data : VC_DEFAULT_DATA);
    if (conf && *conf) {
        /* Named (--conf, VC_CONF): it must exist. Only the default ./etc
         * may be missing, for the built-in defaults. */
        if (!is_dir(conf)) {
            fprintf(stderr, "vc: the configuration directory \"%s\" does not exist (--conf, VC_CONF)\n", conf);
            return 1;
        }
        cli.conf_dir = vc_strdup(conf);
    } else if (is_dir(VC_DEFAULT_CONF))
        cli.conf_dir = vc_strdup(VC_DEFAULT_CONF);
    cli.bin_dir = self_dir();

    const char *cmd = argv[i];
    int sub_argc = argc - i;
    char **sub_argv = argv + i;
    const cli_command_t *c = cli_command(cmd);
    int rc;
    if (c) {
        rc = c->run(&cli, sub_argc, sub_argv);
    } else {
        fprintf(stderr, "vc: unknown command \"%s\"\n", cmd);
        cli_usage(stderr);
        rc = 2;
    }
    free(cli.data_dir);
    free(cli.conf_dir);
    free(cli.bin_dir);
    return rc;
}
