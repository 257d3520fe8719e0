/* vc_publish() for PHP (publish.c). */
#ifndef VC_PHP_PUBLISH_H
#define VC_PHP_PUBLISH_H

#include <php.h>

#include "request.pb-c.h"

ZEND_FUNCTION(vc_publish);

/* Whether s (n bytes) is well-formed UTF-8, as PHP reads it. */
int publish_utf8_ok(const char *s, size_t n);

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_vc_publish, 0, 3, _IS_BOOL, 0)
ZEND_ARG_TYPE_INFO(0, channel, IS_STRING, 0)
ZEND_ARG_TYPE_INFO(0, event, IS_STRING, 0)
ZEND_ARG_TYPE_MASK(0, data, MAY_BE_STRING | MAY_BE_ARRAY, NULL)
ZEND_END_ARG_INFO()

ZEND_FUNCTION(vc_mercure_publish);

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_MASK_EX(arginfo_vc_mercure_publish, 0, 1, MAY_BE_STRING | MAY_BE_FALSE)
ZEND_ARG_TYPE_MASK(0, topics, MAY_BE_STRING | MAY_BE_ARRAY, NULL)
ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, data, IS_STRING, 0, "\"\"")
ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, private, _IS_BOOL, 0, "false")
ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, type, IS_STRING, 1, "null")
ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, id, IS_STRING, 1, "null")
ZEND_END_ARG_INFO()

#endif
