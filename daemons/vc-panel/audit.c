/* The audit trail: each sign-in and each change is a panel.audit event
 * on the bus (journaled like every event), and the panel's audit page
 * reads them back from the bus's journal in LMDB. */
#include "panel.h"
#include "vc_events.h"
#include "vc_log.h"
#include "vc_util.h"

#include <string.h>

void audit_record(preq_t *r, const char *action, const char *target, const char *result)
{
    const char *user = r->user[0] ? r->user : "-";
    vc_bus_publish(r->p->d.bus, VC_EVENT(PANEL_AUDIT),
                   strcmp(result, "ok") == 0 ? VC__SEVERITY__NOTICE : VC__SEVERITY__WARNING, "user", user, "action",
                   action, "target", target ? target : "", "from", r->addr, "result", result, NULL);
    vc_log(VC_LOG_NOTICE, "audit", "%s %s %s from %s: %s", user, action, target ? target : "", r->addr, result);
}
