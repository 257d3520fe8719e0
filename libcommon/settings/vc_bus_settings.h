/* vc-bus's own settings ("bus.*"), declared in vc_bus_settings.c (vc_settings.h). */
#ifndef VC_BUS_SETTINGS_H
#define VC_BUS_SETTINGS_H

#include "vc_config.h"

typedef struct bus_settings {
    int64_t journal_max;  /* events kept in the journal */
    int64_t room_history; /* messages kept a room for replay (Mercure's Last-Event-ID) */
} bus_settings_t;

extern const vc_section_t vc_bus_settings;

static inline const bus_settings_t *bus_settings(const vc_config_t *cfg)
{
    return (const bus_settings_t *)vc_config_section(cfg, &vc_bus_settings);
}

#endif
