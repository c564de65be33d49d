/* yaml_limits.c: a first pass over a YAML text with libyaml's event parser, counting nodes,
 * nesting, anchors and aliases, so that no text makes the document loader slow or large. */
#include "yaml_limits.h"

#include <yaml.h>

static int over(PwErr *err, const char *label, const yaml_event_t *ev, const char *what, int max)
{
    return pw_errf(err, "%s:%zu:%zu: more than %d %s; a placement or configuration file may have "
                   "at most %d", label, ev->start_mark.line + 1, ev->start_mark.column + 1, max,
                   what, max);
}

int pw_yaml_check_limits(const char *text, size_t len, const char *label, PwErr *err)
{
    yaml_parser_t ps;
    if (!yaml_parser_initialize(&ps)) return pw_errf(err, "%s: out of memory", label);
    yaml_parser_set_input_string(&ps, (const unsigned char *)text, len);
    long nodes = 0, depth = 0, anchors = 0, aliases = 0;
    int rc = 0;
    /* Events arrive as the scanner reads, so a bound passed early stops the reading early. */
    for (int done = 0; !done && !rc;) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&ps, &ev)) break;
        const yaml_char_t *anchor = NULL;
        switch (ev.type) {
        case YAML_SCALAR_EVENT: anchor = ev.data.scalar.anchor; nodes++; break;
        case YAML_SEQUENCE_START_EVENT: anchor = ev.data.sequence_start.anchor; nodes++; depth++;
            break;
        case YAML_MAPPING_START_EVENT: anchor = ev.data.mapping_start.anchor; nodes++; depth++;
            break;
        case YAML_SEQUENCE_END_EVENT:
        case YAML_MAPPING_END_EVENT: depth--; break;
        case YAML_ALIAS_EVENT: aliases++; nodes++; break;
        case YAML_STREAM_END_EVENT: done = 1; break;
        default: break;
        }
        anchors += anchor != NULL;
        if (nodes > PW_YAML_MAX_NODES)
            rc = over(err, label, &ev, "YAML nodes (values, lists and mappings)",
                      PW_YAML_MAX_NODES);
        else if (depth > PW_YAML_MAX_DEPTH)
            rc = over(err, label, &ev, "levels of nesting", PW_YAML_MAX_DEPTH);
        else if (anchors > PW_YAML_MAX_ANCHORS)
            rc = over(err, label, &ev, "YAML anchors (&name)", PW_YAML_MAX_ANCHORS);
        else if (aliases > PW_YAML_MAX_ALIASES)
            rc = over(err, label, &ev, "YAML aliases (*name)", PW_YAML_MAX_ALIASES);
        yaml_event_delete(&ev);
    }
    yaml_parser_delete(&ps);
    return rc;
}
