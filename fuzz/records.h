/* The input of the fuzz targets that play a peer (fuzz_broker,
 * fuzz_front_link): records of [kind][length, 2 bytes LE][payload], the
 * last one cut to what is left. */
#ifndef VC_FUZZ_RECORDS_H
#define VC_FUZZ_RECORDS_H

#include <stddef.h>
#include <stdint.h>

typedef struct fuzz_record {
    uint8_t kind;
    const uint8_t *p;
    size_t len;
} fuzz_record_t;

/* The record at *at, moving *at past it: 1, or 0 at the end. */
static inline int fuzz_next_record(const uint8_t *data, size_t size, size_t *at, fuzz_record_t *r)
{
    if (*at + 3 > size)
        return 0;
    r->kind = data[*at];
    r->len = (size_t)data[*at + 1] | (size_t)data[*at + 2] << 8;
    *at += 3;
    if (r->len > size - *at)
        r->len = size - *at;
    r->p = data + *at;
    *at += r->len;
    return 1;
}

#endif
