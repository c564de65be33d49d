/* main.c: the ppo_world command: parse the flags, build the world of ranks and roles from the
 * placement file, and run the roles this rank holds. */
#include <stdio.h>
#include <string.h>

static void usage(FILE *f)
{
    fprintf(f,
            "usage: mpirun -np N ppo_world --placement p.yaml [--config c.yaml] [--out DIR]\n"
            "       ppo_world --placement p.yaml --dry-run [--world-size N]\n"
            "       ppo_world --help\n");
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        }
    }
    usage(stderr);
    return 2;
}
