#include "vc_lent_log.h"

#include <string.h>

int vc_lent_log_next(const char **at, const char *end, vc_lent_log_t *rec, const char **texts)
{
    if (*at > end || (size_t)(end - *at) < sizeof(*rec))
        return 0;
    memcpy(rec, *at, sizeof(*rec));
    if (rec->method_len == VC_LENT_LOG_ABSENT || rec->target_len == VC_LENT_LOG_ABSENT)
        return 0;
    const uint16_t lens[] = {rec->method_len, rec->target_len, rec->authority_len, rec->referer_len, rec->agent_len};
    size_t need = 0;
    for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++)
        need += lens[i] == VC_LENT_LOG_ABSENT ? 0 : lens[i];
    if (need > (size_t)(end - *at) - sizeof(*rec))
        return 0;
    *texts = *at + sizeof(*rec);
    *at = *texts + need;
    return 1;
}
