/*
 * A site's background processes and schedule (docs/background.md):
 * `background: { NAME: { command = "..."; processes = 2; }; }` read into
 * the site, and both checked, each error at the file and line of the
 * entry it names.
 */
#include "vc_config.h"
#include "vc_config_internal.h"
#include "vc_cron.h"
#include "vc_util.h"
#include "vc_words.h"

#include <ctype.h>
#include <errno.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define B(field) offsetof(vc_background_t, field)
#define BACKGROUND_MAX_PROCESSES 64
#define BACKGROUND_MAX_ENTRIES 32
#define SCHEDULE_MAX_ENTRIES 100

const struct spec vc_background_specs[] = {
    {"site.background.*.command", T_STR, B(command), 0, 0,
     "the program and its arguments (\"php artisan queue:work\"; php is the pool's PHP)"},
    {"site.background.*.processes", T_INT, B(processes), 1, BACKGROUND_MAX_PROCESSES, "copies of it kept running"},
    {"site.background.*.start_secs", T_DURATION, B(start_ms), 0, 3600 * 1000,
     "running this long counts as started (supervisor's startsecs)"},
    {"site.background.*.start_retries", T_INT, B(start_retries), 0, 100,
     "failed starts in a row before it is left failed (startretries)"},
    {"site.background.*.stop_signal", T_STR, B(stop_signal), 0, 0,
     "what asks it to stop: TERM, INT, QUIT, HUP, USR1 or USR2 (stopsignal)"},
    {"site.background.*.stop_wait", T_DURATION, B(stop_wait_ms), 0, 3600 * 1000, "then SIGKILL (stopwaitsecs)"},
    {"site.background.*.max_memory", T_SIZE, B(max_memory), 0, INT64_MAX,
     "restarted once its memory (RSS) is above this (0: never)"},
    {"site.background.*.max_runtime", T_DURATION, B(max_runtime_ms), 0, INT64_MAX,
     "restarted after running this long (0: never)"},
};
const size_t vc_background_nspecs = VC_ARRAY_SIZE(vc_background_specs);

void vc_background_defaults(vc_background_t *b)
{
    memset(b, 0, sizeof(*b));
    b->processes = 1;
    b->start_ms = 1000;
    b->start_retries = 3;
    b->stop_signal = vc_strdup("TERM");
    b->stop_wait_ms = 10 * 1000;
}

static int good_name(const char *name)
{
    size_t n = strlen(name);
    if (n == 0 || n > 32)
        return 0;
    for (const char *p = name; *p; p++)
        if (!islower((unsigned char)*p) && !isdigit((unsigned char)*p) && *p != '_' && *p != '-')
            return 0;
    return 1;
}

int vc_background_read(struct ctx *c, void *site, config_setting_t *group)
{
    vc_site_t *s = site;
    if (!config_setting_is_group(group))
        return vc_config_fail(c, (int)config_setting_source_line(group),
                              "background: expected a group like { queue: { command = \"php artisan queue:work\"; "
                              "}; }");
    for (int i = 0; i < config_setting_length(group); i++) {
        config_setting_t *g = config_setting_get_elem(group, (unsigned)i);
        const char *name = config_setting_name(g);
        int line = (int)config_setting_source_line(g);
        if (!config_setting_is_group(g))
            return vc_config_fail(c, line, "background.%s: expected a group like { command = \"...\"; }", name);
        if (!good_name(name))
            return vc_config_fail(c, line, "background.%s: a name is 1 to 32 of a-z, 0-9, _ and -", name);
        for (size_t j = 0; j < s->nbackground; j++)
            if (strcmp(s->background[j].name, name) == 0)
                return vc_config_fail(c, line, "background.%s is declared twice", name);
        if (s->nbackground == BACKGROUND_MAX_ENTRIES)
            return vc_config_fail(c, line, "background: more than %d entries", BACKGROUND_MAX_ENTRIES);
        s->background = vc_realloc(s->background, (s->nbackground + 1) * sizeof(*s->background));
        vc_background_t *b = &s->background[s->nbackground++];
        vc_background_defaults(b);
        b->name = vc_strdup(name);
        b->line = line;
        int r = vc_config_walk(c, NULL, g, "site.background.*", vc_background_specs, vc_background_nspecs, b);
        if (r < 0)
            return r;
    }
    return 0;
}

int vc_schedule_read(struct ctx *c, void *site, config_setting_t *list)
{
    vc_site_t *s = site;
    size_t n;
    const struct spec *specs = vc_config_site_specs(&n);
    int r = vc_config_set_setting(c, vc_config_find_spec(specs, n, "site.schedule"), s, list);
    if (r < 0)
        return r;
    free(s->schedule_lines);
    s->schedule_lines = vc_calloc(s->nschedule + 1, sizeof(int));
    int line = (int)config_setting_source_line(list);
    for (size_t i = 0; i < s->nschedule; i++) {
        config_setting_t *e = config_setting_get_elem(list, (unsigned)i);
        int l = e ? (int)config_setting_source_line(e) : 0;
        s->schedule_lines[i] = l > 0 ? l : line;
    }
    return 0;
}

void vc_background_free(vc_site_t *s)
{
    for (size_t i = 0; i < s->nbackground; i++) {
        free(s->background[i].name);
        free(s->background[i].command);
        free(s->background[i].stop_signal);
    }
    free(s->background);
    s->background = NULL;
    s->nbackground = 0;
    free(s->schedule_lines);
    s->schedule_lines = NULL;
}

/* Whether path is known not to be there. A daemon that cannot look
 * (another pool's site, whose directory its user may not enter) does not
 * know: the check is vc up's and configtest's, which can. */
static int absent(const char *path)
{
    struct stat st;
    return stat(path, &st) != 0 && (errno == ENOENT || errno == ENOTDIR);
}

/* What a command names that is not there: its program, or the script
 * php is to run (in the application's directory, app_dir). NULL: all is. */
static const char *missing(char **argv, size_t argc, const char *app_dir, int files)
{
    if (strcmp(argv[0], "php") == 0) {
        if (!files || app_dir == NULL || argc < 2 || argv[1][0] == '-')
            return NULL;
        char *script = argv[1][0] == '/' ? vc_strdup(argv[1]) : vc_asprintf("%s/%s", app_dir, argv[1]);
        int there = !absent(script);
        free(script);
        return there ? NULL : "no PHP script";
    }
    if (strchr(argv[0], '/') == NULL)
        return vc_program_on_path(argv[0]) ? NULL : "no program on the PATH (php is the pool's PHP)";
    if (!files || (argv[0][0] != '/' && app_dir == NULL))
        return NULL;
    char *prog = argv[0][0] == '/' ? vc_strdup(argv[0]) : vc_asprintf("%s/%s", app_dir, argv[0]);
    int there = !absent(prog);
    free(prog);
    return there ? NULL : "no program there";
}

/* A command's words, checked as the pool will run them; files: whether
 * the files it names are on this machine to be checked. */
static int check_command(struct ctx *c, const vc_site_t *s, int line, const char *what, const char *command, int files)
{
    char **argv;
    size_t argc;
    char err[128];
    if (command == NULL || vc_words_split(command, &argv, &argc, err, sizeof(err)) < 0)
        return vc_config_fail(c, line, "site \"%s\": %s: %s", s->name, what, command ? err : "no command");
    char *app_dir = vc_site_app_dir(s);
    const char *why = missing(argv, argc, app_dir, files);
    int rc = why ? vc_config_fail(c, line, "site \"%s\": %s: \"%s\" is %s (in %s)", s->name, what,
                                  strcmp(argv[0], "php") == 0 ? argv[1] : argv[0], why, app_dir ? app_dir : "-")
                 : 0;
    free(app_dir);
    vc_words_free(argv);
    return rc;
}

static const char *const stop_signals[] = {"TERM", "INT", "QUIT", "HUP", "USR1", "USR2"};

int vc_background_validate(struct ctx *c, const vc_site_t *s, int files)
{
    for (size_t i = 0; i < s->nbackground; i++) {
        const vc_background_t *b = &s->background[i];
        char what[64];
        snprintf(what, sizeof(what), "background.%s.command", b->name);
        if (check_command(c, s, b->line, what, b->command, files) < 0)
            return -1;
        size_t k = 0;
        while (k < VC_ARRAY_SIZE(stop_signals) && strcmp(b->stop_signal, stop_signals[k]))
            k++;
        if (k == VC_ARRAY_SIZE(stop_signals))
            return vc_config_fail(c, b->line,
                                  "site \"%s\": background.%s.stop_signal \"%s\" is not one of TERM, "
                                  "INT, QUIT, HUP, USR1, USR2",
                                  s->name, b->name, b->stop_signal);
    }
    if (s->nschedule > SCHEDULE_MAX_ENTRIES)
        return vc_config_fail(c, s->schedule_lines ? s->schedule_lines[0] : s->line,
                              "site \"%s\": schedule: more than %d entries", s->name, SCHEDULE_MAX_ENTRIES);
    for (size_t i = 0; i < s->nschedule; i++) {
        int line = s->schedule_lines ? s->schedule_lines[i] : s->line;
        vc_cron_t cron;
        const char *command;
        char err[200];
        if (vc_cron_parse(s->schedule[i], &cron, &command, err, sizeof(err)) < 0)
            return vc_config_fail(c, line, "site \"%s\": schedule \"%s\": %s", s->name, s->schedule[i], err);
        if (vc_cron_next(&cron, 0) < 0 && vc_cron_next(&cron, 365 * 86400L) < 0)
            return vc_config_fail(c, line, "site \"%s\": schedule \"%s\" names no day that exists", s->name,
                                  s->schedule[i]);
        char what[48];
        snprintf(what, sizeof(what), "schedule entry %zu", i + 1);
        if (check_command(c, s, line, what, command, files) < 0)
            return -1;
    }
    const struct {
        const char *name;
        char **list;
        size_t n;
    } hooks[] = {{"build", s->hooks_build, s->nhooks_build},
                 {"before_switch", s->hooks_before_switch, s->nhooks_before_switch},
                 {"after_switch", s->hooks_after_switch, s->nhooks_after_switch}};
    for (size_t h = 0; h < VC_ARRAY_SIZE(hooks); h++) {
        if (hooks[h].n && s->deploy_to == NULL)
            return vc_config_fail(c, s->line, "site \"%s\": deploy_hooks.%s needs deploy_to (docs/deploys.md)", s->name,
                                  hooks[h].name);
        if (hooks[h].n > 32)
            return vc_config_fail(c, s->line, "site \"%s\": deploy_hooks.%s: more than 32 commands", s->name,
                                  hooks[h].name);
        for (size_t i = 0; i < hooks[h].n; i++) {
            char **argv;
            size_t argc;
            char err[128];
            if (vc_words_split(hooks[h].list[i], &argv, &argc, err, sizeof(err)) < 0)
                return vc_config_fail(c, s->line, "site \"%s\": deploy_hooks.%s \"%s\": %s", s->name, hooks[h].name,
                                      hooks[h].list[i], err);
            vc_words_free(argv);
        }
    }
    if (s->timezone && !vc_cron_zone_known(s->timezone))
        return vc_config_fail(c, s->line,
                              "site \"%s\": timezone \"%s\" is not a time zone of this system "
                              "(/usr/share/zoneinfo)",
                              s->name, s->timezone);
    return 0;
}
