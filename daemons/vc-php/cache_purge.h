/* vc_cache_purge_tags() for PHP (cache_purge.c). */
#ifndef VC_PHP_CACHE_PURGE_H
#define VC_PHP_CACHE_PURGE_H

#include <php.h>

ZEND_FUNCTION(vc_cache_purge_tags);

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_vc_cache_purge_tags, 0, 1, _IS_BOOL, 0)
ZEND_ARG_TYPE_INFO(0, tags, IS_ARRAY, 0)
ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, soft, _IS_BOOL, 0, "false")
ZEND_END_ARG_INFO()

#endif
