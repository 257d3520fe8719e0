/*
 * For running vc-php under AddressSanitizer only: PHP loads its extensions
 * (opcache.so and the others) with RTLD_DEEPBIND, which the sanitizer
 * runtime refuses (google/sanitizers#611). Preloaded into the sanitized
 * vc-php, this dlopen() drops that one flag and passes everything else on.
 */
#include <dlfcn.h>
#include <stddef.h>

void *dlopen(const char *file, int mode)
{
    static void *(*real)(const char *, int);
    if (real == NULL)
        real = (void *(*)(const char *, int))dlsym(RTLD_NEXT, "dlopen");
    return real(file, mode & ~RTLD_DEEPBIND);
}
