#ifndef VC_FRONT_SITES_H
#define VC_FRONT_SITES_H
/* A site's part in the core (its h2o host and paths): sites.c. */
#include "front.h"

/* Sets up site s of conf: its h2o host, sized for FRONT_SITE_PATHS and
 * its handoff directories, and the path of answers made or streamed. */
void site_setup(front_t *f, site_rt_t *s, const vc_site_t *conf);
/* Reads the site's error pages and redirects, once at start. -1 (logged)
 * if an error page cannot be read. */
int site_load_extras(site_rt_t *s, const vc_site_t *conf);
/* Adds "Server: Velocity" to answers on pathconf that have none. */
void server_header_register(h2o_pathconf_t *pathconf);
/* What every path of a site's answers has: the Server header, the
 * access log, and compression if the site and the front allow it. */
void front_path_filters(front_t *f, const site_rt_t *s, h2o_pathconf_t *pathconf);
/* A path of site s's own h2o host, for a backend's handlers and filters.
 * h2o keeps a host's paths in one growing array, so a pointer it returned
 * would move when the array grows: the site's array is sized once for
 * every path its backends may ask (FRONT_SITE_PATHS, and one for each
 * handoff directory), and asking for more is a bug caught here. */
h2o_pathconf_t *front_site_path(site_rt_t *s, const char *path);
#define FRONT_SITE_PATHS 8

#endif
