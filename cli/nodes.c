/*
 * vc nodes: the cluster's roster as this node's vc-mesh sees it (each
 * node, its state, when it was last heard, its version and load).
 */
#include "cli.h"
#include "vc_ctl.h"
#include "vc_mesh.h"
#include "vc_util.h"

#include <stdio.h>
#include <string.h>
#include <zmq.h>

static const char *field(const Vc__Record *rec, const char *key)
{
    const char *v = vc_record_get(rec, key);
    return v ? v : "";
}

static void print_json(const Vc__Reply *r)
{
    printf("{\"nats\":\"%s\",\"nodes\":[", vc_reply_get(r, "nats") ? vc_reply_get(r, "nats") : "");
    static const char *const keys[] = {"node", "state", "version", "config", "addresses"};
    static const char *const numbers[] = {"self", "silent_ms", "load", "sites", "started_ms"};
    for (size_t i = 0; i < r->n_records; i++) {
        printf("%s{", i ? "," : "");
        for (size_t k = 0; k < VC_ARRAY_SIZE(keys); k++) {
            printf("%s\"%s\":\"", k ? "," : "", keys[k]);
            vc_json_escape(stdout, field(r->records[i], keys[k]), strlen(field(r->records[i], keys[k])));
            printf("\"");
        }
        for (size_t k = 0; k < VC_ARRAY_SIZE(numbers); k++)
            printf(",\"%s\":%s", numbers[k],
                   field(r->records[i], numbers[k])[0] ? field(r->records[i], numbers[k]) : "0");
        printf("}");
    }
    printf("]}\n");
}

int cmd_nodes(cli_t *cli, int argc, char **argv)
{
    int json = argc == 2 && !strcmp(argv[1], "--json");
    if (argc > 1 + json) {
        fprintf(stderr, "usage: vc nodes [--json]\n");
        return 2;
    }
    vc_config_t *cfg = cli_running_config(cli);
    if (cfg == NULL)
        return 1;
    if (vc_mesh_settings_of(cfg)->node[0] == '\0') {
        fprintf(stderr, "vc nodes: this machine is not in a cluster (cluster.node is not set; docs/cluster.md)\n");
        vc_config_destroy(&cfg);
        return 1;
    }
    void *zctx = zmq_ctx_new();
    Vc__Reply *r = NULL;
    int rc = cli_call(zctx, cfg, "vc-mesh", "nodes", NULL, 0, &r) < 0 || r == NULL || !r->ok;
    if (!rc && json) {
        print_json(r);
    } else if (!rc) {
        printf("NATS: %s\n%-20s %-8s %10s %-10s %6s %s\n", vc_reply_get(r, "nats"), "NODE", "STATE", "SILENT",
               "VERSION", "LOAD", "ADDRESS");
        for (size_t i = 0; i < r->n_records; i++) {
            const Vc__Record *n = r->records[i];
            printf("%-20s %-8s %8sms %-10s %6s %s%s\n", field(n, "node"), field(n, "state"), field(n, "silent_ms"),
                   field(n, "version"), field(n, "load"), field(n, "addresses"),
                   !strcmp(field(n, "self"), "1") ? " (this node)" : "");
        }
    } else if (r) {
        fprintf(stderr, "vc nodes: %s\n", r->message);
    }
    if (r)
        vc__reply__free_unpacked(r, NULL);
    zmq_ctx_term(zctx);
    vc_config_destroy(&cfg);
    return rc;
}
