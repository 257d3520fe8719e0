/*
 * DNS-01's records, set and cleared by the operator's program
 * (acme.dns_hook): run with a fixed argv, no shell,
 *     HOOK set   _acme-challenge.example.com TXT-VALUE
 *     HOOK unset _acme-challenge.example.com TXT-VALUE
 * its output logged line by line, killed after a minute. Exit status 0
 * is success.
 */
#ifndef VC_ACME_DNS_HOOK_H
#define VC_ACME_DNS_HOOK_H

#include <stddef.h>

/* 0, or -1 with err (how it ended, and its last line of output). */
int dns_hook_run(const char *hook, const char *op, const char *name, const char *value, char *err, size_t errlen);

#endif
