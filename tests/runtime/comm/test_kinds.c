/* test_kinds.c: the message kinds as docs/runtime.md lists them: one distinct printable name per
 * kind in enum order, the tag range the docs give, and headers of the previous version refused. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pw_message.h"
#include "pw_test.h"

/* The docs' text between the first `open` and the next `close` after `marker`, its line breaks
 * read as spaces (a list may be wrapped). */
static int docs_field(const char *doc, const char *marker, char open, char close, char *out,
                      size_t len)
{
    const char *p = strstr(doc, marker);
    if (!p) return -1;
    p = strchr(p + strlen(marker), open);
    const char *e = p ? strchr(p + 1, close) : NULL;
    if (!e) return -1;
    size_t n = 0;
    for (const char *c = p + 1; c < e && n + 1 < len; c++)
        out[n++] = (*c == '\n') ? ' ' : *c;
    out[n] = '\0';
    return 0;
}

static char *read_all(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    static char buf[1 << 17];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    return buf;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s docs/runtime.md\n", argv[0]);
        return 2;
    }
    /* The generator's log-probs are named for what they are, not for the actor's logp_old. */
    CHECK(!strcmp(pw_msg_kind_name(PW_MSG_LOGP_GEN), "logp_gen"), "%s",
          pw_msg_kind_name(PW_MSG_LOGP_GEN));
    CHECK(!strcmp(pw_msg_kind_name(PW_MSG_KIND_COUNT), "?"), "past the last kind");

    char names[512] = "";
    for (int k = 0; k < PW_MSG_KIND_COUNT; k++) {
        const char *a = pw_msg_kind_name((PwMsgKind)k);
        CHECK(strcmp(a, "?") != 0, "kind %d has no name", k);
        for (int j = 0; j < k; j++)
            CHECK(strcmp(a, pw_msg_kind_name((PwMsgKind)j)) != 0, "kinds %d and %d: '%s'", j, k, a);
        size_t n = strlen(names);
        snprintf(names + n, sizeof names - n, "%s%s", k ? " " : "", a);
    }

    const char *doc = read_all(argv[1]);
    CHECK(doc != NULL, "cannot read %s", argv[1]);
    if (doc) {
        char listed[512], range[64], want[64];
        CHECK(docs_field(doc, "Kinds:", '`', '`', listed, sizeof listed) == 0 &&
                  !strcmp(listed, names),
              "docs/runtime.md lists kinds '%s', the code has '%s'", listed, names);
        int top = pw_msg_tag((PwMsgKind)(PW_MSG_KIND_COUNT - 1), (PwRole)(PW_ROLE_COUNT - 1),
                             (PwRole)(PW_ROLE_COUNT - 1), 1);
        snprintf(want, sizeof want, "1 .. %d", top);
        CHECK(docs_field(doc, "(payload ? 1 : 0)", '(', ')', range, sizeof range) == 0 &&
                  !strcmp(range, want),
              "docs/runtime.md gives tags (%s), the code (%s)", range, want);
        /* MPI guarantees tags up to 32767 and no more */
        CHECK(top <= 32767, "largest tag %d", top);
    }

    /* A header of the previous numbering would name another kind with the same byte. */
    PwMsgHeader want, old;
    memset(&want, 0, sizeof want);
    want.magic = PW_MSG_MAGIC;
    want.version = PW_MSG_VERSION;
    want.kind = PW_MSG_VALUES;
    old = want;
    old.version = PW_MSG_VERSION - 1;
    PwErr err = {0};
    CHECK(pw_msg_header_check(&old, &want, &err) == -1 && strstr(err.msg, "not a message header"),
          "version %d header accepted: '%s'", PW_MSG_VERSION - 1, err.msg);
    return pw_test_done("kinds");
}
