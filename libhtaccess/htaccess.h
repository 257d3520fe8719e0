/*
 * A directory's .htaccess, compiled once for what it closes: its access
 * rules (`Require all denied|granted`, `Deny from all`, `Allow from all`,
 * each alone or in <Files>, <FilesMatch> and <IfModule> sections), so
 * that a site moved from Apache keeps closed what Apache closed
 * (htaccess_access.c asks it on every request, from the root down); its
 * mod_rewrite rules (rewrite.h), Redirects and PHP settings (applied by
 * htaccess_rewrite.c).
 *
 * What it cannot fully understand never opens anything: an access rule
 * it cannot read (authentication, `Require ip`, `Allow from` an address,
 * <Limit>) or a section it cannot parse denies the whole directory and
 * what is below it, with the file and line in `why`; so does a rewrite
 * rule it cannot apply. Its response directives (Header, Expires*,
 * AddType, AddDefaultCharset) are read into htaccess_answer.h's sets.
 * Directives of other kinds, and forms of those it does not apply, are
 * named by htaccess_ignored(), logged when the file is compiled
 * (htaccess_cache.c) and listed by vc configtest.
 * The text is outside input: fuzz/fuzz_htaccess.c.
 */
#ifndef VC_FRONT_HTACCESS_H
#define VC_FRONT_HTACCESS_H

#include "rewrite.h"

#include <stddef.h>

typedef struct htaccess htaccess_t;

/* file names the text in messages. Never NULL. */
htaccess_t *htaccess_compile(const char *file, const char *text, size_t len);
/* One that closes its whole directory, for a file that cannot be read. */
htaccess_t *htaccess_closed(const char *file, const char *why);
void htaccess_free(htaccess_t *h);

/* Why it denies its whole directory ("file:line: ..."), or NULL. */
const char *htaccess_unreadable(const htaccess_t *h);
/* The i-th directive it does not apply ("file:line: Name"), or NULL past
 * the last (at most HTACCESS_MAX_IGNORED are kept). */
#define HTACCESS_MAX_IGNORED 64
const char *htaccess_ignored(const htaccess_t *h, size_t i);

/* Its mod_rewrite directives, or NULL for none. */
const rewrite_set_t *htaccess_rewrite_rules(const htaccess_t *h);

/* Its php_value and php_flag settings (names and values, the last one
 * for a name; a flag's value "1" or "0"): how many. */
size_t htaccess_php_settings(const htaccess_t *h, const char *const **names, const char *const **values);

/* Whether it has Redirect or RedirectMatch directives (mod_alias). */
int htaccess_has_redirects(const htaccess_t *h);
/* The first of them that matches uri (the decoded URL path), as mod_alias
 * applies them in a directory: 1 with *status and the Location into out
 * ("" for a status that has none: 410, ...), or 0. A Location that is a
 * path is made a URL by the caller, and gets the request's query unless
 * it has its own. */
int htaccess_redirect(const htaccess_t *h, const char *uri, int *status, char *out, size_t outlen);

/* Its DirectoryIndex: 1 if it has one, with its names in order (none
 * for `disabled`), else 0. */
int htaccess_dir_index(const htaccess_t *h, const char *const **names, size_t *n);

/* Its response directives (htaccess_answer.h): whether it has any that
 * change an answer (ErrorDocument alone does not count), its own
 * (outside <Files>, or NULL), and one by one, those of the <Files> and
 * <FilesMatch> sections that match name (*at starts at 0; NULL past the
 * last). */
typedef struct htaccess_answer htaccess_answer_t;
int htaccess_has_answers(const htaccess_t *h);
const htaccess_answer_t *htaccess_answer(const htaccess_t *h);
const htaccess_answer_t *htaccess_file_answer(const htaccess_t *h, const char *name, size_t *at);

/* Whether scripts must not run here and below: another handler set for
 * every file, PHP's engine turned off, a handler removed (Drupal's
 * sites/default/files). Apache then sends the file as it is; the front
 * answers 403, never running it. */
int htaccess_no_scripts(const htaccess_t *h);

/* Whether Apache would run name as PHP (or a CGI program) here and below,
 * by SetHandler, ForceType or Action, though it is not a .php file the
 * suite runs: the front refuses it (403) rather than send its source. */
int htaccess_runs_php(const htaccess_t *h, const char *name);

typedef enum htaccess_verdict {
    HTACCESS_UNSET,
    HTACCESS_GRANTED,
    HTACCESS_DENIED,
} htaccess_verdict_t;

/* What h says of the directory itself (its Require or Deny outside any
 * <Files>), and of a file named name in it or below it (its <Files> and
 * <FilesMatch> that match name; UNSET when none does). */
htaccess_verdict_t htaccess_dir_verdict(const htaccess_t *h);
htaccess_verdict_t htaccess_file_verdict(const htaccess_t *h, const char *name);

#endif
