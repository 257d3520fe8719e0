/*
 * vc_mercure_publish(string|array $topics, string $data = '', bool $private
 * = false, ?string $type = null, ?string $id = null): string|false, the
 * same for the site's Mercure hub: returns the update's id.
 *
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
#include "vc_realtime.h"

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

int publish_utf8_ok(const char *s, size_t n)
{
    size_t at = 0;
    zend_result status = SUCCESS;
    while (at < n && status == SUCCESS)
        php_next_utf8_char((const unsigned char *)s, n, &at, &status);
    return status == SUCCESS;
}

static int utf8_ok(const zend_string *s)
{
    return publish_utf8_ok(ZSTR_VAL(s), ZSTR_LEN(s));
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
        /* NAN and INF are written 0 with only the error code set. */
        if (php_json_encode(&json, &z, PHP_JSON_UNESCAPED_SLASHES | PHP_JSON_UNESCAPED_UNICODE) == FAILURE ||
            JSON_G(error_code) != PHP_JSON_ERROR_NONE) {
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
    Vc__Publish pub = VC__PUBLISH__INIT;
    pub.channel = ZSTR_VAL(channel);
    pub.event = ZSTR_VAL(event);
    pub.data.data = (uint8_t *)data;
    pub.data.len = len;
    int rc = r && r->publish ? r->publish(r, &pub) : -1;
    smart_str_free(&json);
    RETURN_BOOL(rc == 0);
}

/* A line of SSE: no line break. */
static int sse_field_ok(const zend_string *s, size_t max)
{
    return ZSTR_LEN(s) <= max && !memchr(ZSTR_VAL(s), '\n', ZSTR_LEN(s)) && !memchr(ZSTR_VAL(s), '\r', ZSTR_LEN(s)) &&
           !memchr(ZSTR_VAL(s), 0, ZSTR_LEN(s));
}

ZEND_FUNCTION(vc_mercure_publish)
{
    zend_string *topic = NULL, *data = NULL, *type = NULL, *id = NULL;
    HashTable *topics = NULL;
    bool private_ = 0;
    ZEND_PARSE_PARAMETERS_START(1, 5)
    Z_PARAM_ARRAY_HT_OR_STR(topics, topic)
    Z_PARAM_OPTIONAL
    Z_PARAM_STR(data)
    Z_PARAM_BOOL(private_)
    Z_PARAM_STR_OR_NULL(type)
    Z_PARAM_STR_OR_NULL(id)
    ZEND_PARSE_PARAMETERS_END();
    size_t n = topics ? zend_hash_num_elements(topics) : 1;
    if (n == 0 || n > 100) {
        zend_argument_value_error(1, "must name 1 to 100 topics");
        RETURN_THROWS();
    }
    char **list = ecalloc(n, sizeof(*list));
    size_t i = 0;
    if (topics) {
        zval *t;
        ZEND_HASH_FOREACH_VAL(topics, t)
        {
            if (Z_TYPE_P(t) != IS_STRING || Z_STRLEN_P(t) == 0 || Z_STRLEN_P(t) > 2048) {
                efree(list);
                zend_argument_value_error(1, "must hold topics: strings of 1 to 2048 bytes");
                RETURN_THROWS();
            }
            list[i++] = Z_STRVAL_P(t);
        }
        ZEND_HASH_FOREACH_END();
    } else {
        if (ZSTR_LEN(topic) == 0 || ZSTR_LEN(topic) > 2048) {
            efree(list);
            zend_argument_value_error(1, "must be 1 to 2048 bytes");
            RETURN_THROWS();
        }
        list[i++] = ZSTR_VAL(topic);
    }
    const char *why = NULL;
    uint32_t arg = 0;
    if (data && (ZSTR_LEN(data) > DATA_MAX || !utf8_ok(data))) {
        arg = 2;
        why = "must be UTF-8 text of at most 1 MiB";
    } else if (type && !sse_field_ok(type, 200)) {
        arg = 4;
        why = "must be at most 200 bytes, on one line";
    } else if (id && (!sse_field_ok(id, 100) || ZSTR_LEN(id) == 0 || ZSTR_VAL(id)[0] == '#')) {
        arg = 5;
        why = "must be 1 to 100 bytes, on one line, not starting with '#'";
    }
    if (why) {
        efree(list);
        zend_argument_value_error(arg, "%s", why);
        RETURN_THROWS();
    }
    char uuid[VC_URN_UUID_LEN + 1];
    if (id == NULL)
        vc_urn_uuid(uuid);
    Vc__Publish pub = VC__PUBLISH__INIT;
    pub.channel = "";
    pub.event = "";
    pub.topics = list;
    pub.n_topics = n;
    pub.private_ = private_;
    pub.type = type ? ZSTR_VAL(type) : "";
    pub.event_id = id ? ZSTR_VAL(id) : uuid;
    pub.data.data = data ? (uint8_t *)ZSTR_VAL(data) : NULL;
    pub.data.len = data ? ZSTR_LEN(data) : 0;
    vc_request_t *r = vc_sapi_current();
    int rc = r && r->publish ? r->publish(r, &pub) : -1;
    efree(list);
    if (rc != 0)
        RETURN_FALSE;
    RETURN_STRING(pub.event_id);
}
