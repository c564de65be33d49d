/* yaml_tags.h: the first YAML tag of a text, for the readers that refuse tags (the run
 * configuration and the placement file). Private to src/runtime. */
#ifndef PW_YAML_TAGS_H
#define PW_YAML_TAGS_H

#include <stddef.h>
#include <yaml.h>

typedef struct PwYamlTag {
    char tag[64];     /* as written, shortened: "!!str", "!local" */
    char key[160];    /* the dotted key it stands under: "roles.actor.threads", "" at the top */
    size_t line, col; /* 1-based */
} PwYamlTag;

/* Reads the events of the parser's input (set by the caller on a fresh parser) up to the first
 * tagged node. Returns 1 and fills *t for a tag, 0 when there is none, -1 when the text is not
 * YAML (the caller's own load then reports where). */
int pw_yaml_first_tag(yaml_parser_t *ps, PwYamlTag *t);

#endif
