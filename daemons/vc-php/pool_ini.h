/*
 * The pool's own PHP settings beyond php.ini: its session and temporary
 * directories, its php.ini lines, its admin settings and open_basedir.
 */
#ifndef VC_PHP_POOL_INI_H
#define VC_PHP_POOL_INI_H

#include "vc_config.h"

/* The ini text SAPI applies after php.ini: the pool's directories, then
 * php.ini lines of the configuration (they win). Caller frees. */
char *pool_ini_entries(const vc_config_t *cfg);

/* The directories scripts of the pool may open: each of its sites' root
 * (and the application above a public/ or web/ root), the worker script's
 * directory, include_path's absolute entries, its sessions and tmp, and
 * php.open_basedir_dirs; ':'-separated. Caller frees. */
char *pool_ini_open_basedir(const vc_config_t *cfg, const char *include_path);

/* What walls the pool off besides PHP, as `vc up` found it: "namespace"
 * (its own mount namespace), "user" (a user of its own) or "none". */
const char *pool_ini_wall(void);

/* After PHP started: applies php.admin_ini and open_basedir so that no
 * script can change them. Returns 0, or -1 (logged) for a directive PHP
 * does not know or refuses. */
int pool_ini_lock(const vc_config_t *cfg);

#endif
