/*
 * The panel's calls to the other daemons (panel_call), and the API's
 * helpers over them: a reply's fields as JSON, a call
 * that answers 502 itself when the daemon does not, and a change (a call,
 * its panel.audit event, and the answer: 200, or 409 with the daemon's
 * own words). Every api_*.c change goes through api_change, so none can
 * forget its audit event.
 */
#include "panel.h"
#include "vc_config.h"
#include "vc_ctl.h"
#include "vc_util.h"

#include <stdlib.h>

static int reload_wanted;

int panel_call(panel_t *p, const char *endpoint, const char *verb, const char *const *args, size_t nargs,
               long timeout_ms, Vc__Reply **out)
{
    char *ep = vc_config_endpoint(p->d.cfg, endpoint);
    int rc = vc_ctl_call(p->d.zctx, ep, verb, args, nargs, timeout_ms, out);
    free(ep);
    return rc;
}

void panel_reload_soon(void)
{
    reload_wanted = 1;
}

int calls_reload_wanted(void)
{
    int was = reload_wanted;
    reload_wanted = 0;
    return was;
}

json_t *api_fields(Vc__Field *const *f, size_t n)
{
    json_t *o = json_object();
    for (size_t i = 0; i < n; i++)
        json_object_set_new(o, f[i]->key, json_string(f[i]->value));
    return o;
}

json_t *api_records(const Vc__Reply *rep)
{
    json_t *list = json_array();
    for (size_t i = 0; i < rep->n_records; i++)
        json_array_append_new(list, api_fields(rep->records[i]->fields, rep->records[i]->n_fields));
    return list;
}

Vc__Reply *api_call(preq_t *r, const char *endpoint, const char *verb, const char *const *args, size_t n, long ms)
{
    Vc__Reply *rep = NULL;
    int rc = panel_call(r->p, endpoint, verb, args, n, ms, &rep);
    if (rc < 0) {
        http_error(r, 502, "%s does not answer: %s", endpoint + 4, vc_strerror(rc));
        return NULL;
    }
    return rep;
}

int api_change(preq_t *r, const char *endpoint, const char *verb, const char *const *args, size_t n, long ms,
               const char *action, const char *target)
{
    Vc__Reply *rep = api_call(r, endpoint, verb, args, n, ms);
    if (rep == NULL) {
        audit_record(r, action, target, "the daemon does not answer");
        return -1;
    }
    audit_record(r, action, target, rep->ok ? "ok" : rep->message);
    int ok = rep->ok;
    if (ok)
        http_json(r, 200,
                  json_pack("{s:b,s:s,s:o}", "ok", 1, "message", rep->message, "fields",
                            api_fields(rep->fields, rep->n_fields)));
    else
        http_error(r, 409, "%s", rep->message);
    vc__reply__free_unpacked(rep, NULL);
    return ok ? 0 : -1;
}

void api_listing(preq_t *r, const char *endpoint, const char *verb, const char *key)
{
    Vc__Reply *rep = NULL;
    int rc = panel_call(r->p, endpoint, verb, NULL, 0, API_CALL_MS, &rep);
    if (rc < 0) {
        http_json(r, 200, json_pack("{s:b,s:s,s:[]}", "running", 0, "why", vc_strerror(rc), key));
        return;
    }
    http_json(r, 200, json_pack("{s:b,s:s,s:o}", "running", 1, "message", rep->message, key, api_records(rep)));
    vc__reply__free_unpacked(rep, NULL);
}
