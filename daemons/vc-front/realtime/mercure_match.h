/*
 * Mercure's topic selectors: "*" (every topic), a URI template (RFC 6570:
 * "https://example.com/books/{id}", "{+path}"), or a topic itself.
 * {name} matches one or more characters other than / ? # and
 * {+name} or {#name} any one or more. A template of more than
 * MERCURE_MAX_VARS expressions, or an unclosed one, matches nothing.
 */
#ifndef VC_FRONT_MERCURE_MATCH_H
#define VC_FRONT_MERCURE_MATCH_H

#define MERCURE_MAX_VARS 4

/* 1 if selector matches topic. */
int mercure_match(const char *selector, const char *topic);

#endif
