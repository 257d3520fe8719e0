/* libFuzzer: a .htaccess file as the front compiles it (htaccess.h), from
 * any bytes: nothing may crash or leak, a file it cannot fully read
 * closes its directory, and asking it about names never fails. Its
 * rewrite rules (rewrite.h) are then applied to a few requests, so are its
 * Redirects, and the bytes are also read as an internal redirect's path. */
#include "htaccess.h"
#include "rewrite.h"

#include <stdlib.h>
#include <string.h>

static const char *header(void *ctx, const char *name)
{
    (void)ctx;
    return strcmp(name, "Host") == 0 ? "fuzz.test" : NULL;
}

static void apply(const rewrite_set_t *set)
{
    static rewrite_conf_t conf;
    rewrite_conf_init(&conf);
    rewrite_conf_merge(&conf, set, "/nonexistent/fuzz", 17);
    rewrite_conf_merge(&conf, set, "/nonexistent/fuzz/sub", 21); /* as a child that inherits */
    static const char *const paths[] = {"/sub/index.php", "/sub/a/b?c", "/sub/", "/sub/x%3Fy"};
    for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
        static char arena[4096];
        rewrite_request_t r = {
            .arena = arena,
            .arena_size = sizeof(arena),
            .method = "GET",
            .protocol = "HTTP/1.1",
            .scheme = "http",
            .remote_addr = "127.0.0.1",
            .remote_port = "1",
            .server_name = "fuzz.test",
            .server_addr = "",
            .server_port = "80",
            .document_root = "/nonexistent/fuzz",
            .the_request = "GET / HTTP/1.1",
            .header = header,
            .uri = paths[i],
            .args = i % 2 ? "a=1" : NULL,
        };
        char full[64];
        strcpy(full, "/nonexistent/fuzz");
        strcat(full, paths[i]);
        r.filename = full;
        r.path_info = "";
        const char *uri;
        int status;
        (void)rewrite_round(&conf, &r, &uri, &status);
        rewrite_release(&r);
    }
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    htaccess_t *h = htaccess_compile("fuzz/.htaccess", (const char *)data, size);
    static const char *const names[] = {"index.php", "settings.ini", "a.log", ".", "x.bak", "1.bak", ""};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        (void)htaccess_file_verdict(h, names[i]);
    if (htaccess_unreadable(h) && htaccess_dir_verdict(h) != HTACCESS_DENIED)
        abort(); /* what it cannot read must close the directory */
    (void)htaccess_no_scripts(h);
    if (htaccess_rewrite_rules(h))
        apply(htaccess_rewrite_rules(h));
    static const char *const uris[] = {"/", "/old", "/old/a b", "/m/42", "/x%3Fy"};
    for (size_t i = 0; i < sizeof(uris) / sizeof(uris[0]); i++) {
        char url[256];
        int status;
        if (htaccess_redirect(h, uris[i], &status, url, sizeof(url)) && strlen(url) >= sizeof(url))
            abort(); /* the URL fits what it was given */
    }
    htaccess_free(h);
    char out[4096];
    size_t len;
    if (rewrite_decode_path((const char *)data, size, out, sizeof(out), &len) == 0 &&
        (len >= sizeof(out) || out[0] != '/'))
        abort(); /* a decoded path is a path, and fits */
    return 0;
}
