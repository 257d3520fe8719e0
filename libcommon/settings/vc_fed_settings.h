#ifndef VC_FED_SETTINGS_H
#define VC_FED_SETTINGS_H
/* vc-fed's section of the configuration (vc_fed_settings.c). */
#include "vc_settings.h"

#include <stdint.h>

/* The "fed.*" settings (vc_fed_settings.c). */
typedef struct fed_settings {
    int64_t stage_timeout_ms;  /* a staging nobody added to for this long is dropped */
    int64_t switch_timeout_ms; /* for the pool's new generation to take over */
    int64_t health_timeout_ms; /* for site.health_check to answer 200 after a switch */
    int64_t peer_timeout_ms;   /* a call to another node's vc-fed (but a commit) */
    int64_t hook_timeout_ms;   /* one command of site.deploy_hooks */
} fed_settings_t;

extern const vc_section_t vc_fed_settings;

#endif
