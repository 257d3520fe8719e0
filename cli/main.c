/*
 * vc: runs the suite (`vc up`) and controls it, apache2ctl-style.
 */
#include "cli.h"
#include "userns.h"
#include "vc_confstore.h"
#include "vc_curve.h"
#include "vc_log.h"
#include "vc_util.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void usage(FILE *out)
{
    fputs("usage: vc [--data DIR] [--conf DIR] COMMAND [ARGS]\n"
          "\n"
          "Run the suite:\n"
          "  up [-d] [--root DIR] [--listen ADDR] [--tls-listen ADDR] [--mode MODE]\n"
          "     [--workers N] [--worker-script FILE]\n"
          "                      run every daemon in the foreground (-d: background)\n"
          "  stop                stop a running suite\n"
          "  reload              load the configuration again; the running one stays if\n"
          "                      the new one is refused\n"
          "  restart [DAEMON]    restart a daemon (front, php, bus) or all; fronts are\n"
          "                      replaced without closing the ports\n"
          "  status [--json] [--wait SECONDS]\n"
          "                      every daemon: pid, uptime, version, health\n"
          "  workers [--json]    the PHP workers: pid, state, front, requests, PSS, USS, request\n"
          "  scale N             set the PHP pool to N workers\n"
          "  events [--json] [--since DURATION] [--follow] [TOPIC-PREFIX]\n"
          "                      print events from the bus\n"
          "The response cache:\n"
          "  cache purge (--url URL | --prefix URL | --tag TAG | --site NAME | --all) [--soft]\n"
          "                      drop entries (soft: keep them, stale); no request gets\n"
          "                      them once this returns\n"
          "  cache stats [--json]  entries, bytes, hit and store counts\n"
          "  cache show URL [--json]  what is stored for a URL (and its variants)\n"
          "  cache warm (--sitemap URL | --list FILE|-) [--concurrency N] [--insecure] [--json]\n"
          "                      fill this node's cache from a sitemap or a list of URLs\n"
          "  cache check         whether the cache's databases agree (after a crash)\n"
          "Realtime (WebSocket, the Pusher protocol):\n"
          "  rooms [--json]      rooms of every front, their subscribers and presence members\n"
          "  rooms apps [--secret]  each site's realtime apps (id, key, secret)\n"
          "Certificates (vc-acme):\n"
          "  cert list [--json]  hosts, issuer, expiry, next renewal, the CA's window, last error\n"
          "  cert renew [--force] SITE|HOST  order a site's certificate now (--force: even if not due)\n"
          "  cert issue SITE|HOST  order a first certificate now, past any back-off\n"
          "  cert revoke [--reason N] SITE|HOST  revoke the certificate in service and order a new one\n"
          "Configuration:\n"
          "  configtest          check the configuration directory\n"
          "  ensite NAME | dissite NAME | enconf NAME | disconf NAME\n"
          "  keygen              a new curve_secret_key (CurveZMQ, for endpoints over TCP)\n"
          "  version\n"
          "\n"
          "DIR defaults: --data $VC_DATA or " VC_DEFAULT_DATA "; --conf $VC_CONF or " VC_DEFAULT_CONF
          " if it exists.\n",
          out);
}

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
            usage(stdout);
            return 0;
        } else if (!strcmp(argv[i], "--version")) {
            printf("vc %s\n", VC_VERSION);
            return 0;
        } else {
            fprintf(stderr, "vc: unknown option %s\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }
    if (i >= argc) {
        usage(stderr);
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
    int rc;
    if (!strcmp(cmd, "up"))
        rc = cmd_up(&cli, sub_argc, sub_argv);
    else if (!strcmp(cmd, "status"))
        rc = cmd_status(&cli, sub_argc, sub_argv);
    else if (!strcmp(cmd, "stop"))
        rc = cmd_stop(&cli, sub_argc, sub_argv);
    else if (!strcmp(cmd, "reload"))
        rc = cmd_reload(&cli, sub_argc, sub_argv);
    else if (!strcmp(cmd, "scale"))
        rc = cmd_ctl(&cli, "vc-php", "scale", sub_argc - 1, sub_argv + 1);
    else if (!strcmp(cmd, "workers"))
        rc = cmd_workers(&cli, sub_argc, sub_argv);
    else if (!strcmp(cmd, "restart"))
        rc = cmd_ctl(&cli, "vc", "restart", sub_argc - 1, sub_argv + 1);
    else if (!strcmp(cmd, "cache"))
        rc = cmd_cache(&cli, sub_argc, sub_argv);
    else if (!strcmp(cmd, "cert"))
        rc = cmd_cert(&cli, sub_argc, sub_argv);
    else if (!strcmp(cmd, "rooms"))
        rc = cmd_rooms(&cli, sub_argc, sub_argv);
    else if (!strcmp(cmd, "events"))
        rc = cmd_events(&cli, sub_argc, sub_argv);
    else if (!strcmp(cmd, "configtest"))
        rc = cmd_configtest(&cli, sub_argc, sub_argv);
    else if (!strcmp(cmd, "ensite") || !strcmp(cmd, "dissite"))
        rc = cmd_enable(&cli, "site", cmd[0] == 'e', sub_argc, sub_argv);
    else if (!strcmp(cmd, "enconf") || !strcmp(cmd, "disconf"))
        rc = cmd_enable(&cli, "conf", cmd[0] == 'e', sub_argc, sub_argv);
    else if (!strcmp(cmd, "keygen")) {
        /* curve_secret_key: ZeroMQ over TCP (vc_curve.h). */
        char key[41];
        rc = vc_curve_keygen(key) == 0 ? 0 : 1;
        if (rc == 0)
            printf("%s\n", key);
        else
            fprintf(stderr, "vc keygen: this libzmq has no CURVE\n");
    } else if (!strcmp(cmd, "version")) {
        printf("vc %s\n", VC_VERSION);
        rc = 0;
    } else if (!strcmp(cmd, "help")) {
        usage(stdout);
        rc = 0;
    } else {
        fprintf(stderr, "vc: unknown command \"%s\"\n", cmd);
        usage(stderr);
        rc = 2;
    }
    free(cli.data_dir);
    free(cli.conf_dir);
    free(cli.bin_dir);
    return rc;
}
