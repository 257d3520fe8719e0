/* vc-nats's supervision (vc_settings.h): it has no settings of its own;
 * the member it runs is described by cluster.* (libcommon/vc_mesh.h). */
#include "vc_settings.h"

static const vc_supervision_t supervision = {
    .binary = "vc-nats",
    .order = 11, /* after the bus, before vc-mesh, which links to it */
    .copies = VC_COPIES_IF,
    .copies_setting = "cluster.nats_server",
};

const vc_section_t vc_nats_settings = {
    .name = "nats_member", /* no settings: cluster.nats_* are vc-mesh's section's */
    .supervision = &supervision,
};
