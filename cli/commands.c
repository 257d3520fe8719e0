/*
 * vc's commands, one table: each row's name, what follows it, what it
 * does and the function that runs it. `vc help` prints the table, main.c
 * finds a command in it, and a test holds docs/man/vc.1 to it
 * (integration/test_33_tables.py).
 */
#include "cli.h"
#include "vc_curve.h"

#include <stdio.h>
#include <string.h>

static int run_scale(cli_t *cli, int argc, char **argv)
{
    return cmd_ctl(cli, "vc-php", "scale", argc - 1, argv + 1);
}

static int run_recycle(cli_t *cli, int argc, char **argv)
{
    return cmd_ctl(cli, "vc-php", "recycle", argc - 1, argv + 1);
}

static int run_restart(cli_t *cli, int argc, char **argv)
{
    return cmd_ctl(cli, "vc", "restart", argc - 1, argv + 1);
}

/* ensite, dissite, enconf, disconf: the name says which and which way. */
static int run_enable(cli_t *cli, int argc, char **argv)
{
    const char *cmd = argv[0];
    return cmd_enable(cli, strstr(cmd, "site") ? "site" : "conf", cmd[0] == 'e', argc, argv);
}

static int run_keygen(cli_t *cli, int argc, char **argv)
{
    (void)cli, (void)argc, (void)argv;
    char key[41]; /* curve_secret_key: ZeroMQ over TCP (vc_curve.h) */
    if (vc_curve_keygen(key) != 0) {
        fprintf(stderr, "vc keygen: this libzmq has no CURVE\n");
        return 1;
    }
    printf("%s\n", key);
    return 0;
}

static int run_version(cli_t *cli, int argc, char **argv)
{
    (void)cli, (void)argc, (void)argv;
    printf("vc %s\n", VC_VERSION);
    return 0;
}

static int run_help(cli_t *cli, int argc, char **argv)
{
    (void)cli, (void)argc, (void)argv;
    cli_usage(stdout);
    return 0;
}

/* A row with no group carries on its predecessor's; one with no run is
 * help for the row of the same name before it. */
static const cli_command_t commands[] = {
    {"Run the suite", "up",
     "[-d] [--root DIR] [--listen ADDR] [--tls-listen ADDR] [--mode MODE]\n"
     "     [--workers N] [--worker-script FILE] [--worker-restore] [--userns]",
     "run every daemon in the foreground (-d: background)", cmd_up},
    {NULL, "stop", "", "stop a running suite", cmd_stop},
    {NULL, "reload", "", "load the configuration again; the running one stays if the new one is refused", cmd_reload},
    {NULL, "restart", "[DAEMON]",
     "restart a daemon (front, php, bus) or all; fronts are replaced without closing the "
     "ports",
     run_restart},
    {NULL, "status", "[--json] [--wait SECONDS]", "every daemon: pid, uptime, version, health", cmd_status},
    {NULL, "workers", "[--json]", "the PHP workers: pid, state, front, requests, PSS, USS, request", cmd_workers},
    {NULL, "scale", "N", "set the PHP pool to N workers", run_scale},
    {NULL, "recycle", "PID", "replace one PHP worker once its request is answered", run_recycle},
    {NULL, "events", "[--json] [--since DURATION] [--follow] [TOPIC-PREFIX] | --list [--json]",
     "print events from the bus; --list: every topic and its fields", cmd_events},
    {NULL, "ctl", "[--json] DAEMON [VERB [ARG...]]",
     "send a control verb to a daemon (front, php, bus, ... or vc, the supervisor); no VERB: its verbs", cmd_ctl_verb},
    {"Background work (a site's queue workers and schedule)", "bg", "[--json] [SITE]",
     "each background process: site, name, state, pid, uptime, restarts, command", cmd_bg},
    {NULL, "bg", "start|stop|restart SITE NAME",
     "start (a failed one too), stop and hold, or restart a site's background process (after its job)", NULL},
    {NULL, "bg", "logs SITE NAME [--follow]", "its output, from the suite's log", NULL},
    {NULL, "schedule", "[--json] [SITE]", "each schedule entry: next run, last run, its status, last failure, skipped",
     cmd_schedule},
    {"The response cache", "cache", "purge (--url URL | --prefix URL | --tag TAG | --site NAME | --all) [--soft]",
     "drop entries (soft: keep them, stale); no request gets them once this returns", cmd_cache},
    {NULL, "cache", "stats [--json]", "entries, bytes, hit and store counts", NULL},
    {NULL, "cache", "show URL [--json]", "what is stored for a URL (and its variants)", NULL},
    {NULL, "cache", "warm (--sitemap URL | --list FILE|-) [--concurrency N] [--insecure] [--json] [--events ID]",
     "fill this node's cache from a sitemap or a list of URLs", NULL},
    {NULL, "cache", "check", "whether the cache's databases agree (after a crash)", NULL},
    {"Realtime (WebSocket, the Pusher protocol)", "rooms", "[--json]",
     "rooms of every front, their subscribers and presence members", cmd_rooms},
    {NULL, "rooms", "apps [--secret]", "each site's realtime apps (id, key, secret)", NULL},
    {"Certificates (vc-acme)", "cert", "list [--json]",
     "hosts, issuer, expiry, next renewal, the CA's window, last error", cmd_cert},
    {NULL, "cert", "renew [--force] SITE|HOST", "order a site's certificate now (--force: even if not due)", NULL},
    {NULL, "cert", "issue SITE|HOST", "order a first certificate now, past any back-off", NULL},
    {NULL, "cert", "revoke [--reason N] SITE|HOST", "revoke the certificate in service and order a new one", NULL},
    {"The cluster (vc-mesh, over NATS)", "nodes", "[--json]",
     "every node of the cluster: up, suspect or gone, last heard, version, load", cmd_nodes},
    {"The panel (vc-panel)", "panel", "passwd USER [--random]",
     "set a panel user's password (an admin if new), read from the terminal or stdin; changed at the next sign-in",
     cmd_panel},
    {"Deploys (vc-fed)", "deploy",
     "SITE DIR|--git URL [--ref REF] [--message TEXT] [--key NAME] [--exclude PATTERN]... [--no-switch]",
     "sign DIR as a release of SITE, stage it (only what changed is sent), check it, switch to it", cmd_deploy},
    {NULL, "rollback", "SITE [RELEASE]", "back to the previous release (or the one named); the one left is marked bad",
     cmd_rollback},
    {NULL, "releases", "SITE [--json] | SITE --log [RELEASE]",
     "a site's releases: id, state, created, key, message; --log: what its hooks printed", cmd_releases},
    {NULL, "key", "new NAME",
     "a deployer's Ed25519 key, in ~/.config/velocity/keys (or $VC_KEYS); prints its public "
     "half",
     cmd_key},
    {NULL, "trust", "add NAME PUBLIC_KEY|FILE.pub", "trust a key to sign this node's releases", cmd_trust},
    {NULL, "trust", "remove NAME", "stop trusting it", NULL},
    {NULL, "trust", "list [--json]", "the keys this node trusts", NULL},
    {"Configuration", "configtest", "", "check the configuration directory", cmd_configtest},
    {NULL, "settings", "[--markdown|--json] [SECTION]",
     "every setting (or a section's: global, site, php, front...): type, default, range, what it does", cmd_settings},
    {NULL, "import", "nginx|apache PATH [--dry-run] [--force] [--verbose]",
     "sites from an nginx configuration, with a report of what was converted; written once configtest passes",
     cmd_import},
    {NULL, "ensite", "NAME", "enable a site (sites-available to sites-enabled)", run_enable},
    {NULL, "dissite", "NAME", "disable a site", run_enable},
    {NULL, "enconf", "NAME", "enable a configuration snippet (conf-available to conf-enabled)", run_enable},
    {NULL, "disconf", "NAME", "disable a configuration snippet", run_enable},
    {NULL, "keygen", "", "a new curve_secret_key (CurveZMQ, for endpoints over TCP)", run_keygen},
    {"About vc", "version", "", "vc's version", run_version},
    {NULL, "help", "", "this list", run_help},
};

const cli_command_t *cli_command(const char *name)
{
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        if (strcmp(commands[i].name, name) == 0 && commands[i].run)
            return &commands[i];
    return NULL;
}

void cli_usage(FILE *out)
{
    fputs("usage: vc [--data DIR] [--conf DIR] COMMAND [ARGS]\n", out);
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
        const cli_command_t *c = &commands[i];
        if (c->group)
            fprintf(out, "\n%s:\n", c->group);
        char head[160];
        snprintf(head, sizeof(head), "%s%s%s", c->name, *c->args ? " " : "", c->args);
        /* The help on the same line when the synopsis is short, as man does. */
        if (strlen(head) < 20 && !strchr(head, '\n'))
            fprintf(out, "  %-20s%s\n", head, c->help);
        else
            fprintf(out, "  %s\n  %20s%s\n", head, "", c->help);
    }
    fputs("\nDIR defaults: --data $VC_DATA or " VC_DEFAULT_DATA "; --conf $VC_CONF or " VC_DEFAULT_CONF
          " if it exists.\n",
          out);
}
