#include "vc_events.h"

#include <stdio.h>

const vc_event_def_t vc_event_defs[VC_EV_COUNT] = {
#define VC_EVENT_DEF(name, topic, fields, when) [VC_EV_##name] = {topic, fields, when},
    VC_EVENT_LIST(VC_EVENT_DEF)
#undef VC_EVENT_DEF
};

const char *vc_event_topic_of(vc_event_t e, const char *member, char *buf, size_t len)
{
    const char *t = vc_event_defs[e].topic;
    if (t[0] == '*')
        snprintf(buf, len, "%s%s", member, t + 1);
    else
        snprintf(buf, len, "%s", t);
    return buf;
}
