/* vc_socketio_*() for PHP (socketio_api.c). */
#ifndef VC_PHP_SOCKETIO_API_H
#define VC_PHP_SOCKETIO_API_H

#include <php.h>

ZEND_FUNCTION(vc_socketio_emit);
ZEND_FUNCTION(vc_socketio_join);
ZEND_FUNCTION(vc_socketio_leave);
ZEND_FUNCTION(vc_socketio_disconnect);

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_vc_socketio_emit, 0, 1, _IS_BOOL, 0)
ZEND_ARG_TYPE_INFO(0, event, IS_STRING, 0)
ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, args, IS_ARRAY, 0, "[]")
ZEND_ARG_TYPE_MASK(0, to, MAY_BE_STRING | MAY_BE_ARRAY, "[]")
ZEND_ARG_TYPE_MASK(0, except, MAY_BE_STRING | MAY_BE_ARRAY, "[]")
ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, namespace, IS_STRING, 0, "\"/\"")
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_vc_socketio_join, 0, 2, _IS_BOOL, 0)
ZEND_ARG_TYPE_MASK(0, to, MAY_BE_STRING | MAY_BE_ARRAY, NULL)
ZEND_ARG_TYPE_MASK(0, rooms, MAY_BE_STRING | MAY_BE_ARRAY, NULL)
ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, namespace, IS_STRING, 0, "\"/\"")
ZEND_END_ARG_INFO()

#define arginfo_vc_socketio_leave arginfo_vc_socketio_join

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_vc_socketio_disconnect, 0, 1, _IS_BOOL, 0)
ZEND_ARG_TYPE_MASK(0, to, MAY_BE_STRING | MAY_BE_ARRAY, NULL)
ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, namespace, IS_STRING, 0, "\"/\"")
ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, close, _IS_BOOL, 0, "false")
ZEND_END_ARG_INFO()

#endif
