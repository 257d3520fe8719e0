/*
 * vc_log: one log line per call, syslog levels, text or JSON lines.
 *
 * Every line carries the daemon (set once), a component (per call) and, when
 * one is set, the id of the request or peer being handled.
 * Messages read "<call>() failed while <doing> \"%s\"".
 */
#ifndef VC_LOG_H
#define VC_LOG_H

#include <stdarg.h>

enum {
    VC_LOG_CRIT = 2,
    VC_LOG_ERR = 3,
    VC_LOG_WARN = 4,
    VC_LOG_NOTICE = 5,
    VC_LOG_INFO = 6,
    VC_LOG_DEBUG = 7,
};

/* daemon is copied. fd is where lines go (usually 2). */
void vc_log_init(const char *daemon, int level, int json, int fd);
void vc_log_set_level(int level);
int vc_log_get_level(void);
void vc_log_set_json(int json);
/* "debug".."crit" -> level; -1 if unknown. */
int vc_log_level_parse(const char *name);
const char *vc_log_level_name(int level);

/* The id of what is being handled now ("r42", a peer); NULL clears it. The
 * string is borrowed until the next call. */
void vc_log_set_context(const char *id);

void vc_logf(int level, const char *component, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void vc_logv(int level, const char *component, const char *fmt, va_list ap) __attribute__((format(printf, 3, 0)));

#define vc_log(level, component, ...)                                                                                  \
    do {                                                                                                               \
        if ((level) <= vc_log_get_level())                                                                             \
            vc_logf((level), (component), __VA_ARGS__);                                                                \
    } while (0)

#endif
