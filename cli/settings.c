/*
 * vc settings [--markdown|--json] [SECTION]: every setting the
 * configuration takes, with its type, default, range and what it does
 * (libcommon/vc_settings_list.h). docs/configuration.md's "Every setting"
 * is this command's --markdown, held to it by a test.
 */
#include "cli.h"
#include "vc_settings_list.h"
#include "vc_util.h"

#include <stdio.h>
#include <string.h>

typedef struct settings_out {
    const char *section; /* NULL: every one */
    const char *last;    /* the section of the row before */
    enum { OUT_TEXT, OUT_MARKDOWN, OUT_JSON } how;
} settings_out_t;

/* A table cell: "|" would end it. */
static void cell(const char *text)
{
    for (; *text; text++)
        if (*text == '|')
            fputs("\\|", stdout);
        else
            putchar(*text);
}

static void print_row(void *arg, const vc_setting_row_t *r)
{
    settings_out_t *o = arg;
    if (o->section && strcmp(o->section, r->section) != 0)
        return;
    if (o->how == OUT_JSON) {
        const char *const fields[][2] = {{"section", r->section}, {"path", r->path},   {"type", r->type},
                                         {"default", r->dflt},    {"range", r->range}, {"help", r->help}};
        for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
            printf("%s\"%s\":\"", i ? "," : "{", fields[i][0]);
            vc_json_escape(stdout, fields[i][1], strlen(fields[i][1]));
            putchar('"');
        }
        puts("}");
    } else if (o->how == OUT_MARKDOWN) {
        printf("| `%s` | %s | `", r->path, r->type);
        cell(r->dflt);
        printf("` | %s | ", r->range);
        cell(r->help);
        puts(" |");
    } else {
        if (o->last == NULL || strcmp(o->last, r->section) != 0)
            printf("%s%s:\n", o->last ? "\n" : "", r->section);
        o->last = r->section;
        printf("  %-36s %-10s %s%s%s%s\n  %36s %s\n", r->path, r->type, r->dflt, *r->range ? "  (" : "", r->range,
               *r->range ? ")" : "", "", r->help);
    }
}

int cmd_settings(cli_t *cli, int argc, char **argv)
{
    (void)cli;
    settings_out_t o = {.how = OUT_TEXT};
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--markdown") == 0)
            o.how = OUT_MARKDOWN;
        else if (strcmp(argv[i], "--json") == 0)
            o.how = OUT_JSON;
        else if (argv[i][0] != '-' && o.section == NULL)
            o.section = argv[i];
        else {
            fprintf(stderr, "usage: vc settings [--markdown|--json] [SECTION]\n");
            return 2;
        }
    }
    if (o.section && !vc_settings_section_known(o.section)) {
        fprintf(stderr,
                "vc settings: no section \"%s\" (global, site, php, and each daemon's: vc settings lists them)\n",
                o.section);
        return 1;
    }
    if (o.how == OUT_MARKDOWN)
        puts("| setting | type | default | range | what it does |\n|---|---|---|---|---|");
    vc_settings_list(print_row, &o);
    return 0;
}
