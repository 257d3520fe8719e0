/*
 * vc_confstore: configuration versions in LMDB (database "config").
 *
 * Keys: the version number as a big-endian u64 -> a packed ConfigVersion;
 * "current" -> the version in force. Only `vc` (the supervisor, or
 * `vc reload` when no supervisor runs) writes here.
 */
#ifndef VC_CONFSTORE_H
#define VC_CONFSTORE_H

#include "config.pb-c.h"
#include "vc_config.h"
#include "vc_store.h"

/* Stores v as the next version and makes it current; sets v->version.
 * Keeps the newest `keep` versions. Returns the version number (> 0) or a
 * negative error. */
int64_t vc_confstore_put(vc_store_t *st, Vc__ConfigVersion *v, unsigned keep);

/* The current version, or NULL (-VC_ERR_NOTFOUND in *err) when none was
 * ever stored. Caller frees with vc_config_version_free. */
Vc__ConfigVersion *vc_confstore_current(vc_store_t *st, int *err);

/* Opens the store under data_dir, reads the current version, parses it and
 * closes the store again (so it can be called before a fork). On failure
 * returns NULL with the reason in err. */
vc_config_t *vc_confstore_load(const char *data_dir, char *err, size_t errlen);

/* A daemon run alone (a container, `--conf DIR`) has no supervisor to store
 * its configuration: from then on vc_confstore_load gathers it from that
 * directory and the environment, as `vc up` would, and never opens the
 * store. conf_dir NULL: the built-in defaults and the environment. */
void vc_confstore_use_files(const char *conf_dir);

#endif
