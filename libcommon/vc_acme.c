#include "vc_acme.h"
#include "vc_util.h"

char *vc_acme_cert_path(const char *data_dir, const char *site, const char *ext)
{
    return vc_asprintf("%s/tls/acme/%s.%s", data_dir, site, ext);
}
