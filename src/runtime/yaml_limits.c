/* yaml_limits.c: a first pass over a YAML text with libyaml's event parser, counting nodes,
 * nesting, anchors and aliases, so that no text makes the document loader slow or large, and
 * finding the first tag with where it is and the key it stands under, so that a tag is refused
 * rather than ignored. */
#include "yaml_limits.h"

#include <stdio.h>
#include <string.h>
#include <yaml.h>

static int over(PwErr *err, const char *label, const yaml_event_t *ev, const char *what, int max)
{
    return pw_errf(err, "%s:%zu:%zu: more than %d %s; a placement or configuration file may have "
                   "at most %d", label, ev->start_mark.line + 1, ev->start_mark.column + 1, max,
                   what, max);
}

/* One open mapping or list: for a mapping its current key and whether a key comes next; for a
 * list the index of the next item. */
typedef struct Level {
    int map, want_key, index;
    char key[64];
} Level;

/* The dotted path of the open levels: "roles.actor.threads", "model.reward[1]". */
static void path_of(const Level *lv, int depth, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < depth && used < len; i++) {
        int w = lv[i].map ? (lv[i].want_key ? 0 : snprintf(buf + used, len - used, "%s%s",
                                                           used ? "." : "", lv[i].key))
                          : snprintf(buf + used, len - used, "[%d]", lv[i].index);
        if (w > 0) used += (size_t)w;
    }
}

/* After a value (a scalar, or a whole mapping or list) at the level below depth. */
static void value_done(Level *lv, int depth)
{
    if (depth == 0) return;
    if (lv[depth - 1].map) lv[depth - 1].want_key = 1;
    else lv[depth - 1].index++;
}

/* A scalar or alias where its level wants a key is that key; else it is a value. */
static void scalar_seen(Level *lv, int depth, const char *key)
{
    if (depth > 0 && lv[depth - 1].map && lv[depth - 1].want_key) {
        snprintf(lv[depth - 1].key, sizeof lv[depth - 1].key, "%s", key);
        lv[depth - 1].want_key = 0;
    } else {
        value_done(lv, depth);
    }
}

static void fill_tag(PwYamlTag *t, const char *s, const Level *lv, int depth,
                     const yaml_event_t *ev)
{
    /* libyaml resolves !! to the standard prefix: spell it back as written */
    static const char std[] = "tag:yaml.org,2002:";
    if (!strncmp(s, std, sizeof std - 1))
        snprintf(t->tag, sizeof t->tag, "!!%s", s + sizeof std - 1);
    else
        snprintf(t->tag, sizeof t->tag, "%s", s);
    path_of(lv, depth, t->key, sizeof t->key);
    t->line = ev->start_mark.line + 1;
    t->col = ev->start_mark.column + 1;
}

int pw_yaml_scan(const char *text, size_t len, const char *label, PwYamlTag *tag, PwErr *err)
{
    yaml_parser_t ps;
    if (!yaml_parser_initialize(&ps)) return pw_errf(err, "%s: out of memory", label);
    yaml_parser_set_input_string(&ps, (const unsigned char *)text, len);
    /* depth never passes PW_YAML_MAX_DEPTH: the level past it is refused before it is kept */
    Level lv[PW_YAML_MAX_DEPTH];
    long nodes = 0, anchors = 0, aliases = 0;
    int depth = 0, rc = 0;
    /* Events arrive as the scanner reads, so a bound or a tag found early stops the reading
     * early. */
    for (int done = 0; !done && !rc;) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&ps, &ev)) break;
        const yaml_char_t *anchor = NULL, *t = NULL;
        int opens = 0;
        switch (ev.type) {
        case YAML_SCALAR_EVENT:
            anchor = ev.data.scalar.anchor;
            t = ev.data.scalar.tag;
            nodes++;
            break;
        case YAML_SEQUENCE_START_EVENT:
            anchor = ev.data.sequence_start.anchor;
            t = ev.data.sequence_start.tag;
            nodes++;
            opens = 1;
            break;
        case YAML_MAPPING_START_EVENT:
            anchor = ev.data.mapping_start.anchor;
            t = ev.data.mapping_start.tag;
            nodes++;
            opens = 1;
            break;
        case YAML_ALIAS_EVENT: aliases++; nodes++; break;
        case YAML_STREAM_END_EVENT: done = 1; break;
        default: break;
        }
        anchors += anchor != NULL;
        if (nodes > PW_YAML_MAX_NODES)
            rc = over(err, label, &ev, "YAML nodes (values, lists and mappings)",
                      PW_YAML_MAX_NODES);
        else if (opens && depth == PW_YAML_MAX_DEPTH)
            rc = over(err, label, &ev, "levels of nesting", PW_YAML_MAX_DEPTH);
        else if (anchors > PW_YAML_MAX_ANCHORS)
            rc = over(err, label, &ev, "YAML anchors (&name)", PW_YAML_MAX_ANCHORS);
        else if (aliases > PW_YAML_MAX_ALIASES)
            rc = over(err, label, &ev, "YAML aliases (*name)", PW_YAML_MAX_ALIASES);
        else if (t) {
            fill_tag(tag, (const char *)t, lv, depth, &ev);
            rc = 1;
        }
        if (!rc) {
            switch (ev.type) {
            case YAML_SCALAR_EVENT:
                scalar_seen(lv, depth, (const char *)ev.data.scalar.value);
                break;
            case YAML_ALIAS_EVENT: scalar_seen(lv, depth, "*"); break;
            case YAML_SEQUENCE_START_EVENT:
            case YAML_MAPPING_START_EVENT:
                if (depth > 0 && lv[depth - 1].map && lv[depth - 1].want_key) { /* a complex key */
                    snprintf(lv[depth - 1].key, sizeof lv[depth - 1].key, "?");
                    lv[depth - 1].want_key = 0;
                }
                lv[depth++] = (Level){ev.type == YAML_MAPPING_START_EVENT, 1, 0, ""};
                break;
            case YAML_SEQUENCE_END_EVENT:
            case YAML_MAPPING_END_EVENT:
                if (depth > 0) depth--;
                value_done(lv, depth);
                break;
            default: break;
            }
        }
        yaml_event_delete(&ev);
    }
    yaml_parser_delete(&ps);
    return rc;
}
