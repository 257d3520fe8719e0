/* libFuzzer: a .htaccess file as the front compiles it (htaccess.h), from
 * any bytes: nothing may crash or leak, a file it cannot fully read
 * closes its directory, and asking it about names never fails. */
#include "../daemons/vc-front/core/htaccess.h"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    htaccess_t *h = htaccess_compile("fuzz/.htaccess", (const char *)data, size);
    static const char *const names[] = {"index.php", "settings.ini", "a.log", ".", "x.bak", "1.bak", ""};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        (void)htaccess_file_verdict(h, names[i]);
    if (htaccess_unreadable(h) && htaccess_dir_verdict(h) != HTACCESS_DENIED)
        abort(); /* what it cannot read must close the directory */
    (void)htaccess_no_scripts(h);
    htaccess_free(h);
    return 0;
}
