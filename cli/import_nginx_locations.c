/*
 * vc import nginx, the locations of a server (import_nginx_internal.h):
 * the ones PHP sites are made of (the front controller's try_files, the
 * PHP location, dot files and prefixes denied, internal aliases, static
 * files' expiry, exact redirects), error pages, and servers that only
 * redirect to another.
 */
#include "import_nginx_internal.h"
#include "vc_util.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

static void note(walk_t *w, const conf_node_t *d, import_kind_t k, const char *what)
{
    import_note(w->im, d->file, d->line, k, "location %s%s%s: %s", d->nargs > 1 ? d->args[0] : "",
                d->nargs > 1 ? " " : "", d->nargs ? d->args[d->nargs - 1] : "", what);
}

/* The directives inside a location the suite's way covers; any other is
 * reported on its own line. */
static void rest_of(walk_t *w, const conf_node_t *loc, const char *const *covered)
{
    for (size_t i = 0; i < loc->nkids; i++) {
        const conf_node_t *d = &loc->kids[i];
        if (import_nginx_any_of(d->name, covered) || import_nginx_not_needed(d->name))
            continue;
        import_nginx_not_converted(w, d, " (inside the location above)");
    }
}

/* "^/index\.php(/|$)", "^/(app|app_dev|config)\.php(/|$)": the scripts
 * it names, into list. 0 if it is not of that form. */
static int named_scripts(const char *pat, import_list_t *list)
{
    if (strncmp(pat, "^/", 2) != 0)
        return 0;
    const char *p = pat + 2, *end;
    int group = *p == '(';
    if (group)
        p++;
    end = group ? strchr(p, ')') : strstr(p, "\\.php");
    if (end == NULL || strncmp(group ? end + 1 : end, "\\.php", 5) != 0)
        return 0;
    while (p < end) {
        const char *bar = memchr(p, '|', (size_t)(end - p));
        const char *stop = bar ? bar : end;
        for (const char *q = p; q < stop; q++)
            if (!isalnum((unsigned char)*q) && *q != '_' && *q != '-')
                return 0;
        char *name = vc_asprintf("%.*s.php", (int)(stop - p), p);
        import_list_add(list, name);
        free(name);
        p = stop + 1;
    }
    return 1;
}

static const char *const php_covered[] = {"fastcgi_pass", "include", "try_files", "set", "internal", "root", NULL};

static void php_location(walk_t *w, import_site_t *s, const conf_node_t *loc, const char *pat)
{
    s->php = 1;
    if (named_scripts(pat, &s->entry_scripts))
        note(w, loc, IMPORT_CONVERTED, "PHP runs these scripts only → entry_scripts");
    else if (strstr(pat, "\\.php") && pat[0] != '^')
        note(w, loc, IMPORT_CONVERTED, "PHP runs .php files (SCRIPT_NAME and PATH_INFO as fastcgi_split_path_info)");
    else
        note(w, loc, IMPORT_NOT_CONVERTED,
             "scripts chosen by a pattern the suite does not read; it runs any .php file");
    if (conf_tree_find(loc, "internal"))
        note(w, loc, IMPORT_NOT_CONVERTED,
             "internal: a client asking for the script itself gets 404 from nginx; the suite runs it");
    rest_of(w, loc, php_covered);
}

/* "/\.ht", "/\.", "/\.(?!well-known)", "(^|/)\.": dot files, which the
 * suite answers 404 anyway. */
static int dotfiles(const char *pat)
{
    return strncmp(pat, "/\\.", 3) == 0 || strncmp(pat, "^/\\.", 4) == 0 || strncmp(pat, "(^|/)\\.", 7) == 0;
}

static void deny_location(walk_t *w, import_site_t *s, const conf_node_t *loc, const char *mod, const char *pat)
{
    static const char *const covered[] = {"deny", "return", "access_log", "log_not_found", NULL};
    int regex = mod[0] == '~';
    if (regex && dotfiles(pat)) {
        note(w, loc, IMPORT_NOT_NEEDED, "dot files: the suite answers 404 for them already (nginx: 403)");
    } else if (!regex && mod[0] != '=' && pat[0] == '/') {
        import_list_add(&s->deny, pat);
        note(w, loc, IMPORT_CONVERTED, "deny all → deny (403)");
    } else {
        note(w, loc, IMPORT_NOT_CONVERTED, "denies paths by a pattern the suite does not read: they stay open");
        return;
    }
    rest_of(w, loc, covered);
}

/* `location / { try_files ... }`: the front controller, or none. */
static void root_location(walk_t *w, import_site_t *s, const conf_node_t *loc)
{
    static const char *const covered[] = {"try_files", "index", NULL};
    const conf_node_t *tf = conf_tree_find(loc, "try_files");
    const char *last = tf && tf->nargs ? tf->args[tf->nargs - 1] : NULL;
    if (last && strncmp(last, "/index.php", 10) == 0) {
        s->front_controller = 1;
        note(w, loc, IMPORT_CONVERTED, "try_files ... /index.php → front_controller = true");
    } else if (last && strcmp(last, "=404") == 0) {
        s->front_controller = 0;
        note(w, loc, IMPORT_CONVERTED, "try_files ... =404 → front_controller = false");
    } else if (tf) {
        note(w, loc, IMPORT_NOT_CONVERTED, "try_files to something else than /index.php or =404");
    }
    rest_of(w, loc, covered);
}

/* The exact redirect `location = /old { return 301 /new; }`. */
static int exact_redirect(walk_t *w, import_site_t *s, const conf_node_t *loc, const char *mod, const char *pat)
{
    const conf_node_t *ret = conf_tree_find(loc, "return");
    if (strcmp(mod, "=") != 0 || ret == NULL || ret->nargs != 2 || strchr(ret->args[1], '$') || loc->nkids != 1)
        return 0;
    int code = atoi(ret->args[0]);
    if (code != 301 && code != 302 && code != 307 && code != 308)
        return 0;
    char *r = vc_asprintf("%s %s %d", pat, ret->args[1], code);
    import_list_add(&s->redirects, r);
    free(r);
    note(w, loc, IMPORT_CONVERTED, "return → redirects");
    return 1;
}

/* `location ~* \.(css|js|png)$ { expires 30d; }`: the suite's expiry is
 * for every static file of the site. */
static int static_expiry(walk_t *w, import_site_t *s, const conf_node_t *loc)
{
    static const char *const covered[] = {"expires", "add_header", "try_files", NULL};
    const conf_node_t *ex = conf_tree_find(loc, "expires");
    char *d = ex && ex->nargs == 1 ? import_nginx_expires(ex->args[0]) : NULL;
    if (d == NULL)
        return 0;
    free(s->static_max_age);
    s->static_max_age = d;
    note(w, loc, IMPORT_CONVERTED, "expires → static_max_age, for every static file (nginx: those it matches)");
    rest_of(w, loc, covered);
    return 1;
}

void import_nginx_location(walk_t *w, import_site_t *s, const conf_node_t *loc)
{
    if (loc->nargs < 1 || loc->nargs > 2 || !loc->block) {
        import_nginx_not_converted(w, loc, "");
        return;
    }
    const char *mod = loc->nargs == 2 ? loc->args[0] : "", *pat = loc->args[loc->nargs - 1];
    const conf_node_t *deny = conf_tree_find(loc, "deny"), *alias = conf_tree_find(loc, "alias");
    static const char *const logs[] = {"access_log", "log_not_found", "allow", NULL};
    if (conf_tree_find(loc, "fastcgi_pass")) {
        php_location(w, s, loc, pat);
    } else if (deny && deny->nargs == 1 && strcmp(deny->args[0], "all") == 0) {
        deny_location(w, s, loc, mod, pat);
    } else if (conf_tree_find(loc, "internal") && alias && alias->nargs == 1 && mod[0] != '~' && pat[0] == '/') {
        char *in = vc_asprintf("%s %s", pat, alias->args[0]);
        import_list_add(&s->internal, in);
        free(in);
        note(w, loc, IMPORT_CONVERTED, "internal; alias → internal_locations (X-Accel-Redirect)");
    } else if (strcmp(pat, "/") == 0 && mod[0] != '~' && mod[0] != '=') {
        root_location(w, s, loc);
    } else if (exact_redirect(w, s, loc, mod, pat) || (mod[0] == '~' && static_expiry(w, s, loc))) {
        /* done */
    } else if (mod[0] == '~' && strstr(pat, "\\.php") && conf_tree_find(loc, "return")) {
        note(w, loc, IMPORT_NOT_CONVERTED,
             s->entry_scripts.n ? "other scripts are 404 here under nginx; the suite runs the front controller for "
                                  "them (front_controller = false makes them 404)"
                                : "scripts answered with a status: the suite runs them");
    } else if (strstr(pat, "acme-challenge")) {
        note(w, loc, IMPORT_NOT_NEEDED, "ACME challenges: vc-acme answers them");
    } else {
        int only_logs = 1;
        for (size_t i = 0; i < loc->nkids; i++)
            only_logs &= import_nginx_any_of(loc->kids[i].name, logs);
        if (only_logs && strcmp(mod, "=") == 0)
            note(w, loc, IMPORT_NOT_CONVERTED,
                 "logging only, but nginx answers 404 when the file is missing; the suite runs the front controller");
        else
            note(w, loc, only_logs ? IMPORT_NOT_NEEDED : IMPORT_NOT_CONVERTED,
                 only_logs ? "logging only" : "a location the suite has no setting for");
    }
}

void import_nginx_error_page(walk_t *w, import_site_t *s, const conf_node_t *d)
{
    const char *uri = d->nargs ? d->args[d->nargs - 1] : "";
    size_t ul = strlen(uri);
    if (d->nargs < 2 || uri[0] != '/' || strchr(uri, '$') || (ul > 4 && strcmp(uri + ul - 4, ".php") == 0)) {
        import_nginx_not_converted(w, d, ": the suite's error pages are files (\"CODE... /page.html\"), never scripts");
        return;
    }
    for (size_t i = 0; i + 1 < d->nargs; i++) {
        int code = atoi(d->args[i]);
        if (code < 400 || code > 599)
            continue; /* "=200" and the like: the status stays the suite's */
        char *e = vc_asprintf("%d %s", code, uri);
        import_list_add(&s->error_pages, e);
        free(e);
    }
    import_note(w->im, d->file, d->line, IMPORT_CONVERTED, "error_page → error_pages (the front's own errors)");
}

/* "https://$host$request_uri" → scheme "https", host "$host". */
static int split_target(const char *url, char scheme[16], char *host, size_t cap)
{
    const char *sep = strstr(url, "://");
    if (sep == NULL || (size_t)(sep - url) >= 16)
        return -1;
    memcpy(scheme, url, (size_t)(sep - url));
    scheme[sep - url] = '\0';
    const char *h = sep + 3, *rest = strstr(h, "$request_uri");
    if (rest == NULL || strcmp(rest, "$request_uri") != 0 || (size_t)(rest - h) >= cap || rest == h)
        return -1;
    memcpy(host, h, (size_t)(rest - h));
    host[rest - h] = '\0';
    return 0;
}

void import_nginx_redirect(walk_t *w, const pending_t *p)
{
    const conf_node_t *ret = p->ret, *names = conf_tree_find(p->srv, "server_name");
    char scheme[16], host[256];
    int code = ret->nargs == 2 ? atoi(ret->args[0]) : 0;
    if ((code != 301 && code != 302 && code != 307 && code != 308) || names == NULL ||
        split_target(ret->args[1], scheme, host, sizeof(host)) < 0) {
        import_nginx_not_converted(w, ret, ": a redirect the suite has no setting for");
        return;
    }
    int https = strcmp(scheme, "https") == 0, same = host[0] == '$';
    if (same && !https) {
        import_nginx_not_converted(w, ret, ": a redirect to the same names over plain HTTP");
        return;
    }
    size_t done = 0;
    for (size_t i = 0; i < names->nargs; i++) {
        const char *n = names->args[i];
        import_site_t *to = same ? import_site_for(w->im, n) : import_site_for(w->im, host);
        if (to == NULL || strcmp(n, "_") == 0)
            continue;
        if (!same) {
            import_list_add(&to->hosts, n);
            free(to->canonical_host);
            to->canonical_host = vc_strdup(host);
        }
        if (https && to->tls && p->plain && !p->tls)
            to->https_redirect = 1;
        done++;
    }
    import_note(w->im, ret->file, ret->line, done ? IMPORT_CONVERTED : IMPORT_NOT_CONVERTED, "return %s %s → %s",
                ret->args[0], ret->args[1],
                !done  ? "no site here serves those names"
                : same ? "https_redirect on the site of the same names"
                       : "its names join the target's site, with canonical_host");
}
