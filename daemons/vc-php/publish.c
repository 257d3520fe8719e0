/*
 * vc_publish(string $channel, string $event, string|array $data): bool,
 * for PHP (docs/REALTIME.md): an event for every subscriber of a channel
 * of the site's first realtime app, sent on the worker's own link as the
 * script runs (no HTTP call, no waiting for the answer to end). An array
 * is sent as its JSON, as Laravel's broadcaster does; a string as it is.
 * A bad channel or event name, data that is not UTF-8 or is over 1 MiB,
 * is a ValueError; false means there is no request to publish from (a
 * worker script's boot).
 */
#include "publish.h"
#include "sapi.h"

#include <ext/json/php_json.h>
#include <ext/standard/html.h>
#include <zend_exceptions.h>
#include <zend_smart_str.h>

#include <string.h>

#define DATA_MAX (1 << 20) /* what the bus relays */

/* Pusher's channel names: 1 to 164 of A-Z a-z 0-9 _ - = @ , . ; */
static int channel_ok(const zend_string *c)
{
    if (ZSTR_LEN(c) == 0 || ZSTR_LEN(c) > 164)
        return 0;
    for (size_t i = 0; i < ZSTR_LEN(c); i++) {
        char ch = ZSTR_VAL(c)[i];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
              (ch && strchr("_-=@,.;", ch))))
            return 0;
    }
    return 1;
}

static int utf8_ok(const zend_string *s)
{
    size_t at = 0;
    zend_result status = SUCCESS;
    while (at < ZSTR_LEN(s) && status == SUCCESS)
        php_next_utf8_char((const unsigned char *)ZSTR_VAL(s), ZSTR_LEN(s), &at, &status);
    return status == SUCCESS;
}

ZEND_FUNCTION(vc_publish)
{
    zend_string *channel, *event, *text = NULL;
    HashTable *list = NULL;
    ZEND_PARSE_PARAMETERS_START(3, 3)
    Z_PARAM_STR(channel)
    Z_PARAM_STR(event)
    Z_PARAM_ARRAY_HT_OR_STR(list, text)
    ZEND_PARSE_PARAMETERS_END();
    if (!channel_ok(channel)) {
        zend_argument_value_error(1, "must be 1 to 164 of A-Z a-z 0-9 _ - = @ , . ;");
        RETURN_THROWS();
    }
    if (ZSTR_LEN(event) == 0 || ZSTR_LEN(event) > 200 || memchr(ZSTR_VAL(event), 0, ZSTR_LEN(event))) {
        zend_argument_value_error(2, "must be 1 to 200 bytes, without NUL");
        RETURN_THROWS();
    }
    smart_str json = {0};
    const char *data;
    size_t len;
    if (list) {
        zval z;
        ZVAL_ARR(&z, list);
        if (php_json_encode(&json, &z, PHP_JSON_UNESCAPED_SLASHES | PHP_JSON_UNESCAPED_UNICODE) == FAILURE) {
            smart_str_free(&json);
            zend_argument_value_error(3, "could not be encoded as JSON");
            RETURN_THROWS();
        }
        smart_str_0(&json);
        data = ZSTR_VAL(json.s);
        len = ZSTR_LEN(json.s);
    } else {
        data = ZSTR_VAL(text);
        len = ZSTR_LEN(text);
        if (!utf8_ok(text)) {
            zend_argument_value_error(3, "must be UTF-8 text");
            RETURN_THROWS();
        }
    }
    if (len > DATA_MAX) {
        smart_str_free(&json);
        zend_argument_value_error(3, "must be at most 1 MiB");
        RETURN_THROWS();
    }
    vc_request_t *r = vc_sapi_current();
    int rc = r && r->publish ? r->publish(r, ZSTR_VAL(channel), ZSTR_VAL(event), data, len) : -1;
    smart_str_free(&json);
    RETURN_BOOL(rc == 0);
}
