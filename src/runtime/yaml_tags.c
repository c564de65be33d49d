/* yaml_tags.c: finds the first YAML tag (`!!str 4`, `!local x`) of a text with where it is and
 * the key it stands under. libyaml's document loader gives `!!str 4` the tag of a plain `4`, so
 * only the events tell whether a tag was written; the readers refuse one rather than ignore it. */
#include "yaml_tags.h"

#include <stdio.h>
#include <string.h>

enum { MAX_DEPTH = 32 };

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

int pw_yaml_first_tag(yaml_parser_t *ps, PwYamlTag *t)
{
    Level lv[MAX_DEPTH];
    int depth = 0;
    for (;;) {
        yaml_event_t ev;
        if (!yaml_parser_parse(ps, &ev)) return -1;
        const yaml_char_t *tag = ev.type == YAML_SCALAR_EVENT ? ev.data.scalar.tag
                               : ev.type == YAML_SEQUENCE_START_EVENT ? ev.data.sequence_start.tag
                               : ev.type == YAML_MAPPING_START_EVENT ? ev.data.mapping_start.tag
                                                                     : NULL;
        if (tag) {
            /* libyaml resolves !! to the standard prefix: spell it back as written */
            static const char std[] = "tag:yaml.org,2002:";
            const char *s = (const char *)tag;
            if (!strncmp(s, std, sizeof std - 1))
                snprintf(t->tag, sizeof t->tag, "!!%s", s + sizeof std - 1);
            else
                snprintf(t->tag, sizeof t->tag, "%s", s);
            path_of(lv, depth, t->key, sizeof t->key);
            t->line = ev.start_mark.line + 1;
            t->col = ev.start_mark.column + 1;
            yaml_event_delete(&ev);
            return 1;
        }
        switch (ev.type) {
        case YAML_SCALAR_EVENT:
        case YAML_ALIAS_EVENT:
            if (depth > 0 && lv[depth - 1].map && lv[depth - 1].want_key) {
                snprintf(lv[depth - 1].key, sizeof lv[depth - 1].key, "%s",
                         ev.type == YAML_SCALAR_EVENT ? (const char *)ev.data.scalar.value : "*");
                lv[depth - 1].want_key = 0;
            } else {
                value_done(lv, depth);
            }
            break;
        case YAML_SEQUENCE_START_EVENT:
        case YAML_MAPPING_START_EVENT:
            if (depth > 0 && lv[depth - 1].map && lv[depth - 1].want_key) { /* a complex key */
                snprintf(lv[depth - 1].key, sizeof lv[depth - 1].key, "?");
                lv[depth - 1].want_key = 0;
            }
            if (depth == MAX_DEPTH) { /* deeper than any file of ours: stop looking */
                yaml_event_delete(&ev);
                return 0;
            }
            lv[depth++] = (Level){ev.type == YAML_MAPPING_START_EVENT, 1, 0, ""};
            break;
        case YAML_SEQUENCE_END_EVENT:
        case YAML_MAPPING_END_EVENT:
            depth--;
            value_done(lv, depth);
            break;
        case YAML_STREAM_END_EVENT:
            yaml_event_delete(&ev);
            return 0;
        default:
            break;
        }
        yaml_event_delete(&ev);
    }
}
