/* libFuzzer: the access-log records a worker sends the front for the
 * requests it served on a lent connection (libcommon/vc_lent_log.c, read
 * by daemons/vc-front/php/lend_conn.c). Whatever the bytes, every record
 * read has its texts inside them, one after another, and the reading
 * moves on or stops. */
#include "vc_lent_log.h"

#include <stdlib.h>
#include <string.h>

static size_t len_of(uint16_t len)
{
    return len == VC_LENT_LOG_ABSENT ? 0 : len;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* A copy of its own size: a read past it is caught. */
    char *copy = malloc(size ? size : 1);
    memcpy(copy, data, size);
    const char *at = copy, *end = copy + size, *texts;
    vc_lent_log_t rec;
    while (vc_lent_log_next(&at, end, &rec, &texts)) {
        size_t need = len_of(rec.method_len) + len_of(rec.target_len) + len_of(rec.authority_len) +
                      len_of(rec.referer_len) + len_of(rec.agent_len);
        if (texts < copy || texts + need != at || at > end || rec.method_len == VC_LENT_LOG_ABSENT)
            abort();
        volatile char sum = 0; /* every byte read: ASan sees any outside */
        for (const char *p = texts; p < at; p++)
            sum += *p;
        (void)sum;
    }
    if (at < copy || at > end)
        abort();
    free(copy);
    return 0;
}
