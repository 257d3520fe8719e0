/*
 * The vc command: shared declarations of its subcommand files.
 */
#ifndef VC_CLI_H
#define VC_CLI_H

#include "vc_config.h"

#include <stdio.h>

/* Options every subcommand understands, resolved once in main.c. */
typedef struct cli {
    const char *argv0;
    char *data_dir; /* absolute or as given: --data, VC_DATA, ./var */
    char *conf_dir; /* --conf, VC_CONF, ./etc if it exists; NULL: none */
    char *bin_dir;  /* where vc and the daemons live */
    int json;
} cli_t;

int cmd_up(cli_t *cli, int argc, char **argv);
int cmd_status(cli_t *cli, int argc, char **argv);
int cmd_stop(cli_t *cli, int argc, char **argv);
int cmd_workers(cli_t *cli, int argc, char **argv);
int cmd_reload(cli_t *cli, int argc, char **argv);
int cmd_events(cli_t *cli, int argc, char **argv);
int cmd_configtest(cli_t *cli, int argc, char **argv);
/* vc settings (settings.c). */
int cmd_settings(cli_t *cli, int argc, char **argv);
/* vc ctl DAEMON [VERB [ARG...]] (ctl.c). */
int cmd_ctl_verb(cli_t *cli, int argc, char **argv);
/* What configtest checks, for conf_dir: the configuration, or NULL with
 * "file:line: reason" in err. */
vc_config_t *cli_configtest_dir(const char *conf_dir, const char *data_dir, size_t *nfiles, char *err, size_t errlen);
int cmd_import(cli_t *cli, int argc, char **argv);
/* ensite, dissite, enconf, disconf: which = "site" or "conf", on = 1/0. */
int cmd_enable(cli_t *cli, const char *which, int on, int argc, char **argv);
/* Sends one verb to a daemon's control endpoint and prints the reply. */
int cmd_ctl(cli_t *cli, const char *daemon, const char *verb, int argc, char **argv);

/* Sends one verb to a daemon of the suite cfg describes and returns its
 * reply in *out (the caller frees it with vc__reply__free_unpacked); a
 * negative error, said on stderr, if it does not answer. */
struct Vc__Reply;
/* "key":"value",... of a reply's fields, JSON-escaped, to stdout. */
void cli_print_json_fields(Vc__Field *const *f, size_t n);

/* vc cache warm ARGS (cache_warm.c): 0, 1 (errors), or -2 (usage). */
int cache_warm(const vc_config_t *cfg, int argc, char **argv);

int cli_call(void *zctx, const vc_config_t *cfg, const char *daemon, const char *verb, const char *const *args,
             size_t nargs, struct Vc__Reply **out);
/* vc cache ... (cache.c). */
int cmd_cache(cli_t *cli, int argc, char **argv);
/* vc cert list [--json], renew [--force], issue, revoke [--reason N] (cert.c). */
int cmd_cert(cli_t *cli, int argc, char **argv);
/* vc rooms [--json], vc rooms apps [--secret] (rooms.c). */
int cmd_rooms(cli_t *cli, int argc, char **argv);
/* background.c: `vc bg` and `vc schedule`. */
int cmd_bg(cli_t *cli, int argc, char **argv);
int cmd_schedule(cli_t *cli, int argc, char **argv);
int cmd_nodes(cli_t *cli, int argc, char **argv);
int cmd_panel(cli_t *cli, int argc, char **argv);
/* vc key new, vc trust (keys.c); vc deploy, rollback, releases (deploy.c). */
int cmd_key(cli_t *cli, int argc, char **argv);
int cmd_trust(cli_t *cli, int argc, char **argv);
int cmd_deploy(cli_t *cli, int argc, char **argv);
int cmd_rollback(cli_t *cli, int argc, char **argv);
int cmd_releases(cli_t *cli, int argc, char **argv);

/* The configuration of the suite running under cli->data_dir (running.c), or NULL after
 * printing "no suite runs under ..." to stderr. Caller destroys. */
vc_config_t *cli_running_config(cli_t *cli);

/* A command of vc (commands.c): its group heading in `vc help` (NULL:
 * the previous row's), name, synopsis, help, and the function that runs
 * it with argv[0] its name (NULL: a help row for the same name's). */
typedef struct cli_command {
    const char *group, *name, *args, *help;
    int (*run)(cli_t *cli, int argc, char **argv);
} cli_command_t;

/* The command of that name, or NULL. */
const cli_command_t *cli_command(const char *name);
/* `vc help`: every command from the table. */
void cli_usage(FILE *out);

#endif
