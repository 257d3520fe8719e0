/*
 * vc_cache_purge_tags(array $tags, bool $soft = false): bool, for PHP
 * (docs/CACHE.md). The tags leave with the answer's head, in a header
 * of ours (Velocity-Purge-Tags, or Velocity-Purge-Soft-Tags) that the
 * front takes out and turns into a purge in vc-cache, limited to the
 * site's own hosts; the client never sees it. So it must be called before
 * output is sent, as header() must.
 */
#include "cache_purge.h"

#include <php.h>
#include <SAPI.h>
#include <zend_exceptions.h>
#include <zend_smart_str.h>

#include <string.h>

#define TAG_MAX 128 /* VC_CACHE_TAG_MAX: a longer tag is refused */

/* A tag is one word of the header: no space, comma or control byte. */
static int tag_ok(const zend_string *t)
{
    if (ZSTR_LEN(t) == 0 || ZSTR_LEN(t) > TAG_MAX)
        return 0;
    for (size_t i = 0; i < ZSTR_LEN(t); i++) {
        unsigned char c = (unsigned char)ZSTR_VAL(t)[i];
        if (c <= ' ' || c == ',' || c == 0x7f)
            return 0;
    }
    return 1;
}

ZEND_FUNCTION(vc_cache_purge_tags)
{
    HashTable *tags;
    bool soft = 0;
    ZEND_PARSE_PARAMETERS_START(1, 2)
    Z_PARAM_ARRAY_HT(tags)
    Z_PARAM_OPTIONAL
    Z_PARAM_BOOL(soft)
    ZEND_PARSE_PARAMETERS_END();
    smart_str line = {0};
    smart_str_appends(&line, soft ? "Velocity-Purge-Soft-Tags:" : "Velocity-Purge-Tags:");
    zval *tag;
    ZEND_HASH_FOREACH_VAL(tags, tag)
    {
        if (Z_TYPE_P(tag) != IS_STRING || !tag_ok(Z_STR_P(tag))) {
            smart_str_free(&line);
            zend_argument_value_error(1,
                                      "must hold tags: strings of 1 to %d bytes without spaces, commas or control "
                                      "characters",
                                      TAG_MAX);
            RETURN_THROWS();
        }
        smart_str_appendc(&line, ' ');
        smart_str_append(&line, Z_STR_P(tag));
    }
    ZEND_HASH_FOREACH_END();
    if (zend_hash_num_elements(tags) == 0) {
        smart_str_free(&line);
        RETURN_TRUE;
    }
    if (SG(headers_sent)) {
        smart_str_free(&line);
        php_error_docref(NULL, E_WARNING, "Cannot purge tags after the headers were sent: call it before output");
        RETURN_FALSE;
    }
    smart_str_0(&line);
    sapi_header_line h = {.line = ZSTR_VAL(line.s), .line_len = ZSTR_LEN(line.s)};
    int rc = sapi_header_op(SAPI_HEADER_ADD, &h);
    smart_str_free(&line);
    RETURN_BOOL(rc == SUCCESS);
}
