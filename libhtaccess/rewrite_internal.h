/*
 * What rewrite_parse.c reads and rewrite.c applies: mod_rewrite's rules
 * and conditions, with the flags this engine carries out.
 */
#ifndef VC_FRONT_REWRITE_INTERNAL_H
#define VC_FRONT_REWRITE_INTERNAL_H

#define PCRE2_CODE_UNIT_WIDTH 8
#include "rewrite.h"

#include <pcre2.h>

typedef enum cond_type {
    COND_REGEX,
    COND_FILE, /* -f */
    COND_SIZE, /* -s */
    COND_DIR,  /* -d */
    COND_LINK, /* -l, -L, -h */
    COND_EXEC, /* -x */
    COND_STR_EQ,
    COND_STR_LT,
    COND_STR_GT,
    COND_STR_LE,
    COND_STR_GE,
    COND_INT_EQ,
    COND_INT_LT,
    COND_INT_GT,
    COND_INT_LE,
    COND_INT_GE,
} cond_type_t;

typedef struct rewrite_cond {
    char *input;   /* the TestString, expanded per request */
    char *operand; /* what a string or number is compared with */
    cond_type_t type;
    pcre2_code *re;
    int negate, nocase, ornext;
} rewrite_cond_t;

enum {
    RULE_LAST = 1 << 0,         /* L */
    RULE_END = 1 << 1,          /* END */
    RULE_CHAIN = 1 << 2,        /* C */
    RULE_QSAPPEND = 1 << 3,     /* QSA */
    RULE_QSDISCARD = 1 << 4,    /* QSD */
    RULE_QSLAST = 1 << 5,       /* QSL */
    RULE_REDIRECT = 1 << 6,     /* R */
    RULE_STATUS = 1 << 7,       /* F, G, R=4xx: answers a status */
    RULE_NOSUB = 1 << 8,        /* the substitution is "-" */
    RULE_NOESCAPE = 1 << 9,     /* NE */
    RULE_PASSTHROUGH = 1 << 10, /* PT */
    RULE_NEXT = 1 << 11,        /* N */
    RULE_NEGATE = 1 << 12,      /* the pattern starts with '!' */
    RULE_DPI = 1 << 13,         /* DPI: discard the path info */
    RULE_ESCAPEREF = 1 << 14,   /* B */
    RULE_NOPLUS = 1 << 15,      /* BNP: a space in a back-reference is %20, not + */
    RULE_ALLOW3F = 1 << 16,     /* UnsafeAllow3F */
    RULE_UNC = 1 << 17,         /* UNC: leading slashes kept */
    RULE_NOCASE = 1 << 18,      /* NC */
};

struct rewrite_rule {
    pcre2_code *re;
    char *output; /* the substitution; NULL for "-" */
    unsigned flags;
    int status;    /* R=, F, G */
    int skip;      /* S=n */
    int maxrounds; /* N=n */
    char *escapes; /* B=chars: only these are escaped */
    char **env;    /* E=name:value, E=!name */
    size_t nenv;
    rewrite_cond_t *conds;
    size_t nconds;
};

enum {
    OPT_INHERIT = 1 << 0,
    OPT_INHERIT_BEFORE = 1 << 1,
    OPT_INHERIT_DOWN = 1 << 2,
    OPT_INHERIT_DOWN_BEFORE = 1 << 3,
    OPT_IGNORE_INHERIT = 1 << 4,
    OPT_NOSLASH = 1 << 5, /* AllowNoSlash */
    OPT_MERGEBASE = 1 << 6,
};

struct rewrite_set {
    int on, on_set;
    unsigned options;
    int options_set;
    char *base; /* RewriteBase */
    rewrite_rule_t *rules;
    size_t nrules;
    rewrite_cond_t *pending; /* conditions waiting for their rule */
    size_t npending;
};

/* A match's bounds: Apache keeps ten back-references. */
#define REWRITE_REFS 10

/* %{NAME} of a variable mod_rewrite knows is kept as %{MARK i}, i its
 * index + 1, so that expanding it asks no names. */
#define REWRITE_VAR_MARK '\x01'
/* The index of a variable's name (len bytes, any case), or -1. */
int rewrite_variable_index(const char *name, size_t len);

/* A pattern compiled as Apache compiles it (DOTALL, DOLLAR_ENDONLY), and
 * no longer than a bound; NULL with why (if given) when it cannot be. */
pcre2_code *rewrite_compile(const char *pattern, int nocase, char *why, size_t why_len);

typedef struct rewrite_refs {
    const char *source; /* NULL: none */
    PCRE2_SIZE ov[2 * REWRITE_REFS];
    int n;
} rewrite_refs_t;

/* Whether re matches s; refs (may be NULL) keeps its groups. A match
 * over PCRE2's limits (a pattern written to backtrack for ever, since a
 * site's own PHP may write its .htaccess) fails. */
int rewrite_match(const pcre2_code *re, const char *s, rewrite_refs_t *refs);

#endif
