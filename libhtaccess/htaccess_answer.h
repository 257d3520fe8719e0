/*
 * What a directory's .htaccess says of the answers served from it, as
 * Apache's modules apply them to a response: mod_headers (`Header`),
 * mod_expires (`ExpiresActive`, `ExpiresByType`, `ExpiresDefault`),
 * mod_mime (`AddType`), core's `AddDefaultCharset` and `ErrorDocument`. htaccess.c reads
 * the lines into it (htaccess_answer_directive), htaccess_respond.c
 * applies the directories' sets, from the root down, to a response.
 */
#ifndef VC_FRONT_HTACCESS_ANSWER_H
#define VC_FRONT_HTACCESS_ANSWER_H

#include <stddef.h>

typedef enum header_action {
    HEADER_SET,
    HEADER_SETIFEMPTY,
    HEADER_APPEND, /* to the value, after ", " */
    HEADER_MERGE,  /* append, unless the value is already there */
    HEADER_ADD,    /* another header of the same name */
    HEADER_UNSET,
} header_action_t;

typedef struct header_rule {
    header_action_t action;
    int always; /* also on the answers the front makes itself (errors, redirects) */
    char *name;
    char *value; /* NULL for unset */
} header_rule_t;

/* An expiry: from the time of the request ('A') or the file's
 * modification ('M'), plus seconds. base 0: none. */
typedef struct expires_code {
    char base;
    long seconds;
} expires_code_t;

typedef struct expires_by_type {
    char *type; /* "text/css", or a major type: "image/" then a star */
    expires_code_t code;
} expires_by_type_t;

typedef struct mime_by_ext {
    char *ext; /* lowercase, without the dot */
    char *type;
} mime_by_ext_t;

/* ErrorDocument CODE ...: what the front's own error answer becomes. */
typedef enum error_doc_kind {
    ERROR_DOC_DEFAULT, /* `default`: the front's own again */
    ERROR_DOC_TEXT,    /* the text itself */
    ERROR_DOC_URL,     /* a redirect to it */
    ERROR_DOC_PATH,    /* a local URL, served or run with the error's status */
} error_doc_kind_t;

typedef struct error_doc {
    int status;
    error_doc_kind_t kind;
    char *value;
} error_doc_t;

typedef struct htaccess_answer {
    header_rule_t *headers; /* in order */
    size_t nheaders;
    int expires_active; /* -1 unsaid, 0 Off, 1 On */
    expires_code_t expires_default;
    expires_by_type_t *by_type;
    size_t nby_type;
    mime_by_ext_t *types;
    size_t ntypes;
    char *charset; /* AddDefaultCharset: NULL unsaid, "" Off, else the charset */
    error_doc_t *errors;
    size_t nerrors;
} htaccess_answer_t;

/* Reads the directive w[0..n-1] into *a (made on first use): 1 if it was
 * one and is applied, 0 if it is none of these, -1 if it is one this
 * server does not apply (why says what: a format it does not expand, an
 * action it does not take). */
int htaccess_answer_directive(htaccess_answer_t **a, char **w, int n, char *why, size_t whylen);
void htaccess_answer_free(htaccess_answer_t *a);

/* mod_expires's code ("access plus 1 month", "A3600"): 0 with *out, or -1. */
int htaccess_expires_code(const char *text, expires_code_t *out);

#endif
