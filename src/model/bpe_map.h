/* bpe_map.h: the two hash maps of the BPE tokenizer: byte strings to ids (vocabulary, piece
 * cache) and id pairs to merge rank and result. Internal to src/model. */
#ifndef PW_BPE_MAP_H
#define PW_BPE_MAP_H

#include <stddef.h>
#include <stdint.h>

/* Byte string -> int. Keys are copied into one arena, so the caller's buffer may go away. */
typedef struct PwStrMap {
    struct PwStrSlot *slots;
    size_t cap, n; /* cap: a power of two, or 0 before the first put */
    char *arena;
    size_t arena_n, arena_cap;
} PwStrMap;

/* Returns 1 and sets *val when key is present, 0 otherwise. */
int pw_strmap_get(const PwStrMap *m, const char *key, size_t len, int *val);
/* Inserts or overwrites; -1 when out of memory. */
int pw_strmap_put(PwStrMap *m, const char *key, size_t len, int val);
/* Forgets every key but keeps the memory, for the piece cache's periodic flush. */
void pw_strmap_clear(PwStrMap *m);
void pw_strmap_free(PwStrMap *m);

/* (left id, right id) -> (rank, merged id): the merge table looked up at every BPE step. */
typedef struct PwPairMap {
    struct PwPairSlot *slots;
    size_t cap, n;
} PwPairMap;

int pw_pairmap_get(const PwPairMap *m, int a, int b, int *rank, int *id);
int pw_pairmap_put(PwPairMap *m, int a, int b, int rank, int id);
void pw_pairmap_free(PwPairMap *m);

#endif
