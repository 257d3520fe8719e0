/* libFuzzer: an Apache httpd configuration as `vc import apache` reads it
 * (cli/apache_conf.c, no includes followed) and converts it into sites
 * (cli/import_apache.c): nothing may crash or leak, every directive has a
 * name and a line within the text, and each site's text is written. */
#include "../cli/apache_conf.h"
#include "../cli/import_site.h"

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

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    lines = 1;
    for (size_t i = 0; i < size; i++)
        lines += data[i] == '\n';
    conf_tree_t *c = conf_tree_new(NULL);
    char err[256];
    if (apache_conf_parse(c, "fuzz.conf", (const char *)data, size, err, sizeof(err)) == 0) {
        check(&c->top);
        import_t im = {.max_body = -1};
        import_apache_tree(&im, c);
        import_name_sites(&im);
        for (size_t i = 0; i < im.nsites; i++)
            free(import_site_text(&im.sites[i], "fuzz.conf"));
        import_free(&im);
    } else if (strncmp(err, "fuzz.conf:", 10) != 0) {
        abort(); /* an error must say where */
    }
    conf_tree_free(&c);
    return 0;
}
