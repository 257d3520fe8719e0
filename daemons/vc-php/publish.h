/* vc_publish() for PHP (publish.c). */
#ifndef VC_PHP_PUBLISH_H
#define VC_PHP_PUBLISH_H

#include <php.h>

ZEND_FUNCTION(vc_publish);

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_vc_publish, 0, 3, _IS_BOOL, 0)
ZEND_ARG_TYPE_INFO(0, channel, IS_STRING, 0)
ZEND_ARG_TYPE_INFO(0, event, IS_STRING, 0)
ZEND_ARG_TYPE_MASK(0, data, MAY_BE_STRING | MAY_BE_ARRAY, NULL)
ZEND_END_ARG_INFO()

#endif
