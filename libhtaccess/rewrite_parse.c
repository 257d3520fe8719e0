/*
 * mod_rewrite's directives as a .htaccess holds them (rewrite.h): their
 * arguments split as mod_rewrite splits them (quotes, a backslash before
 * a space keeps it in the word), conditions gathered until their rule,
 * flags read as Apache reads them. Apache refuses an unknown flag (500 for
 * the directory); so does this reader, and what Apache would do that this
 * engine does not is refused too: the directory closes.
 */
#include "rewrite_internal.h"
#include "vc_util.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MAX_PATTERN 1024 /* bytes of one pattern: what PCRE2 compiles stays small */

static int refuse(char *why, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int refuse(char *why, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, len, fmt, ap);
    va_end(ap);
    return -1;
}

/* Up to three arguments, as mod_rewrite's parseargline() reads them. */
static int split_args(char *s, char **a)
{
    int n = 0;
    while (n < 3) {
        while (isspace((unsigned char)*s))
            s++;
        if (!*s)
            break;
        char quote = *s == '"' || *s == '\'' ? *s++ : 0;
        a[n++] = s;
        for (; *s; s++) {
            if ((isspace((unsigned char)*s) && !quote) || *s == quote)
                break;
            if (*s == '\\' && isspace((unsigned char)s[1]))
                s++;
        }
        if (*s)
            *s++ = '\0';
    }
    while (isspace((unsigned char)*s))
        s++;
    return *s ? -1 : n; /* more than three: Apache reads the rest as flags and fails */
}

pcre2_code *rewrite_compile(const char *pattern, int nocase, char *why, size_t len)
{
    if (strlen(pattern) > MAX_PATTERN) {
        if (why)
            refuse(why, len, "a pattern longer than %d bytes", MAX_PATTERN);
        return NULL;
    }
    int err;
    PCRE2_SIZE at;
    /* Apache 2.4's RegexDefaultOptions: DOTALL DOLLAR_ENDONLY. */
    uint32_t opts = PCRE2_DOTALL | PCRE2_DOLLAR_ENDONLY | (nocase ? PCRE2_CASELESS : 0);
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED, opts, &err, &at, NULL);
    if (re != NULL)
        (void)pcre2_jit_compile(re, PCRE2_JIT_COMPLETE); /* without JIT (none on this CPU), it is interpreted */
    if (re == NULL && why) {
        char msg[120];
        pcre2_get_error_message(err, (PCRE2_UCHAR *)msg, sizeof(msg));
        refuse(why, len, "cannot compile '%s': %s at %zu", pattern, msg, (size_t)at);
    }
    return re;
}

/* [a,b=c,...]: each flag to set(), which returns NULL or what is wrong. */
static const char *each_flag(char *field, void *into, const char *(*set)(void *into, char *key, char *val))
{
    size_t len = strlen(field);
    if (len < 2 || field[0] != '[' || field[len - 1] != ']')
        return "bad flag delimiters";
    field[len - 1] = ',';
    for (char *key = field + 1, *next; *key; key = next + 1) {
        while (isspace((unsigned char)*key))
            key++;
        if (!*key || (next = strchr(key, ',')) == NULL)
            break;
        char *end = next;
        while (end > key && isspace((unsigned char)end[-1]))
            end--;
        *end = '\0';
        char *val = strchr(key, '=');
        if (val)
            *val++ = '\0';
        const char *err = set(into, key, val ? val : end);
        if (err)
            return err;
    }
    return NULL;
}

static const char *cond_flag(void *into, char *key, char *val)
{
    (void)val;
    rewrite_cond_t *c = into;
    if (!strcasecmp(key, "NC") || !strcasecmp(key, "nocase"))
        c->nocase = 1;
    else if (!strcasecmp(key, "OR") || !strcasecmp(key, "ornext"))
        c->ornext = 1;
    else if (strcasecmp(key, "NV") && strcasecmp(key, "novary"))
        return "unknown flag";
    return NULL;
}

/* The pattern's kind, with its operator taken off, as mod_rewrite reads it. */
static cond_type_t cond_kind(rewrite_cond_t *c, char **pat)
{
    char *p = *pat;
    if (!p[0] || !p[1])
        return COND_REGEX;
    if (p[0] == '-' && !p[2]) {
        switch (p[1]) {
        case 'f': return COND_FILE;
        case 's': return COND_SIZE;
        case 'd': return COND_DIR;
        case 'x': return COND_EXEC;
        case 'h':
        case 'L':
        case 'l': return COND_LINK;
        default: return COND_REGEX;
        }
    }
    if (p[0] == '-' && p[3]) {
        static const struct {
            const char *op;
            cond_type_t type;
            int invert;
        } ints[] = {{"-lt", COND_INT_LT, 0}, {"-le", COND_INT_LE, 0}, {"-gt", COND_INT_GT, 0},
                    {"-ge", COND_INT_GE, 0}, {"-eq", COND_INT_EQ, 0}, {"-ne", COND_INT_EQ, 1}};
        for (size_t i = 0; i < VC_ARRAY_SIZE(ints); i++)
            if (!strncmp(p, ints[i].op, 3)) {
                *pat = p + 3;
                c->negate ^= ints[i].invert;
                return ints[i].type;
            }
        return COND_REGEX;
    }
    if (p[0] == '>' || p[0] == '<') {
        int eq = p[1] == '=';
        *pat = p + 1 + eq;
        return p[0] == '>' ? (eq ? COND_STR_GE : COND_STR_GT) : (eq ? COND_STR_LE : COND_STR_LT);
    }
    if (p[0] == '=') {
        *pat = !strcmp(p + 1, "\"\"") ? p + 3 : p + 1; /* ="" is the empty string */
        return COND_STR_EQ;
    }
    return COND_REGEX;
}

static void cond_free(rewrite_cond_t *c)
{
    free(c->input);
    free(c->operand);
    pcre2_code_free(c->re);
}

/* A template with each %{NAME} this engine knows marked with its index
 * (rewrite_internal.h); NULL if it holds the mark itself. */
static char *mark_variables(const char *in)
{
    if (strchr(in, REWRITE_VAR_MARK))
        return NULL;
    char *out = vc_strdup(in), *o = out;
    for (const char *p = in; *p;) {
        const char *end = p[0] == '%' && p[1] == '{' ? strchr(p + 2, '}') : NULL;
        int v = end ? rewrite_variable_index(p + 2, (size_t)(end - p - 2)) : -1;
        if (v < 0) {
            *o++ = *p++;
            continue;
        }
        *o++ = '%';
        *o++ = '{';
        *o++ = REWRITE_VAR_MARK;
        *o++ = (char)(v + 1);
        *o++ = '}';
        p = end + 1;
    }
    *o = '\0';
    return out;
}

/* Something mod_rewrite expands that this engine does not: maps and
 * lookahead variables. */
static const char *unsupported_expansion(const char *s)
{
    if (strstr(s, "${"))
        return "a RewriteMap lookup";
    for (const char *q = strstr(s, "%{"); q; q = strstr(q + 2, "%{"))
        if (!strncasecmp(q + 2, "LA-U:", 5) || !strncasecmp(q + 2, "LA-F:", 5) || !strncasecmp(q + 2, "SSL:", 4))
            return "a lookahead or TLS variable";
    return NULL;
}

static int rewrite_cond(rewrite_set_t *set, char *args, char *why, size_t len)
{
    char *a[3];
    int n = split_args(args, a);
    if (n < 2)
        return refuse(why, len, "RewriteCond needs a test string and a pattern");
    if (!strcasecmp(a[0], "expr"))
        return refuse(why, len, "RewriteCond expr: expressions are not applied by this server");
    const char *u = unsupported_expansion(a[0]);
    if (u)
        return refuse(why, len, "RewriteCond: %s is not applied by this server", u);
    rewrite_cond_t c = {0};
    if (n == 3) {
        char shown[128]; /* each_flag() cuts the field up */
        snprintf(shown, sizeof(shown), "%s", a[2]);
        const char *err = each_flag(a[2], &c, cond_flag);
        if (err)
            return refuse(why, len, "RewriteCond: %s in '%s'", err, shown);
    }
    char *pat = a[1];
    if (*pat == '!') {
        c.negate = 1;
        pat++;
    }
    c.type = cond_kind(&c, &pat);
    if (c.type == COND_REGEX && !(c.re = rewrite_compile(pat, c.nocase, why, len)))
        return -1;
    c.input = mark_variables(a[0]);
    if (c.input == NULL) {
        pcre2_code_free(c.re);
        return refuse(why, len, "RewriteCond: a control character in its test string");
    }
    c.operand = vc_strdup(pat);
    set->pending = vc_realloc(set->pending, (set->npending + 1) * sizeof(*set->pending));
    set->pending[set->npending++] = c;
    return 1;
}

/* The 3xx to 5xx codes Apache 2.4 knows (its status lines); R= refuses
 * others. */
static int known_status(int code)
{
    static const int known[] = {300, 301, 302, 303, 304, 305, 306, 307, 308, 400, 401, 402, 403, 404, 405, 406,
                                407, 408, 409, 410, 411, 412, 413, 414, 415, 416, 417, 421, 422, 423, 424, 426,
                                428, 429, 431, 451, 500, 501, 502, 503, 504, 505, 506, 507, 508, 510, 511};
    for (size_t i = 0; i < VC_ARRAY_SIZE(known); i++)
        if (known[i] == code)
            return 1;
    return 0;
}

static const char *rule_flag(void *into, char *key, char *val)
{
    rewrite_rule_t *r = into;
    static const struct {
        const char *name, *alias;
        unsigned flag;
    } plain[] = {
        {"L", "last", RULE_LAST},
        {"END", NULL, RULE_END},
        {"C", "chain", RULE_CHAIN},
        {"QSA", "qsappend", RULE_QSAPPEND},
        {"QSD", "qsdiscard", RULE_QSDISCARD},
        {"QSL", "qslast", RULE_QSLAST},
        {"NE", "noescape", RULE_NOESCAPE},
        {"PT", "passthrough", RULE_PASSTHROUGH},
        {"DPI", "discardpath", RULE_DPI},
        {"UnsafeAllow3F", NULL, RULE_ALLOW3F},
        {"UNC", NULL, RULE_UNC},
        {"BNP", "backrefnoplus", RULE_NOPLUS},
        {"NS", "nosubreq", 0},
        {"NC", "nocase", RULE_NOCASE},
        {"UnsafePrefixStat", NULL, 0},
    };
    for (size_t i = 0; i < VC_ARRAY_SIZE(plain); i++)
        if (!strcasecmp(key, plain[i].name) || (plain[i].alias && !strcasecmp(key, plain[i].alias))) {
            r->flags |= plain[i].flag;
            return NULL;
        }
    if (!strcasecmp(key, "F") || !strcasecmp(key, "forbidden") || !strcasecmp(key, "G") || !strcasecmp(key, "gone")) {
        r->flags |= RULE_STATUS | RULE_NOSUB;
        r->status = tolower((unsigned char)key[0]) == 'f' ? 403 : 410;
    } else if (!strcasecmp(key, "R") || !strcasecmp(key, "redirect")) {
        r->flags |= RULE_REDIRECT;
        r->status = 302;
        if (!strcasecmp(val, "permanent"))
            r->status = 301;
        else if (!strcasecmp(val, "seeother"))
            r->status = 303;
        else if (isdigit((unsigned char)*val)) {
            r->status = atoi(val);
            if (!known_status(r->status))
                return "invalid HTTP response code for flag 'R'";
            if (r->status >= 400)
                r->flags |= RULE_STATUS | RULE_NOSUB;
        } else if (*val && strcasecmp(val, "temp"))
            return "invalid value for flag 'R'";
    } else if (!strcasecmp(key, "E") || !strcasecmp(key, "env")) {
        r->env = vc_realloc(r->env, (r->nenv + 1) * sizeof(*r->env));
        r->env[r->nenv++] = vc_strdup(val);
    } else if (!strcasecmp(key, "S") || !strcasecmp(key, "skip")) {
        r->skip = atoi(val);
    } else if (!strcasecmp(key, "N") || !strcasecmp(key, "next")) {
        r->flags |= RULE_NEXT;
        r->maxrounds = *val && atoi(val) > 0 ? atoi(val) : 10000; /* Apache's default */
    } else if (!strcasecmp(key, "B")) {
        r->flags |= RULE_ESCAPEREF;
        free(r->escapes);
        r->escapes = *val ? vc_strdup(val) : NULL;
    } else if (!strcasecmp(key, "P") || !strcasecmp(key, "proxy") || !strcasecmp(key, "H") ||
               !strcasecmp(key, "handler") || !strcasecmp(key, "T") || !strcasecmp(key, "type") ||
               !strcasecmp(key, "CO") || !strcasecmp(key, "cookie") || !strcasecmp(key, "BCTLS") ||
               !strcasecmp(key, "BNE")) {
        return "a flag this server does not apply";
    } else {
        return "unknown flag";
    }
    return NULL;
}

static void rule_free(rewrite_rule_t *r)
{
    pcre2_code_free(r->re);
    free(r->output);
    free(r->escapes);
    for (size_t i = 0; i < r->nenv; i++)
        free(r->env[i]);
    free(r->env);
    for (size_t i = 0; i < r->nconds; i++)
        cond_free(&r->conds[i]);
    free(r->conds);
}

static int rewrite_rule(rewrite_set_t *set, char *args, char *why, size_t len)
{
    char *a[3];
    int n = split_args(args, a);
    if (n < 2)
        return refuse(why, len, "RewriteRule needs a pattern and a substitution");
    rewrite_rule_t r = {0};
    if (n == 3) {
        char shown[128]; /* each_flag() cuts the field up */
        snprintf(shown, sizeof(shown), "%s", a[2]);
        const char *err = each_flag(a[2], &r, rule_flag);
        if (err) {
            rule_free(&r);
            return refuse(why, len, "RewriteRule: %s in '%s'", err, shown);
        }
    }
    const char *u = unsupported_expansion(a[1]);
    for (size_t i = 0; !u && i < r.nenv; i++)
        u = unsupported_expansion(r.env[i]);
    if (u) {
        rule_free(&r);
        return refuse(why, len, "RewriteRule: %s is not applied by this server", u);
    }
    char *pat = a[0];
    if (*pat == '!') {
        r.flags |= RULE_NEGATE;
        pat++;
    }
    r.re = rewrite_compile(pat, (r.flags & RULE_NOCASE) != 0, why, len);
    if (r.re == NULL) {
        rule_free(&r);
        return -1;
    }
    if (strcmp(a[1], "-") == 0)
        r.flags |= RULE_NOSUB;
    else if ((r.output = mark_variables(a[1])) == NULL) {
        rule_free(&r);
        return refuse(why, len, "RewriteRule: a control character in its substitution");
    }
    for (size_t i = 0; i < r.nenv; i++) {
        char *marked = mark_variables(r.env[i]);
        if (marked == NULL) {
            rule_free(&r);
            return refuse(why, len, "RewriteRule: a control character in E=");
        }
        free(r.env[i]);
        r.env[i] = marked;
    }
    r.conds = set->pending;
    r.nconds = set->npending;
    set->pending = NULL;
    set->npending = 0;
    set->rules = vc_realloc(set->rules, (set->nrules + 1) * sizeof(*set->rules));
    set->rules[set->nrules++] = r;
    return 1;
}

static int rewrite_options(rewrite_set_t *set, char *args, char *why, size_t len)
{
    static const struct {
        const char *name;
        unsigned option;
    } known[] = {
        {"Inherit", OPT_INHERIT},
        {"InheritBefore", OPT_INHERIT_BEFORE},
        {"InheritDown", OPT_INHERIT_DOWN},
        {"InheritDownBefore", OPT_INHERIT_DOWN_BEFORE},
        {"IgnoreInherit", OPT_IGNORE_INHERIT},
        {"AllowNoSlash", OPT_NOSLASH},
        {"MergeBase", OPT_MERGEBASE},
        {"AllowAnyURI", 0},
        {"IgnoreContextInfo", 0},
        {"LegacyPrefixDocRoot", 0},
        {"LongURLOptimization", 0},
    };
    for (char *save = NULL, *w = strtok_r(args, " \t", &save); w; w = strtok_r(NULL, " \t", &save)) {
        size_t i = 0;
        while (i < VC_ARRAY_SIZE(known) && strcasecmp(w, known[i].name))
            i++;
        if (i == VC_ARRAY_SIZE(known))
            return refuse(why, len, "RewriteOptions: unknown option '%s'", w);
        set->options |= known[i].option;
    }
    set->options_set = 1;
    return 1;
}

int rewrite_directive(rewrite_set_t **setp, const char *name, char *args, char *why, size_t len)
{
    if (strncasecmp(name, "Rewrite", 7) != 0)
        return 0;
    if (*setp == NULL)
        *setp = vc_calloc(1, sizeof(**setp));
    rewrite_set_t *set = *setp;
    const char *what = name + 7;
    if (!strcasecmp(what, "Cond"))
        return rewrite_cond(set, args, why, len);
    if (!strcasecmp(what, "Rule"))
        return rewrite_rule(set, args, why, len);
    if (!strcasecmp(what, "Options"))
        return rewrite_options(set, args, why, len);
    char *a[3];
    int n = split_args(args, a);
    if (!strcasecmp(what, "Engine")) {
        if (n != 1 || (strcasecmp(a[0], "on") && strcasecmp(a[0], "off")))
            return refuse(why, len, "RewriteEngine must be On or Off");
        set->on = !strcasecmp(a[0], "on");
        set->on_set = 1;
        return 1;
    }
    if (!strcasecmp(what, "Base")) {
        if (n != 1 || a[0][0] != '/')
            return refuse(why, len, "RewriteBase takes one absolute URL path");
        free(set->base);
        set->base = vc_strdup(a[0]);
        return 1;
    }
    /* RewriteMap is for the server's configuration only: Apache refuses it here. */
    return refuse(why, len, "%s: not a directive of a directory's mod_rewrite", name);
}

void rewrite_set_free(rewrite_set_t *set)
{
    if (set == NULL)
        return;
    for (size_t i = 0; i < set->nrules; i++)
        rule_free(&set->rules[i]);
    free(set->rules);
    for (size_t i = 0; i < set->npending; i++)
        cond_free(&set->pending[i]);
    free(set->pending);
    free(set->base);
    free(set);
}

void rewrite_conf_init(rewrite_conf_t *c)
{
    c->on = 0;
    c->directory[0] = '\0';
    c->base = NULL;
    c->options = 0;
    c->nrules = 0;
    c->overflow = 0;
}

static void append(rewrite_conf_t *c, const rewrite_set_t *set)
{
    for (size_t i = 0; i < set->nrules; i++) {
        if (c->nrules == REWRITE_MAX_RULES) {
            c->overflow = 1;
            return;
        }
        c->rules[c->nrules++] = &set->rules[i];
    }
}

/* config_perdir_merge(): the engine's state, options and base as the
 * nearest file that sets them says; the rules replaced, or joined with
 * the parents' where an option says so. */
void rewrite_conf_merge(rewrite_conf_t *c, const rewrite_set_t *set, const char *dir, size_t len)
{
    if (set == NULL)
        return;
    unsigned base_options = c->options;
    if (set->on_set)
        c->on = set->on;
    if (set->options_set)
        c->options = set->options;
    if (set->base || !(c->options & OPT_MERGEBASE))
        c->base = set->base;
    if (len + 2 > sizeof(c->directory))
        len = sizeof(c->directory) - 2; /* PATH_MAX bounds what reaches here */
    memcpy(c->directory, dir, len);
    c->directory[len] = '/';
    c->directory[len + 1] = '\0';
    int down = !(c->options & OPT_IGNORE_INHERIT);
    if ((c->options & OPT_INHERIT) || (down && (base_options & OPT_INHERIT_DOWN))) {
        /* the parents' rules after this file's */
        const rewrite_rule_t *parents[REWRITE_MAX_RULES];
        size_t n = c->nrules;
        memcpy(parents, c->rules, n * sizeof(*parents));
        c->nrules = 0;
        append(c, set);
        c->overflow |= c->nrules + n > REWRITE_MAX_RULES;
        for (size_t i = 0; i < n && c->nrules < REWRITE_MAX_RULES; i++)
            c->rules[c->nrules++] = parents[i];
    } else if ((c->options & OPT_INHERIT_BEFORE) || (down && (base_options & OPT_INHERIT_DOWN_BEFORE))) {
        append(c, set);
    } else {
        c->nrules = 0;
        append(c, set);
    }
}

int rewrite_conf_allow_no_slash(const rewrite_conf_t *c)
{
    return (c->options & OPT_NOSLASH) != 0;
}
