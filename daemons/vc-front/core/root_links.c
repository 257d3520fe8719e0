#include "root_links.h"

#include <limits.h>
#include <string.h>
#include <sys/stat.h>

int root_links_only(const char *root, size_t root_len, const char *path)
{
    size_t len = strlen(path);
    if (len <= root_len || len >= PATH_MAX || memcmp(path, root, root_len) != 0 || path[root_len] != '/')
        return 0;
    char prefix[PATH_MAX];
    memcpy(prefix, path, len + 1);
    int links = 0;
    /* Each component below the root, as the kernel reaches it: an lstat of
     * "root/a/b" sees b itself, after following a. */
    for (size_t i = root_len + 1; i <= len; i++) {
        if (path[i] != '/' && path[i] != '\0')
            continue;
        if (i == root_len + 1 || path[i - 1] == '/')
            continue; /* "//" */
        prefix[i] = '\0';
        struct stat st;
        if (lstat(prefix, &st) != 0)
            return 0;
        if (S_ISLNK(st.st_mode)) {
            if (st.st_uid != 0)
                return 0;
            links++;
        }
        prefix[i] = path[i];
    }
    return links > 0;
}
