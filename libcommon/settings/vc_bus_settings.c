/* vc-bus's settings and supervision (vc_settings.h). */
#include "vc_bus_settings.h"
#include "vc_util.h"

#include <stddef.h>

static const vc_setting_t settings[] = {
    {"bus.journal_max", T_INT, offsetof(bus_settings_t, journal_max), 1, 10000000,
     "events kept in the journal (vc events)"},
    {"bus.room_history", T_INT, offsetof(bus_settings_t, room_history), 0, 1000000,
     "messages kept a room for replay (Mercure's Last-Event-ID)"},
};

static void defaults(void *values, const char *data_dir)
{
    (void)data_dir;
    ((bus_settings_t *)values)->journal_max = 10000;
    ((bus_settings_t *)values)->room_history = 1000;
}

/* Room messages (rooms.h): in from publishers, out to every front. */
static const char *const endpoints[] = {"rooms-in", "rooms-out", NULL};

static const vc_supervision_t supervision = {
    .binary = "vc-bus",
    .order = 10, /* first: everyone publishes to it */
    .copies = VC_COPIES_ONE,
};

const vc_section_t vc_bus_settings = {
    .name = "bus",
    .settings = settings,
    .nsettings = VC_ARRAY_SIZE(settings),
    .size = sizeof(bus_settings_t),
    .defaults = defaults,
    .supervision = &supervision,
    .endpoints = endpoints,
};
