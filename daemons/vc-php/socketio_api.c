/*
 * Socket.IO from PHP (docs/socketio.md): what socket.io's server API and
 * its Redis emitter do from outside a handler, for the site's sockets on
 * every front and node:
 *
 *   vc_socketio_emit(string $event, array $args = [], string|array $to = [],
 *                    string|array $except = [], string $namespace = '/')
 *       io.of(namespace).to(to).except(except).emit(event, ...args)
 *   vc_socketio_join(string|array $to, string|array $rooms, string $namespace = '/')
 *       io.of(namespace).in(to).socketsJoin(rooms)
 *   vc_socketio_leave(...)          ... socketsLeave(rooms)
 *   vc_socketio_disconnect(string|array $to, string $namespace = '/', bool $close = false)
 *       io.of(namespace).in(to).disconnectSockets(close)
 *
 * A socket's id is a room of its own; $to = [] means every socket of the
 * namespace. Each is sent on the worker's own link as the script runs,
 * like vc_publish(); the front names the site, so a pool reaches only its
 * own site's sockets. Bad arguments are a ValueError; false means there
 * is no request to send from (a worker script's boot, a CLI script).
 */
#include "socketio_api.h"
#include "publish.h"
#include "sapi.h"

#include <ext/json/php_json.h>
#include <ext/standard/html.h>
#include <zend_exceptions.h>
#include <zend_smart_str.h>

#include <string.h>

#define ARGS_MAX (1 << 20) /* what the bus relays */
#define NAME_MAX_LEN 512   /* a room's name */
#define NSP_MAX_LEN 256    /* as the front's reader */
#define LIST_MAX 100       /* rooms in one call */

/* A namespace as socket.io's parser reads one: "/" then no ",". */
static int nsp_ok(const zend_string *n)
{
    return ZSTR_LEN(n) >= 1 && ZSTR_LEN(n) <= NSP_MAX_LEN && ZSTR_VAL(n)[0] == '/' &&
           !memchr(ZSTR_VAL(n), ',', ZSTR_LEN(n)) && !memchr(ZSTR_VAL(n), 0, ZSTR_LEN(n)) &&
           publish_utf8_ok(ZSTR_VAL(n), ZSTR_LEN(n));
}

/* A room's name: 1 to 512 bytes of UTF-8 without NUL. */
static int room_ok(const zend_string *r)
{
    return ZSTR_LEN(r) >= 1 && ZSTR_LEN(r) <= NAME_MAX_LEN && !memchr(ZSTR_VAL(r), 0, ZSTR_LEN(r)) &&
           publish_utf8_ok(ZSTR_VAL(r), ZSTR_LEN(r));
}

/* Rooms from a string or an array of strings into an emalloc'd array (*n
 * set; NULL when none). A ValueError for argument arg, and -1, if one is
 * not a room's name. */
static int room_list(uint32_t arg, zend_string *one, HashTable *many, char ***out, size_t *n)
{
    *out = NULL;
    *n = one ? 1 : many ? zend_hash_num_elements(many) : 0; /* neither: not passed */
    if (*n > LIST_MAX) {
        zend_argument_value_error(arg, "must name at most %d rooms", LIST_MAX);
        return -1;
    }
    if (*n == 0)
        return 0;
    char **list = ecalloc(*n, sizeof(*list));
    int bad = one && !room_ok(one);
    size_t i = 0;
    if (one) {
        list[i++] = ZSTR_VAL(one);
    } else {
        zval *z;
        ZEND_HASH_FOREACH_VAL(many, z)
        {
            if (Z_TYPE_P(z) != IS_STRING || !room_ok(Z_STR_P(z)))
                bad = 1;
            else
                list[i++] = Z_STRVAL_P(z);
        }
        ZEND_HASH_FOREACH_END();
    }
    if (bad) {
        efree(list);
        zend_argument_value_error(arg, "must name rooms: strings of 1 to %d bytes of UTF-8, without NUL", NAME_MAX_LEN);
        return -1;
    }
    *out = list;
    return 0;
}

static int send_op(Vc__SioOp *op)
{
    vc_request_t *r = vc_sapi_current();
    Vc__Publish pub = VC__PUBLISH__INIT;
    pub.channel = "";
    pub.event = "";
    pub.sio = op;
    return r && r->publish ? r->publish(r, &pub) : -1;
}

/* What socket.io's server refuses to emit (its RESERVED_EVENTS). */
static int reserved(const zend_string *ev)
{
    static const char *const names[] = {"connect",       "connect_error", "disconnect",
                                        "disconnecting", "newListener",   "removeListener"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (zend_string_equals_cstr(ev, names[i], strlen(names[i])))
            return 1;
    return 0;
}

ZEND_FUNCTION(vc_socketio_emit)
{
    zend_string *event, *to_one = NULL, *ex_one = NULL, *nsp = NULL;
    HashTable *args = NULL, *to_many = NULL, *ex_many = NULL;
    ZEND_PARSE_PARAMETERS_START(1, 5)
    Z_PARAM_STR(event)
    Z_PARAM_OPTIONAL
    Z_PARAM_ARRAY_HT(args)
    Z_PARAM_ARRAY_HT_OR_STR(to_many, to_one)
    Z_PARAM_ARRAY_HT_OR_STR(ex_many, ex_one)
    Z_PARAM_STR(nsp)
    ZEND_PARSE_PARAMETERS_END();
    if (ZSTR_LEN(event) == 0 || ZSTR_LEN(event) > 200 || memchr(ZSTR_VAL(event), 0, ZSTR_LEN(event)) ||
        !publish_utf8_ok(ZSTR_VAL(event), ZSTR_LEN(event))) {
        zend_argument_value_error(1, "must be 1 to 200 bytes of UTF-8, without NUL");
        RETURN_THROWS();
    }
    if (reserved(event)) {
        zend_argument_value_error(1, "\"%s\" is a reserved event name", ZSTR_VAL(event));
        RETURN_THROWS();
    }
    if (args && !zend_array_is_list(args)) {
        zend_argument_value_error(2, "must be a list (the event's arguments, in order)");
        RETURN_THROWS();
    }
    if (nsp && !nsp_ok(nsp)) {
        zend_argument_value_error(5, "must be a namespace: \"/\" and up to 255 bytes more, without \",\"");
        RETURN_THROWS();
    }
    /* [EVENT, ...ARGS], as socket.io writes an event's data. */
    smart_str json = {0};
    zval z;
    ZVAL_STR(&z, event);
    smart_str_appendc(&json, '[');
    php_json_encode(&json, &z, PHP_JSON_UNESCAPED_SLASHES | PHP_JSON_UNESCAPED_UNICODE);
    if (args && zend_hash_num_elements(args) > 0) {
        smart_str list = {0};
        ZVAL_ARR(&z, args);
        /* NAN and INF are written 0 with only the error code set. */
        if (php_json_encode(&list, &z, PHP_JSON_UNESCAPED_SLASHES | PHP_JSON_UNESCAPED_UNICODE) == FAILURE ||
            JSON_G(error_code) != PHP_JSON_ERROR_NONE) {
            smart_str_free(&list);
            smart_str_free(&json);
            zend_argument_value_error(2, "could not be encoded as JSON");
            RETURN_THROWS();
        }
        smart_str_appendc(&json, ',');
        smart_str_appendl(&json, ZSTR_VAL(list.s) + 1, ZSTR_LEN(list.s) - 1); /* "[" dropped, "]" kept */
        smart_str_free(&list);
    } else {
        smart_str_appendc(&json, ']');
    }
    smart_str_0(&json);
    if (ZSTR_LEN(json.s) > ARGS_MAX) {
        smart_str_free(&json);
        zend_argument_value_error(2, "must be at most 1 MiB as JSON");
        RETURN_THROWS();
    }
    Vc__SioOp op = VC__SIO_OP__INIT;
    if (room_list(3, to_one, to_many, &op.rooms, &op.n_rooms) != 0 ||
        room_list(4, ex_one, ex_many, &op.except, &op.n_except) != 0) {
        if (op.rooms)
            efree(op.rooms);
        smart_str_free(&json);
        RETURN_THROWS();
    }
    op.nsp = nsp ? ZSTR_VAL(nsp) : "/";
    op.packet = ZSTR_VAL(json.s);
    int rc = send_op(&op);
    if (op.rooms)
        efree(op.rooms);
    if (op.except)
        efree(op.except);
    smart_str_free(&json);
    RETURN_BOOL(rc == 0);
}

/* join and leave: the sockets in to, then the rooms. */
static void join_or_leave(INTERNAL_FUNCTION_PARAMETERS, int join)
{
    zend_string *to_one = NULL, *rooms_one = NULL, *nsp = NULL;
    HashTable *to_many = NULL, *rooms_many = NULL;
    ZEND_PARSE_PARAMETERS_START(2, 3)
    Z_PARAM_ARRAY_HT_OR_STR(to_many, to_one)
    Z_PARAM_ARRAY_HT_OR_STR(rooms_many, rooms_one)
    Z_PARAM_OPTIONAL
    Z_PARAM_STR(nsp)
    ZEND_PARSE_PARAMETERS_END();
    if (nsp && !nsp_ok(nsp)) {
        zend_argument_value_error(3, "must be a namespace: \"/\" and up to 255 bytes more, without \",\"");
        RETURN_THROWS();
    }
    Vc__SioOp op = VC__SIO_OP__INIT;
    char **rooms = NULL;
    size_t nrooms = 0;
    if (room_list(1, to_one, to_many, &op.rooms, &op.n_rooms) != 0)
        RETURN_THROWS();
    if (room_list(2, rooms_one, rooms_many, &rooms, &nrooms) != 0) {
        if (op.rooms)
            efree(op.rooms);
        RETURN_THROWS();
    }
    op.nsp = nsp ? ZSTR_VAL(nsp) : "/";
    op.packet = "";
    if (join) {
        op.join = rooms;
        op.n_join = nrooms;
    } else {
        op.leave = rooms;
        op.n_leave = nrooms;
    }
    int rc = nrooms ? send_op(&op) : 0;
    if (op.rooms)
        efree(op.rooms);
    if (rooms)
        efree(rooms);
    RETURN_BOOL(rc == 0);
}

ZEND_FUNCTION(vc_socketio_join)
{
    join_or_leave(INTERNAL_FUNCTION_PARAM_PASSTHRU, 1);
}

ZEND_FUNCTION(vc_socketio_leave)
{
    join_or_leave(INTERNAL_FUNCTION_PARAM_PASSTHRU, 0);
}

ZEND_FUNCTION(vc_socketio_disconnect)
{
    zend_string *to_one = NULL, *nsp = NULL;
    HashTable *to_many = NULL;
    bool close = 0;
    ZEND_PARSE_PARAMETERS_START(1, 3)
    Z_PARAM_ARRAY_HT_OR_STR(to_many, to_one)
    Z_PARAM_OPTIONAL
    Z_PARAM_STR(nsp)
    Z_PARAM_BOOL(close)
    ZEND_PARSE_PARAMETERS_END();
    if (nsp && !nsp_ok(nsp)) {
        zend_argument_value_error(2, "must be a namespace: \"/\" and up to 255 bytes more, without \",\"");
        RETURN_THROWS();
    }
    Vc__SioOp op = VC__SIO_OP__INIT;
    if (room_list(1, to_one, to_many, &op.rooms, &op.n_rooms) != 0)
        RETURN_THROWS();
    op.nsp = nsp ? ZSTR_VAL(nsp) : "/";
    op.packet = "";
    op.disconnect = 1;
    op.close = close;
    int rc = send_op(&op);
    if (op.rooms)
        efree(op.rooms);
    RETURN_BOOL(rc == 0);
}
