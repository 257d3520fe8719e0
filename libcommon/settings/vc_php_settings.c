/* vc-php's supervision (vc_settings.h). Its settings are the pools'
 * (php.*, pools.NAME.*: libcommon/vc_pools.c), which the supervisor reads
 * too: it makes each pool's user, home and walls. */
#include "vc_settings.h"

static const vc_supervision_t supervision = {
    .binary = "vc-php",
    .order = 20,
    .copies = VC_COPIES_PER_POOL,
    /* Over a Unix socket a successor takes the link over (vc_link_listen);
     * a pool on a TCP port stops first (cli/children.c). */
    .overlaps = 1,
};

const vc_section_t vc_php_settings = {
    .name = "php",
    .supervision = &supervision,
};
