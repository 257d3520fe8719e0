#include "vc_test.h"
#include "vc_util.h"

#include <sys/stat.h>

int main(void)
{
    CHECK(vc_parse_duration_ms("5m") == 300000);
    CHECK(vc_parse_duration_ms("30s") == 30000);
    CHECK(vc_parse_duration_ms("30") == 30000);
    CHECK(vc_parse_duration_ms("1500ms") == 1500);
    CHECK(vc_parse_duration_ms("2h") == 7200000);
    CHECK(vc_parse_duration_ms("1d") == 86400000);
    CHECK(vc_parse_duration_ms("0.5s") == 500);
    CHECK(vc_parse_duration_ms("") == -1);
    CHECK(vc_parse_duration_ms("5x") == -1);
    CHECK(vc_parse_duration_ms("-1s") == -1);
    CHECK(vc_parse_duration_ms("1e300d") == -1);
    CHECK(vc_parse_duration_ms(NULL) == -1);

    /* vc_grow: starts at first, doubles, jumps to what is needed, and
     * keeps what the array held. */
    int *arr = NULL;
    size_t cap = 0;
    VC_GROW(arr, cap, 1, 4);
    CHECK(cap == 4 && arr != NULL);
    for (int i = 0; i < 4; i++)
        arr[i] = i;
    int *same = arr;
    VC_GROW(arr, cap, 4, 4);
    CHECK(cap == 4 && arr == same);
    VC_GROW(arr, cap, 5, 4);
    CHECK(cap == 8 && arr[3] == 3);
    VC_GROW(arr, cap, 100, 4);
    CHECK(cap == 128 && arr[0] == 0);
    free(arr);

    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    vc_json_escape(f, "a\"b\\c\n\x01", 7);
    fclose(f);
    CHECK_STR(buf, "a\\\"b\\\\c\\n\\u0001");
    free(buf);

    char *dir = vc_test_tmpdir();
    char *deep = vc_asprintf("%s/a/b/c", dir);
    CHECK(vc_mkdirs(deep, 0700) == 0);
    CHECK(vc_mkdirs(deep, 0700) == 0); /* idempotent */
    struct stat st;
    CHECK(stat(deep, &st) == 0 && S_ISDIR(st.st_mode));
    vc_test_write(dir, "f.txt", "hello");
    char *p = vc_asprintf("%s/f.txt", dir);
    char *text = vc_read_file(p, &len);
    CHECK(text != NULL && len == 5);
    CHECK_STR(text, "hello");
    free(text);
    char *missing = vc_asprintf("%s/missing", dir);
    CHECK(vc_read_file(missing, &len) == NULL);
    CHECK_STR(vc_strerror(-VC_ERR_TIMEOUT), "timed out");
    CHECK_STR(vc_strerror(-2), "No such file or directory");
    free(missing);
    free(p);
    free(deep);
    vc_test_rmtree(dir);
    free(dir);
    return vc_test_result("vc_util");
}
