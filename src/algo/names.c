/* names.c: the one lookup behind every "config string <-> enum" conversion of this layer, so
 * the parsers agree on matching rules (case-insensitive, whole word) and on error messages. */
#include <ctype.h>
#include <string.h>

#include "pw_algo.h"

int pw_name_lookup(const char *key, const char *name, const char *const *names, int count,
                   PwErr *err)
{
    for (int i = 0; name && i < count; i++) {
        const char *a = name, *b = names[i];
        while (*a && *b && tolower((unsigned char)*a) == tolower((unsigned char)*b)) a++, b++;
        if (*a == '\0' && *b == '\0') return i;
    }
    char valid[256] = "";
    for (int i = 0; i < count; i++) {
        size_t len = strlen(valid);
        snprintf(valid + len, sizeof valid - len, "%s%s", i ? ", " : "", names[i]);
    }
    pw_errf(err, "%s: '%s' is not one of %s", key, name ? name : "(null)", valid);
    return -1;
}

const char *pw_name_of(const char *const *names, int count, int i)
{
    return (i >= 0 && i < count) ? names[i] : "?";
}
