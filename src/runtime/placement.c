/* placement.c: read a placement file with libyaml's document API and turn it into a PwRoleMap,
 * with every error naming file:line:col, the key and what was expected. */
#include "pw_placement.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "pw_file.h"
#include "yaml_limits.h"

/* Every (key, value) pair of a mapping node. */
#define FOR_PAIRS(q, map)                                                                          \
    for (yaml_node_pair_t *q = (map)->data.mapping.pairs.start; q < (map)->data.mapping.pairs.top; \
         q++)

typedef struct Ctx {
    const char *path;
    yaml_document_t *doc;
    int world_size;
    PwErr *err;
} Ctx;

/* The parts of the file that can only be checked once the whole mapping is read. */
typedef struct Parsed {
    int seen[PW_ROLE_COUNT];
    yaml_node_t *models; /* roles.reward.models, checked after the ranks */
    yaml_node_t *roles_key;
} Parsed;

static PwMark mark_of(const yaml_node_t *n)
{
    return (PwMark){(int)n->start_mark.line + 1, (int)n->start_mark.column + 1};
}

#if defined(__GNUC__)
__attribute__((format(printf, 4, 5)))
#endif
/* An error at node n (NULL: the start of the file) about `key` (NULL: none). */
static int fail(Ctx *c, const yaml_node_t *n, const char *key, const char *fmt, ...)
{
    char what[700];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    PwMark m = n ? mark_of(n) : (PwMark){1, 1};
    /* Problems of the file as a whole (empty, not YAML, not a mapping) have no key to name. */
    if (!key) return pw_errf(c->err, "%s:%d:%d: %s", c->path, m.line, m.col, what);
    return pw_errf(c->err, "%s:%d:%d: key '%s': %s", c->path, m.line, m.col, key, what);
}

static yaml_node_t *node(Ctx *c, int index)
{
    return yaml_document_get_node(c->doc, index);
}

static const char *str(const yaml_node_t *n)
{
    return (const char *)n->data.scalar.value;
}

static const char *kind(const yaml_node_t *n)
{
    switch (n->type) {
    case YAML_SCALAR_NODE: return "a scalar";
    case YAML_SEQUENCE_NODE: return "a list";
    case YAML_MAPPING_NODE: return "a mapping";
    default: return "nothing";
    }
}

static int want_type(Ctx *c, const yaml_node_t *n, yaml_node_type_t t, const char *key,
                     const char *expected)
{
    if (n->type == t) return 0;
    if (n->type == YAML_SCALAR_NODE)
        return fail(c, n, key, "expected %s, found the scalar '%s'", expected, str(n));
    return fail(c, n, key, "expected %s, found %s", expected, kind(n));
}

/* Integers are plain scalars only: a quoted "3" is a string in YAML and stays one here. */
static int want_int(Ctx *c, const yaml_node_t *n, const char *key, long lo, long hi, long *out)
{
    if (want_type(c, n, YAML_SCALAR_NODE, key, "an integer")) return -1;
    const char *s = str(n);
    char *end = NULL;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE || !*s || *end || errno)
        return fail(c, n, key, "expected an integer, found '%s'", s);
    if (v < lo || v > hi)
        return fail(c, n, key, "expected an integer in %ld..%ld, found %ld", lo, hi, v);
    *out = v;
    return 0;
}

static int want_choice(Ctx *c, const yaml_node_t *n, const char *key, const char *const *choices,
                       int nchoices, const char *expected, int *out)
{
    if (want_type(c, n, YAML_SCALAR_NODE, key, expected)) return -1;
    for (int i = 0; i < nchoices; i++)
        if (!strcmp(str(n), choices[i])) {
            *out = i;
            return 0;
        }
    return fail(c, n, key, "expected %s, found '%s'", expected, str(n));
}

/* A name and where it stands, to find repeated names by sorting instead of comparing every
 * pair: a file of 50,000 keys took 15 s pair by pair. */
typedef struct Named {
    const char *name;
    int pos;
} Named;

static int cmp_named(const void *a, const void *b)
{
    const Named *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    return c ? c : (x->pos > y->pos) - (x->pos < y->pos);
}

/* Of the names given twice, the one whose second sighting comes first in the file, as a reader
 * going down the file meets it: 1 with the positions of both sightings, 0 when all differ.
 * Sorts `v` in place. */
static int first_repeat(Named *v, int n, int *first, int *second)
{
    qsort(v, (size_t)n, sizeof *v, cmp_named);
    int found = 0;
    for (int i = 1; i < n; i++)
        if (!strcmp(v[i - 1].name, v[i].name) && (!found || v[i].pos < *second)) {
            /* equal names sort by position, so v[i - 1] is the sighting just before v[i] */
            *first = v[i - 1].pos;
            *second = v[i].pos;
            found = 1;
        }
    return found;
}

/* Keys are scalars and appear once: libyaml keeps a repeated key, and the second one would
 * silently win in a hand-written loop, so say so instead. */
static int check_keys(Ctx *c, const yaml_node_t *map, const char *where)
{
    yaml_node_pair_t *pairs = map->data.mapping.pairs.start;
    int n = (int)(map->data.mapping.pairs.top - pairs);
    FOR_PAIRS (p, map) {
        yaml_node_t *k = node(c, p->key);
        if (k->type != YAML_SCALAR_NODE)
            return fail(c, k, where, "expected a key name, found %s", kind(k));
    }
    if (n < 2) return 0;
    Named *v = malloc(sizeof *v * (size_t)n);
    if (!v) return pw_errf(c->err, "%s: out of memory", c->path);
    for (int i = 0; i < n; i++) v[i] = (Named){str(node(c, pairs[i].key)), i};
    int first = 0, second = 0, dup = first_repeat(v, n, &first, &second);
    free(v);
    if (!dup) return 0;
    yaml_node_t *k = node(c, pairs[second].key);
    return fail(c, k, where, "duplicate key '%s' (first at line %d)", str(k),
                mark_of(node(c, pairs[first].key)).line);
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* `ranks:` is an integer or a list of integers, each a world rank of this job, none twice. */
static int want_ranks(Ctx *c, const yaml_node_t *n, const char *key, int **out, int *count)
{
    int seq = n->type == YAML_SEQUENCE_NODE, cnt = 1;
    if (seq) {
        cnt = (int)(n->data.sequence.items.top - n->data.sequence.items.start);
    } else if (n->type != YAML_SCALAR_NODE || n->data.scalar.length == 0) {
        return fail(c, n, key, "expected a rank or a list of ranks like [0, 1], found %s",
                    n->type == YAML_SCALAR_NODE ? "an empty value" : kind(n));
    }
    if (cnt == 0)
        return fail(c, n, key, "the role has no rank; expected at least one rank in 0..%d",
                    c->world_size - 1);
    int *r = malloc(sizeof *r * (size_t)cnt);
    if (!r) return pw_errf(c->err, "%s: out of memory", c->path);
    for (int i = 0; i < cnt; i++) {
        const yaml_node_t *item = seq ? node(c, n->data.sequence.items.start[i]) : n;
        long v;
        if (want_type(c, item, YAML_SCALAR_NODE, key, "a rank (an integer)") ||
            want_int(c, item, key, -(1L << 30), 1L << 30, &v))
            goto bad;
        if (v < 0 || v >= c->world_size) {
            fail(c, item, key, "rank %ld is out of range for a job of %d ranks (expected 0..%d)", v,
                 c->world_size, c->world_size - 1);
            goto bad;
        }
        for (int j = 0; j < i; j++)
            if (r[j] == v) {
                fail(c, item, key, "rank %ld is listed twice; expected each rank once", v);
                goto bad;
            }
        r[i] = (int)v;
    }
    qsort(r, (size_t)cnt, sizeof *r, cmp_int);
    *out = r;
    *count = cnt;
    return 0;
bad:
    free(r);
    return -1;
}

const char *const pw_device_names[] = {"cpu", "cuda", NULL};
static const char *const bind_names[] = {"none", "core", "numa"};

const char *pw_bind_name(PwBind b)
{
    return (b >= 0 && b < (int)PW_ARRAY_LEN(bind_names)) ? bind_names[b] : "?";
}

static int parse_role(Ctx *c, PwPlacement *p, Parsed *ps, PwRole r, yaml_node_t *name,
                      yaml_node_t *val)
{
    char where[64], key[96];
    snprintf(where, sizeof where, "roles.%s", pw_role_name(r));
    if (want_type(c, val, YAML_MAPPING_NODE, where, "a mapping like { ranks: [0] }") ||
        check_keys(c, val, where))
        return -1;
    PwRoleRanks *rr = &p->map.role[r];
    p->device_mark[r] = mark_of(name);
    int have_ranks = 0;
    FOR_PAIRS (q, val) {
        yaml_node_t *k = node(c, q->key), *v = node(c, q->value);
        snprintf(key, sizeof key, "%s.%s", where, str(k));
        if (!strcmp(str(k), "ranks")) {
            if (want_ranks(c, v, key, &rr->ranks, &rr->nranks)) return -1;
            p->ranks_mark[r] = mark_of(v);
            have_ranks = 1;
        } else if (!strcmp(str(k), "device")) {
            int d = 0;
            if (want_choice(c, v, key, pw_device_names, 2, "cpu or cuda", &d)) return -1;
            rr->device = (PwDevice)d;
            p->device_mark[r] = mark_of(v);
        } else if (!strcmp(str(k), "threads")) {
            long t;
            if (want_int(c, v, key, 1, 4096, &t)) return -1;
            rr->threads = (int)t;
        } else if (!strcmp(str(k), "models") && r == PW_ROLE_REWARD) {
            ps->models = v;
        } else {
            return fail(c, k, key, "unknown key; expected ranks, device, threads%s",
                        r == PW_ROLE_REWARD ? " or models" : " (models is for role reward only)");
        }
    }
    if (!have_ranks) return fail(c, name, where, "missing key 'ranks'; expected e.g. ranks: [0]");
    return 0;
}

/* One ensemble entry: "name" or { name: n, ranks: [...] }; explicit ranks must be reward ranks. */
static int parse_member(Ctx *c, PwPlacement *p, yaml_node_t *it, int i, int *explicit_ranks,
                        yaml_node_t **name_node)
{
    PwRewardModel *ms = p->map.reward_models;
    yaml_node_t *name = it, *ranks = NULL;
    char ik[64], nk[80], rk[80];
    snprintf(ik, sizeof ik, "roles.reward.models[%d]", i);
    if (it->type == YAML_MAPPING_NODE) {
        if (check_keys(c, it, ik)) return -1;
        name = NULL;
        FOR_PAIRS (q, it) {
            yaml_node_t *k = node(c, q->key);
            if (!strcmp(str(k), "name"))
                name = node(c, q->value);
            else if (!strcmp(str(k), "ranks"))
                ranks = node(c, q->value);
            else
                return fail(c, k, ik, "unknown key '%s'; expected name or ranks", str(k));
        }
        if (!name) return fail(c, it, ik, "missing key 'name'; expected a model name or path");
    }
    snprintf(nk, sizeof nk, "%s%s", ik, name == it ? "" : ".name");
    if (want_type(c, name, YAML_SCALAR_NODE, nk, "a model name or path")) return -1;
    if (!name->data.scalar.length)
        return fail(c, name, nk, "expected a model name or path, found an empty value");
    *name_node = name;
    ms[i].name = strdup(str(name));
    if (!ms[i].name) return pw_errf(c->err, "%s: out of memory", c->path);
    *explicit_ranks = ranks != NULL;
    if (!ranks) return 0;
    snprintf(rk, sizeof rk, "%s.ranks", ik);
    if (want_ranks(c, ranks, rk, &ms[i].ranks, &ms[i].nranks)) return -1;
    const PwRoleRanks *rw = &p->map.role[PW_ROLE_REWARD];
    for (int j = 0; j < ms[i].nranks; j++)
        if (!bsearch(&ms[i].ranks[j], rw->ranks, (size_t)rw->nranks, sizeof(int), cmp_int))
            return fail(c, ranks, rk,
                        "rank %d does not hold role reward; expected one of the reward ranks",
                        ms[i].ranks[j]);
    return 0;
}

/* The default assignment of M members to R reward ranks: member i on reward rank i mod R, and
 * when there are fewer members than ranks the spare ranks serve copies: rank j serves member
 * j mod M. Either way every reward rank serves something. Written as strides, not as a test of
 * every (member, rank) pair: both counts can run to the thousands. */
static int assign_members(Ctx *c, PwPlacement *p)
{
    PwRoleRanks *rw = &p->map.role[PW_ROLE_REWARD];
    int m = p->map.n_reward_models, r = rw->nranks;
    for (int i = 0; i < m; i++) {
        PwRewardModel *mi = &p->map.reward_models[i];
        int first = m >= r ? i % r : i, step = m >= r ? r : m;
        int count = m >= r ? 1 : (r - 1 - first) / step + 1;
        mi->ranks = malloc(sizeof(int) * (size_t)count);
        if (!mi->ranks) return pw_errf(c->err, "%s: out of memory", c->path);
        for (int j = first; mi->nranks < count; j += step) mi->ranks[mi->nranks++] = rw->ranks[j];
    }
    return 0;
}

static int parse_models(Ctx *c, PwPlacement *p, const yaml_node_t *n)
{
    const char *key = "roles.reward.models";
    if (want_type(c, n, YAML_SEQUENCE_NODE, key, "a list of model names or paths")) return -1;
    yaml_node_item_t *items = n->data.sequence.items.start;
    int m = (int)(n->data.sequence.items.top - items);
    if (m == 0) return fail(c, n, key, "the list is empty; expected at least one model name");
    p->map.reward_models = calloc((size_t)m, sizeof *p->map.reward_models);
    yaml_node_t **names = malloc(sizeof *names * (size_t)m);
    Named *v = malloc(sizeof *v * (size_t)m);
    int rc = 0;
    if (!p->map.reward_models || !names || !v) rc = pw_errf(c->err, "%s: out of memory", c->path);
    if (p->map.reward_models) p->map.n_reward_models = m;
    int nexplicit = 0;
    for (int i = 0; i < m && !rc; i++) {
        int e = 0;
        rc = parse_member(c, p, node(c, items[i]), i, &e, &names[i]);
        nexplicit += e;
    }
    int first = 0, second = 0;
    for (int i = 0; i < m && !rc; i++) v[i] = (Named){p->map.reward_models[i].name, i};
    if (!rc && first_repeat(v, m, &first, &second)) {
        char nk[80];
        snprintf(nk, sizeof nk, "%s[%d]%s", key, second,
                 names[second] == node(c, items[second]) ? "" : ".name");
        rc = fail(c, names[second], nk,
                  "model '%s' is listed twice (first as member %d); expected each member once",
                  str(names[second]), first);
    }
    free(names);
    free(v);
    if (rc) return rc;
    if (nexplicit && nexplicit != m)
        return fail(c, n, key,
                    "some members give ranks and some do not; "
                    "expected ranks on every member or on none");
    if (!nexplicit) return assign_members(c, p);
    const PwRoleRanks *rw = &p->map.role[PW_ROLE_REWARD];
    char *served = calloc((size_t)c->world_size, 1);
    if (!served) return pw_errf(c->err, "%s: out of memory", c->path);
    for (int i = 0; i < m; i++)
        for (int k = 0; k < p->map.reward_models[i].nranks; k++)
            served[p->map.reward_models[i].ranks[k]] = 1;
    for (int j = 0; j < rw->nranks && !rc; j++)
        if (!served[rw->ranks[j]])
            rc = fail(c, n, key,
                      "reward rank %d serves no model; expected every reward rank in some "
                      "member's ranks",
                      rw->ranks[j]);
    free(served);
    return rc;
}

static int parse_roles(Ctx *c, PwPlacement *p, Parsed *ps, yaml_node_t *n)
{
    if (want_type(c, n, YAML_MAPPING_NODE, "roles",
                  "a mapping of role names to { ranks: [...] }") ||
        check_keys(c, n, "roles"))
        return -1;
    FOR_PAIRS (q, n) {
        yaml_node_t *k = node(c, q->key);
        int r = -1;
        for (int i = 0; i < PW_ROLE_COUNT; i++)
            if (!strcmp(str(k), pw_role_name((PwRole)i))) r = i;
        char key[96];
        snprintf(key, sizeof key, "roles.%s", str(k));
        if (r < 0)
            return fail(c, k, key,
                        "unknown role '%s'; expected actor, reference, critic, reward or generator",
                        str(k));
        ps->seen[r] = 1;
        if (parse_role(c, p, ps, (PwRole)r, k, node(c, q->value))) return -1;
    }
    /* The critic is optional here: whether a run needs one is the configuration's algorithm,
     * checked when both are known (src/roles/run.c). */
    static const PwRole required[] = {PW_ROLE_ACTOR, PW_ROLE_REWARD};
    for (size_t i = 0; i < PW_ARRAY_LEN(required); i++)
        if (!ps->seen[required[i]])
            return fail(c, ps->roles_key, "roles",
                        "missing required role '%s'; expected actor and reward (critic, reference "
                        "and generator are optional)",
                        pw_role_name(required[i]));
    if (ps->models && parse_models(c, p, ps->models)) return -1;
    /* An idle rank would hold a process and cores for nothing and wait forever at the first
     * collective of a role it does not hold: launch fewer ranks instead. */
    for (int rank = 0; rank < c->world_size; rank++) {
        int held = 0;
        for (int r = 0; r < PW_ROLE_COUNT; r++)
            held |= pw_role_index(&p->map, (PwRole)r, rank) >= 0;
        if (!held)
            return fail(c, ps->roles_key, "roles",
                        "rank %d holds no role; expected every rank 0..%d of the job in some "
                        "role's ranks (idle ranks are not allowed)",
                        rank, c->world_size - 1);
    }
    return 0;
}

static int parse_top(Ctx *c, PwPlacement *p, yaml_node_t *root)
{
    if (!root)
        return fail(c, NULL, NULL, "the file is empty; expected a mapping with a 'roles:' key");
    if (want_type(c, root, YAML_MAPPING_NODE, NULL, "a mapping with a 'roles:' key") ||
        check_keys(c, root, NULL))
        return -1;
    Parsed ps = {0};
    yaml_node_t *roles = NULL;
    p->bind = PW_BIND_NUMA;
    p->bind_mark = mark_of(root);
    FOR_PAIRS (q, root) {
        yaml_node_t *k = node(c, q->key), *v = node(c, q->value);
        const char *name = str(k);
        if (!strcmp(name, "roles")) {
            roles = v;
            ps.roles_key = k;
        } else if (!strcmp(name, "bind")) {
            int b = 0;
            if (want_choice(c, v, "bind", bind_names, 3, "core, numa or none", &b)) return -1;
            p->bind = (PwBind)b;
            p->bind_mark = mark_of(v);
        } else if (!strcmp(name, "version")) {
            long ver;
            if (want_int(c, v, "version", 1, 1, &ver)) return -1;
        } else if (!strcmp(name, "world_size")) {
            long ws;
            if (want_int(c, v, "world_size", 1, PW_MAX_RANKS, &ws)) return -1;
            if (ws != c->world_size)
                return fail(c, v, "world_size",
                            "the file is written for %ld ranks but the job has %d; expected a job "
                            "of %ld ranks "
                            "(mpirun -np %ld, or --world-size %ld with --dry-run)",
                            ws, c->world_size, ws, ws, ws);
        } else {
            return fail(c, k, name, "unknown key; expected roles, bind, version or world_size");
        }
    }
    if (!roles)
        return fail(c, root, "roles",
                    "missing key 'roles'; expected a mapping of role names to { ranks: [...] }");
    return parse_roles(c, p, &ps, roles);
}

int pw_placement_load(const char *path, int world_size, PwPlacement *p, PwErr *err)
{
    memset(p, 0, sizeof *p);
    snprintf(p->path, sizeof p->path, "%s", path);
    if (world_size < 1 || world_size > PW_MAX_RANKS)
        return pw_errf(err, "%s: a job of %d ranks; expected 1..%d ranks", path, world_size,
                       PW_MAX_RANKS);
    size_t len = 0;
    PwErr e;
    char *text = pw_file_read(path, PW_FILE_MAX_YAML, &len, &e);
    if (!text) return pw_errf(err, "cannot read the placement file: %s", e.msg);
    /* One pass over the events first: the bounds, and a tag, which would be ignored below (the
     * document gives `!!str 2` the tag of a plain 2), so it is refused. A text that is not YAML
     * is left to the load, which says where. */
    PwYamlTag tag;
    int scan = pw_yaml_scan(text, len, path, &tag, err);
    if (scan > 0)
        pw_errf(err, "%s:%zu:%zu: key '%s': YAML tag '%s' is not supported; write the value "
                "without it", path, tag.line, tag.col, tag.key[0] ? tag.key : "(none)", tag.tag);
    if (scan) {
        free(text);
        return -1;
    }
    yaml_parser_t parser;
    yaml_document_t doc;
    Ctx c = {path, &doc, world_size, err};
    int rc = -1;
    if (!yaml_parser_initialize(&parser)) {
        free(text);
        return pw_errf(err, "%s: out of memory", path);
    }
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    if (!yaml_parser_load(&parser, &doc)) {
        /* Not YAML at all: libyaml says what it expected and where it stopped. */
        pw_errf(err, "%s:%d:%d: not valid YAML: %s%s%s", path, (int)parser.problem_mark.line + 1,
                (int)parser.problem_mark.column + 1,
                parser.problem ? parser.problem : "parse error", parser.context ? " " : "",
                parser.context ? parser.context : "");
        goto out_parser;
    }
    rc = parse_top(&c, p, yaml_document_get_root_node(&doc));
    /* The map is for this job: a file without `world_size` fits any size, but whoever builds a
     * world from the map needs the size it was checked against. */
    if (rc == 0) p->map.world_size = world_size;
    if (rc == 0) {
        /* A second document would be ignored silently; one placement per file. */
        yaml_document_t extra;
        if (!yaml_parser_load(&parser, &extra)) {
            rc = pw_errf(err, "%s:%d:%d: not valid YAML: %s", path,
                         (int)parser.problem_mark.line + 1, (int)parser.problem_mark.column + 1,
                         parser.problem ? parser.problem : "parse error");
        } else {
            yaml_node_t *r2 = yaml_document_get_root_node(&extra);
            if (r2)
                rc = fail(&c, r2, NULL, "a second YAML document; expected one placement per file");
            yaml_document_delete(&extra);
        }
    }
    yaml_document_delete(&doc);
out_parser:
    yaml_parser_delete(&parser);
    free(text);
    if (rc) pw_placement_free(p);
    return rc;
}

void pw_placement_free(PwPlacement *p)
{
    for (int r = 0; r < PW_ROLE_COUNT; r++) free(p->map.role[r].ranks);
    for (int i = 0; i < p->map.n_reward_models; i++) {
        free(p->map.reward_models[i].name);
        free(p->map.reward_models[i].ranks);
    }
    free(p->map.reward_models);
    char path[sizeof p->path];
    memcpy(path, p->path, sizeof path);
    memset(p, 0, sizeof *p);
    memcpy(p->path, path, sizeof path);
}

PwDevice pw_placement_rank_device(const PwPlacement *p, int rank)
{
    for (int r = 0; r < PW_ROLE_COUNT; r++)
        if (p->map.role[r].device == PW_DEVICE_CUDA && pw_role_index(&p->map, (PwRole)r, rank) >= 0)
            return PW_DEVICE_CUDA;
    return PW_DEVICE_CPU;
}

int pw_placement_rank_threads(const PwPlacement *p, int rank)
{
    int t = 0;
    for (int r = 0; r < PW_ROLE_COUNT; r++)
        if (pw_role_index(&p->map, (PwRole)r, rank) >= 0 && p->map.role[r].threads > t)
            t = p->map.role[r].threads;
    return t;
}

void pw_placement_rank_roles(const PwPlacement *p, int rank, char *buf, size_t n)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int r = 0; r < PW_ROLE_COUNT; r++)
        if (pw_role_index(&p->map, (PwRole)r, rank) >= 0 && used < n)
            used += (size_t)snprintf(buf + used, n - used, "%s%s", used ? "+" : "",
                                     pw_role_name((PwRole)r));
    if (!used) snprintf(buf, n, "-");
}

void pw_placement_rank_models(const PwPlacement *p, int rank, char *buf, size_t n)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < p->map.n_reward_models; i++)
        for (int k = 0; k < p->map.reward_models[i].nranks; k++)
            if (p->map.reward_models[i].ranks[k] == rank && used < n)
                used += (size_t)snprintf(buf + used, n - used, "%s%s", used ? "," : "",
                                         p->map.reward_models[i].name);
    if (!used) snprintf(buf, n, "-");
}

int pw_placement_check_gpu(const PwPlacement *p, int rank, int ngpus, const char *why_none,
                           const char *host, PwErr *err)
{
    if (ngpus > 0) return 0;
    for (int r = 0; r < PW_ROLE_COUNT; r++)
        if (p->map.role[r].device == PW_DEVICE_CUDA && pw_role_index(&p->map, (PwRole)r, rank) >= 0)
            return pw_errf(
                err,
                "%s:%d:%d: key 'roles.%s.device': device cuda but rank %d on host %s sees no GPU "
                "(%s); expected device: cpu",
                p->path, p->device_mark[r].line, p->device_mark[r].col, pw_role_name((PwRole)r),
                rank, host, why_none);
    return 0;
}

int pw_placement_check_cores(const PwPlacement *p, int local_size, int ncores, const char *host,
                             PwErr *err)
{
    if (p->bind != PW_BIND_CORE || local_size <= ncores) return 0;
    return pw_errf(
        err,
        "%s:%d:%d: key 'bind': bind core but host %s runs %d ranks on %d cores; expected at "
        "most one rank per core (use bind: numa or none to oversubscribe, or fewer ranks per node)",
        p->path, p->bind_mark.line, p->bind_mark.col, host, local_size, ncores);
}
