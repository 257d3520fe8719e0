/*
 * Configuration versions made by hand for the unit tests: a source file's
 * text added to a version, as vc_config_gather would.
 */
#ifndef VC_TEST_CONFIG_SOURCE_H
#define VC_TEST_CONFIG_SOURCE_H

#include "vc_config.h"
#include "vc_util.h"

#include <string.h>

static inline void add(Vc__ConfigVersion *v, const char *name, const char *text, int site)
{
    Vc__ConfigSource *s = vc_malloc(sizeof(*s));
    vc__config_source__init(s);
    s->name = vc_strdup(name);
    s->text.data = (uint8_t *)vc_strdup(text);
    s->text.len = strlen(text);
    s->site = site;
    v->files = vc_realloc(v->files, (v->n_files + 1) * sizeof(*v->files));
    v->files[v->n_files++] = s;
}

#endif
