/*
 * What vc-acme reads from a CA, apart from its sockets (so a fuzz target
 * drives it): response headers, Retry-After, problem documents (RFC 7807),
 * an authorisation's challenge and a renewal window (RFC 9773).
 */
#ifndef VC_ACME_PARSE_H
#define VC_ACME_PARSE_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

/* "Name: value\r\n" -> value (malloc'd, trimmed) if the name is name. */
char *acme_header_value(const char *line, size_t len, const char *name);

/* Seconds a Retry-After value asks for (delta-seconds or an HTTP date),
 * or fallback if v is NULL or cannot be read. */
long acme_retry_after_value(const char *v, long fallback);

/* "URL answered STATUS: TYPE: DETAIL" from a problem document (json may
 * be NULL or anything). */
void acme_problem_text(const json_t *json, long status, const char *url, char *err, size_t errlen);

/* An authorisation's identifier and its challenge of type ("http-01",
 * "tls-alpn-01", "dns-01"): token and URL (borrowed from authz). 0, or -1
 * if it has none usable (a token must be base64url: it becomes a path and
 * a key; the host a DNS name: it becomes a record's name). */
int acme_challenge_of(const json_t *authz, const char *type, const char **host, const char **token, const char **url);

/* An RFC 3339 date-time ("2026-12-02T10:00:00Z", with fractions of a
 * second or an offset) as unix seconds; 0, or -1 if it is not one. */
int acme_rfc3339(const char *v, int64_t *out);

/* RenewalInfo's suggestedWindow (RFC 9773 4.2): 0 with its start and
 * end, or -1 if it has none or end is not after start. */
int acme_renewal_window(const json_t *info, int64_t *start, int64_t *end);

#endif
