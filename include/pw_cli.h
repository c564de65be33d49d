/* pw_cli.h: the flags of ppo_world's commands: getopt_long in argument order, with each error as
 * text naming the flag, so that the command decides who prints it (under mpirun, rank 0 alone). */
#ifndef PW_CLI_H
#define PW_CLI_H

#include <getopt.h>
#include <stdio.h>
#include <string.h>

/* Header-only, as pw_common.h: the commands live in several layers (data, runtime, roles, the
 * binary) and none of them is below all the others. */

enum {
    PW_CLI_END = -1,     /* no argument left */
    PW_CLI_OPERAND = 1,  /* an argument that is not a flag (key=value, a folder): in arg */
    PW_CLI_ERROR = '?'   /* an unknown flag or a missing value: msg says which */
};

typedef struct PwCli {
    int argc;
    char **argv;
    const struct option *longopts;
    char shortopts[64];
    int rest;        /* after "--": the index of the next operand (0 before) */
    const char *arg; /* the flag's value, or the operand */
    char msg[300];
} PwCli;

/* Start reading argv[1..argc-1]. Flags may stand anywhere among the operands and keep their
 * order with them; "--" makes every later argument an operand. */
static inline void pw_cli_init(PwCli *c, int argc, char **argv, const char *shortopts,
                               const struct option *longopts)
{
    memset(c, 0, sizeof *c);
    c->argc = argc;
    c->argv = argv;
    c->longopts = longopts;
    /* '-': operands come back in place (as 1); ':': a missing value is told apart */
    snprintf(c->shortopts, sizeof c->shortopts, "-:%s", shortopts);
    optind = 0; /* glibc: start afresh, a process (a test) may read several command lines */
    opterr = 0; /* the messages are ours, in msg */
}

/* The next flag's `val` (its value in arg), PW_CLI_OPERAND, PW_CLI_END or PW_CLI_ERROR. */
static inline int pw_cli_next(PwCli *c)
{
    if (c->rest) {
        if (c->rest >= c->argc) return PW_CLI_END;
        c->arg = c->argv[c->rest++];
        return PW_CLI_OPERAND;
    }
    int o = getopt_long(c->argc, c->argv, c->shortopts, c->longopts, NULL);
    c->arg = optarg;
    const char *at = optind > 0 && optind <= c->argc ? c->argv[optind - 1] : "";
    if (o == -1) {
        if (optind >= c->argc) return PW_CLI_END;
        c->rest = optind; /* stopped at "--" */
        return pw_cli_next(c);
    }
    if (o == ':') {
        snprintf(c->msg, sizeof c->msg, "%s needs a value", at);
        return PW_CLI_ERROR;
    }
    if (o == '?') {
        if (!strncmp(at, "--", 2) && optopt && strchr(at, '='))
            snprintf(c->msg, sizeof c->msg, "'%s': %.*s takes no value", at,
                     (int)(strchr(at, '=') - at), at);
        else if (!strncmp(at, "--", 2))
            snprintf(c->msg, sizeof c->msg, "unknown flag '%s'", at);
        else
            snprintf(c->msg, sizeof c->msg, "unknown flag '-%c'", optopt);
        return PW_CLI_ERROR;
    }
    return o;
}

/* "--name" of the flag whose val is v, for messages about its value. */
static inline const char *pw_cli_flag(const PwCli *c, int v, char *buf, size_t len)
{
    for (const struct option *o = c->longopts; o->name; o++)
        if (o->val == v) {
            snprintf(buf, len, "--%s", o->name);
            return buf;
        }
    return "?";
}

#endif
