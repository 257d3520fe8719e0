#include "mercure_match.h"

#include <string.h>

/* t: the rest of the template, s: the rest of the topic. Backtracking is
 * bounded: at most MERCURE_MAX_VARS expressions, each trying each length. */
static int match(const char *t, const char *s)
{
    while (*t && *t != '{') {
        if (*t != *s)
            return 0;
        t++;
        s++;
    }
    if (*t == '\0')
        return *s == '\0';
    const char *close = strchr(t, '}');
    if (close == NULL)
        return 0;
    int reserved = t[1] == '+' || t[1] == '#';
    const char *rest = close + 1;
    for (size_t k = 1; s[k - 1]; k++) {
        char c = s[k - 1];
        if (!reserved && (c == '/' || c == '?' || c == '#'))
            break;
        if (match(rest, s + k))
            return 1;
    }
    return 0;
}

int mercure_match(const char *selector, const char *topic)
{
    if (strcmp(selector, "*") == 0 || strcmp(selector, topic) == 0)
        return 1;
    int vars = 0;
    for (const char *p = selector; (p = strchr(p, '{')) != NULL; p++)
        if (++vars > MERCURE_MAX_VARS)
            return 0;
    return vars > 0 && match(selector, topic);
}
