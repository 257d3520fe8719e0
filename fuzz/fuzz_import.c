/* libFuzzer: what `vc import` reads, from any bytes, as an nginx
 * configuration (cli/nginx_conf.c, cli/import_nginx.c) and as an Apache
 * one (cli/apache_conf.c, cli/import_apache.c), no includes followed:
 * nothing may crash or leak, every directive has a name and a line
 * within the text, an error says where, and each site's text is
 * written. */
#include "../cli/apache_conf.h"
#include "../cli/import_nginx_internal.h"

#include <stdlib.h>
#include <string.h>

static int lines;

static void check(const conf_node_t *d)
{
    for (size_t i = 0; i < d->nkids; i++) {
        const conf_node_t *k = &d->kids[i];
        if (k->name == NULL || k->line < 1 || k->line > lines || (k->nkids && !k->block))
            abort();
        for (size_t a = 0; a < k->nargs; a++)
            if (k->args[a] == NULL)
                abort();
        check(k);
    }
}

static void one(const unsigned char *data, size_t size, conf_tree_parse_fn parse,
                void (*convert)(import_t *, const conf_tree_t *))
{
    conf_tree_t *c = conf_tree_new(NULL);
    char err[256];
    if (parse(c, "fuzz.conf", (const char *)data, size, err, sizeof(err)) == 0) {
        check(&c->top);
        import_t im = {.max_body = -1};
        convert(&im, c);
        import_name_sites(&im);
        for (size_t i = 0; i < im.nsites; i++)
            free(import_site_text(&im.sites[i], "fuzz.conf"));
        import_free(&im);
    } else if (strncmp(err, "fuzz.conf:", 10) != 0) {
        abort(); /* an error must say where */
    }
    conf_tree_free(&c);
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    lines = 1;
    for (size_t i = 0; i < size; i++)
        lines += data[i] == '\n';
    one(data, size, nginx_conf_parse, import_nginx_tree);
    one(data, size, apache_conf_parse, import_apache_tree);
    return 0;
}
