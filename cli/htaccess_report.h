/*
 * vc configtest's list of what the sites' .htaccess files hold that the
 * suite does not apply (htaccess_report.c).
 */
#ifndef VC_CLI_HTACCESS_REPORT_H
#define VC_CLI_HTACCESS_REPORT_H

#include "vc_config.h"

/* Prints, for each site with `htaccess` on, the directives of its
 * .htaccess files that are not applied and those that close a directory. */
void htaccess_report(const vc_config_t *cfg);

#endif
