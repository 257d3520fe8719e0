/*
 * The suite a command of vc talks to: the one running under the data
 * directory (--data, VC_DATA), as its supervisor recorded it.
 */
#include "cli.h"
#include "userns.h"
#include "vc_confstore.h"
#include "vc_curve.h"
#include "vc_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

vc_config_t *cli_running_config(cli_t *cli)
{
    char *data = realpath(cli->data_dir, NULL);
    if (data == NULL) {
        fprintf(stderr, "vc: no suite runs under %s (the directory does not exist)\n", cli->data_dir);
        return NULL;
    }
    char *pidfile = vc_asprintf("%s/run/vc.pid", data);
    char err[1024];
    vc_config_t *cfg = NULL;
    struct stat st;
    if (stat(pidfile, &st) != 0)
        fprintf(stderr, "vc: no suite runs under %s (start one with `vc up`)\n", data);
    else if (userns_join(pidfile), 0)
        ;
    else if ((cfg = vc_confstore_load(data, err, sizeof(err))) == NULL)
        fprintf(stderr, "vc: no suite runs under %s: %s\n", data, err);
    else
        vc_curve_use(cfg->curve_secret_key); /* ZeroMQ over TCP: the suite's key */
    free(pidfile);
    free(data);
    return cfg;
}
