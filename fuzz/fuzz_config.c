/* libFuzzer: configuration files. The first byte picks a main file, a
 * site file, or the environment's VC_ENDPOINTS (a container's endpoints);
 * the rest is the text. Errors are fine; crashes and leaks are not. */
#include "vc_config.h"
#include "vc_log.h"
#include "vc_util.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    if (size < 1)
        return 0;
    vc_log_set_level(0);
    Vc__ConfigVersion v = VC__CONFIG_VERSION__INIT;
    Vc__ConfigSource src = VC__CONFIG_SOURCE__INIT, *srcs[1] = {&src};
    src.name = data[0] & 1 ? "sites-enabled/fuzz.conf" : "vc.conf";
    src.site = data[0] & 1;
    src.text.data = (uint8_t *)data + 1;
    src.text.len = size - 1;
    v.files = srcs;
    v.n_files = 1;
    char *text = NULL;
    Vc__Field env = VC__FIELD__INIT, *envs[1] = {&env};
    if (data[0] & 2) {
        text = vc_strndup((const char *)data + 1, size - 1);
        env.key = "VC_ENDPOINTS";
        env.value = text;
        v.env = envs;
        v.n_env = 1;
        v.n_files = 0;
    }
    char err[512];
    vc_config_t *cfg = vc_config_parse(&v, "/tmp/vc-fuzz", err, sizeof(err));
    if (cfg) {
        char *ep = vc_config_endpoint(cfg, "php");
        free(ep);
        vc_config_site_for_host(cfg, "example.com:80", 14);
    }
    vc_config_destroy(&cfg);
    free(text);
    return 0;
}
