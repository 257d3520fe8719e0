/*
 * Imported sites (import_site.h): the list they are gathered in, their
 * names, and their text as site files.
 */
#include "import_site.h"
#include "vc_util.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

void import_note(import_t *im, const char *file, int line, import_kind_t kind, const char *fmt, ...)
{
    static const char *const says[] = {"converted", "not needed", "NOT CONVERTED"};
    im->counts[kind]++;
    if (im->report == NULL || (kind == IMPORT_NOT_NEEDED && !im->verbose))
        return;
    fprintf(im->report, "%s:%d: %s: ", file, line, says[kind]);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(im->report, fmt, ap);
    va_end(ap);
    fputc('\n', im->report);
}

void import_list_add(import_list_t *l, const char *s)
{
    if (import_list_has(l, s))
        return;
    l->v = vc_realloc(l->v, (l->n + 1) * sizeof(char *));
    l->v[l->n++] = vc_strdup(s);
}

int import_list_has(const import_list_t *l, const char *s)
{
    for (size_t i = 0; i < l->n; i++)
        if (strcmp(l->v[i], s) == 0)
            return 1;
    return 0;
}

static void list_free(import_list_t *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i]);
    free(l->v);
    l->v = NULL;
    l->n = 0;
}

import_site_t *import_site_new(import_t *im, const char *file, int line)
{
    im->sites = vc_realloc(im->sites, (im->nsites + 1) * sizeof(*im->sites));
    import_site_t *s = &im->sites[im->nsites++];
    memset(s, 0, sizeof(*s));
    s->front_controller = -1;
    s->gzip = -1;
    s->file = file;
    s->line = line;
    return s;
}

import_site_t *import_site_for(import_t *im, const char *host)
{
    for (size_t i = 0; i < im->nsites; i++)
        if (import_list_has(&im->sites[i].hosts, host))
            return &im->sites[i];
    return NULL;
}

void import_name_sites(import_t *im)
{
    int any_default = 0;
    for (size_t i = 0; i < im->nsites; i++)
        any_default |= im->sites[i].is_default;
    if (!any_default && im->nsites > 0)
        im->sites[0].is_default = 1;
    for (size_t i = 0; i < im->nsites; i++) {
        import_site_t *s = &im->sites[i];
        const char *from = s->hosts.n ? s->hosts.v[0] : "default";
        if (from[0] == '*' && from[1] == '.')
            from += 2;
        char base[120];
        size_t n = 0;
        for (const char *p = from; *p && n + 1 < sizeof(base); p++)
            base[n++] = isalnum((unsigned char)*p) || *p == '.' || *p == '-' ? (char)tolower((unsigned char)*p) : '_';
        base[n] = '\0';
        if (n == 0 || base[0] == '.')
            snprintf(base, sizeof(base), "site%zu", i + 1);
        char *name = vc_strdup(base);
        for (int k = 2;; k++) {
            int taken = 0;
            for (size_t j = 0; j < i; j++)
                taken |= strcmp(im->sites[j].name, name) == 0;
            if (!taken)
                break;
            free(name);
            name = vc_asprintf("%s-%d", base, k);
        }
        s->name = name;
    }
}

/* A string as libconfig reads it back. */
static void put_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            fputc('\\', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

static void put_list(FILE *f, const char *name, const import_list_t *l)
{
    if (l->n == 0)
        return;
    fprintf(f, "  %s = [", name);
    for (size_t i = 0; i < l->n; i++) {
        if (i)
            fputs(", ", f);
        put_str(f, l->v[i]);
    }
    fputs("];\n", f);
}

static void put_setting(FILE *f, const char *name, const char *value)
{
    if (value == NULL)
        return;
    fprintf(f, "  %s = ", name);
    put_str(f, value);
    fputs(";\n", f);
}

char *import_site_text(const import_site_t *s, const char *from)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    fprintf(f, "# Imported by `vc import` from %s:%d\nsite: {\n", from, s->line);
    put_list(f, "hosts", &s->hosts);
    put_setting(f, "root", s->root);
    if (s->is_default)
        fputs("  default = true;\n", f);
    if (s->front_controller >= 0)
        fprintf(f, "  front_controller = %s;\n", s->front_controller ? "true" : "false");
    put_list(f, "entry_scripts", &s->entry_scripts);
    put_setting(f, "tls_cert", s->tls_cert);
    put_setting(f, "tls_key", s->tls_key);
    if (s->https_redirect)
        fputs("  https_redirect = true;\n", f);
    put_setting(f, "canonical_host", s->canonical_host);
    if (s->gzip >= 0)
        fprintf(f, "  gzip = %s;\n", s->gzip ? "true" : "false");
    put_setting(f, "static_max_age", s->static_max_age);
    put_list(f, "redirects", &s->redirects);
    put_list(f, "error_pages", &s->error_pages);
    put_list(f, "deny", &s->deny);
    put_list(f, "internal_locations", &s->internal);
    fputs("};\n", f);
    fclose(f);
    return text;
}

void import_site_free(import_site_t *s)
{
    free(s->name);
    free(s->root);
    free(s->tls_cert);
    free(s->tls_key);
    free(s->canonical_host);
    free(s->static_max_age);
    list_free(&s->hosts);
    list_free(&s->entry_scripts);
    list_free(&s->redirects);
    list_free(&s->error_pages);
    list_free(&s->deny);
    list_free(&s->internal);
}

void import_free(import_t *im)
{
    for (size_t i = 0; i < im->nsites; i++)
        import_site_free(&im->sites[i]);
    free(im->sites);
    list_free(&im->listen);
    list_free(&im->tls_listen);
    memset(im, 0, sizeof(*im));
}
