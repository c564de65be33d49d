/* bpe_map.c: open-addressing hash maps for the BPE tokenizer. Written here rather than taken from
 * Debian: GLib's GHashTable would pull GLib into every binary for two maps, and the small C ones
 * (uthash, khash) are macro headers that would still need the same glue; these are ~120 lines. */
#include <stdlib.h>
#include <string.h>

#include "bpe_map.h"

struct PwStrSlot {
    uint64_t hash; /* 0 marks an empty slot (hashes are forced odd) */
    uint32_t off, len;
    int val;
};

struct PwPairSlot {
    uint64_t key; /* UINT64_MAX marks an empty slot: ids are >= 0, so no pair packs to it */
    int rank, id;
};

/* 8 bytes at a time with a multiply-xorshift mix: pieces are short, so speed over quality. */
static uint64_t hash_bytes(const char *s, size_t len)
{
    uint64_t h = 0x9e3779b97f4a7c15ull ^ len;
    while (len >= 8) {
        uint64_t w;
        memcpy(&w, s, 8);
        h = (h ^ w) * 0xff51afd7ed558ccdull;
        h ^= h >> 32;
        s += 8;
        len -= 8;
    }
    uint64_t w = 0;
    if (len) memcpy(&w, s, len); /* an empty key may be NULL, which memcpy may not take */
    h = (h ^ w) * 0xc4ceb9fe1a85ec53ull;
    h ^= h >> 29;
    return h | 1;
}

static uint64_t mix64(uint64_t k)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    return k;
}

/* The slot's key is key (of the slot's length). An empty key (a vocabulary may hold "") is
 * compared without touching the arena, which is NULL until a non-empty key arrives. */
static int same_bytes(const PwStrMap *m, const struct PwStrSlot *s, const char *key)
{
    return !s->len || !memcmp(m->arena + s->off, key, s->len);
}

int pw_strmap_get(const PwStrMap *m, const char *key, size_t len, int *val)
{
    if (!m->cap) return 0;
    uint64_t h = hash_bytes(key, len);
    for (size_t i = h & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
        const struct PwStrSlot *s = &m->slots[i];
        if (!s->hash) return 0;
        if (s->hash == h && s->len == len && same_bytes(m, s, key)) {
            *val = s->val;
            return 1;
        }
    }
}

static int strmap_grow(PwStrMap *m)
{
    size_t cap = m->cap ? m->cap * 2 : 64;
    struct PwStrSlot *slots = calloc(cap, sizeof *slots);
    if (!slots) return -1;
    for (size_t j = 0; j < m->cap; j++) {
        if (!m->slots[j].hash) continue;
        size_t i = m->slots[j].hash & (cap - 1);
        while (slots[i].hash) i = (i + 1) & (cap - 1);
        slots[i] = m->slots[j];
    }
    free(m->slots);
    m->slots = slots;
    m->cap = cap;
    return 0;
}

int pw_strmap_put(PwStrMap *m, const char *key, size_t len, int val)
{
    if ((m->n + 1) * 2 > m->cap && strmap_grow(m)) return -1;
    uint64_t h = hash_bytes(key, len);
    size_t i = h & (m->cap - 1);
    for (; m->slots[i].hash; i = (i + 1) & (m->cap - 1)) {
        struct PwStrSlot *s = &m->slots[i];
        if (s->hash == h && s->len == len && same_bytes(m, s, key)) {
            s->val = val;
            return 0;
        }
    }
    if (m->arena_n + len > m->arena_cap) {
        size_t cap = m->arena_cap ? m->arena_cap : 4096;
        while (cap < m->arena_n + len) cap *= 2;
        char *a = realloc(m->arena, cap);
        if (!a) return -1;
        m->arena = a;
        m->arena_cap = cap;
    }
    if (len) memcpy(m->arena + m->arena_n, key, len);
    m->slots[i] = (struct PwStrSlot){h, (uint32_t)m->arena_n, (uint32_t)len, val};
    m->arena_n += len;
    m->n++;
    return 0;
}

void pw_strmap_clear(PwStrMap *m)
{
    if (m->cap) memset(m->slots, 0, m->cap * sizeof *m->slots);
    m->n = 0;
    m->arena_n = 0;
}

void pw_strmap_free(PwStrMap *m)
{
    free(m->slots);
    free(m->arena);
    memset(m, 0, sizeof *m);
}

static uint64_t pair_key(int a, int b) { return (uint64_t)(uint32_t)a << 32 | (uint32_t)b; }

int pw_pairmap_get(const PwPairMap *m, int a, int b, int *rank, int *id)
{
    if (!m->cap) return 0;
    uint64_t k = pair_key(a, b);
    for (size_t i = mix64(k) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
        const struct PwPairSlot *s = &m->slots[i];
        if (s->key == k) {
            *rank = s->rank;
            *id = s->id;
            return 1;
        }
        if (s->key == UINT64_MAX) return 0;
    }
}

int pw_pairmap_put(PwPairMap *m, int a, int b, int rank, int id)
{
    if ((m->n + 1) * 2 > m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 64;
        struct PwPairSlot *slots = malloc(cap * sizeof *slots);
        if (!slots) return -1;
        for (size_t i = 0; i < cap; i++) slots[i].key = UINT64_MAX;
        for (size_t j = 0; j < m->cap; j++) {
            if (m->slots[j].key == UINT64_MAX) continue;
            size_t i = mix64(m->slots[j].key) & (cap - 1);
            while (slots[i].key != UINT64_MAX) i = (i + 1) & (cap - 1);
            slots[i] = m->slots[j];
        }
        free(m->slots);
        m->slots = slots;
        m->cap = cap;
    }
    uint64_t k = pair_key(a, b);
    size_t i = mix64(k) & (m->cap - 1);
    while (m->slots[i].key != UINT64_MAX && m->slots[i].key != k) i = (i + 1) & (m->cap - 1);
    if (m->slots[i].key == UINT64_MAX) m->n++;
    m->slots[i] = (struct PwPairSlot){k, rank, id};
    return 0;
}

void pw_pairmap_free(PwPairMap *m)
{
    free(m->slots);
    memset(m, 0, sizeof *m);
}
