/*
 * A generation's releases (docs/deploys.md): a deployed site's root is
 * DEPLOY_TO/current/..., and `current` is a link vc-fed moves. The zygote
 * reads where each link leads when it boots, and its workers run that
 * release's files, whatever the link says later: a generation never mixes
 * two releases' code, and the next one (which vc-fed starts once it has
 * moved the link) runs only the new.
 */
#ifndef VC_PHP_RELEASE_PIN_H
#define VC_PHP_RELEASE_PIN_H

#include "request.pb-c.h"
#include "vc_config.h"

/* Reads each deployed site's current link (the zygote, as it boots). */
void release_pins_load(const vc_config_t *cfg);
/* The request's paths, moved from DEPLOY_TO/current to the release. */
void release_pins_apply(Vc__RequestHead *h);
/* path in the pinned release: a new string, or NULL if it is not in one. */
char *release_pins_path(const char *path);

#endif
