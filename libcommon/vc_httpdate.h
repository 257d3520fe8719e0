/*
 * HTTP dates (RFC 9110 5.6.7), one strict parser for every date the suite
 * reads: Expires, Date, Last-Modified, If-Modified-Since, If-Range,
 * Retry-After. All three forms a recipient must accept:
 *   IMF-fixdate  "Sun, 06 Nov 1994 08:49:37 GMT"
 *   RFC 850      "Sunday, 06-Nov-94 08:49:37 GMT" (a year over 50 years
 *                ahead is of the century before)
 *   asctime      "Sun Nov  6 08:49:37 1994"
 * exactly as the grammar spells them (one space where it has one, two
 * digits where it has two, a real day of the month), with day and month
 * names and "GMT" in any case, as recipients are asked to be robust in
 * letter case. Anything else is not a date (RFC 9111 5.3: an Expires that
 * is not one means already expired).
 */
#ifndef VC_HTTPDATE_H
#define VC_HTTPDATE_H

#include <stddef.h>
#include <stdint.h>

/* Seconds since the epoch, or -1 if v (len bytes) is not an HTTP date. */
int64_t vc_httpdate_parse(const char *v, size_t len);

#define VC_HTTPDATE_LEN 29 /* "Sun, 06 Nov 1994 08:49:37 GMT" */
/* The IMF-fixdate of t (0 <= t, year <= 9999) into out, NUL-ended:
 * VC_HTTPDATE_LEN + 1 bytes. Returns VC_HTTPDATE_LEN, or 0 if t is out of
 * range. */
size_t vc_httpdate_format(int64_t t, char *out);

#endif
