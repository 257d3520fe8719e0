#ifndef VC_NATS_CONF_H
#define VC_NATS_CONF_H

#include "vc_mesh.h"

#include <stddef.h>

/* Writes nats-server's configuration for this node's member to path
 * (0600: it holds the cluster's password): 0, or -1 with why. */
int nats_conf_write(const mesh_settings_t *m, const char *path, const char *store_dir, char *why, size_t len);

#endif
