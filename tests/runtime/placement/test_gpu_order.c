/* test_gpu_order.c: the CUDA runtime's devices found among hwloc's PCI GPUs (pw_gpu_order), the
 * renumbering that makes a rank's `cuda:K` the device the runtime calls K. Cases by hand: a node
 * of 8 GPUs on two PCI domains as hwloc lists them (bus order), and what the runtime sees under
 * CUDA_VISIBLE_DEVICES as Slurm sets it ("2,3", "3,2", "6"), all of them, and a GPU hwloc does
 * not list. Then pw_binding_gpu_is, by which the dry run's memory plan finds the ranks on each
 * of its GPUs. No GPU needed. */
#include <stdio.h>
#include <string.h>

#include "pw_binding.h"
#include "pw_test.h"

/* hwloc's PCI GPUs in bus order: domain 0 buses 0x1b 0x3b 0x5d 0x7f; domain 1 the same */
static const PwPciId node[8] = {{0, 0x1b, 0}, {0, 0x3b, 0}, {0, 0x5d, 0}, {0, 0x7f, 0},
                                {1, 0x1b, 0}, {1, 0x3b, 0}, {1, 0x5d, 0}, {1, 0x7f, 0}};

/* the runtime sees node[v[0]], node[v[1]], ...: each ordinal must find its GPU */
static void visible(const int *v, int n)
{
    PwPciId cuda[8];
    int index[8];
    for (int k = 0; k < n; k++) cuda[k] = node[v[k]];
    int rc = pw_gpu_order(node, 8, cuda, n, index);
    CHECK(rc == 0, "%d visible GPUs: not found", n);
    for (int k = 0; rc == 0 && k < n; k++)
        CHECK(index[k] == v[k], "ordinal %d: GPU %d of the bus, expected %d", k, index[k], v[k]);
}

int main(void)
{
    visible((const int[]){0, 1, 2, 3, 4, 5, 6, 7}, 8); /* all, bus order */
    visible((const int[]){2, 3}, 2);                   /* CUDA_VISIBLE_DEVICES=2,3 */
    visible((const int[]){3, 2}, 2);                   /* =3,2: the runtime's order is the list's */
    visible((const int[]){6}, 1);                      /* one GPU of the second domain */
    visible((const int[]){4, 0, 5, 1}, 4);             /* another order (FASTEST_FIRST, UUIDs) */

    /* the same bus number on the other domain is another GPU */
    PwPciId other = {1, 0x3b, 0};
    int index[8] = {-7};
    CHECK(pw_gpu_order(node, 4, &other, 1, index) == -1 && index[0] == -7,
          "a GPU only the runtime sees: refused, index untouched (%d)", index[0]);
    /* a GPU hwloc does not list among others it does: the whole order is refused */
    PwPciId some[3] = {node[0], {0, 0x99, 0}, node[2]};
    CHECK(pw_gpu_order(node, 8, some, 3, index) == -1, "an unknown address among known ones");
    /* two ordinals at one address cannot come from a runtime */
    PwPciId twice[2] = {node[5], node[5]};
    CHECK(pw_gpu_order(node, 8, twice, 2, index) == -1, "one GPU for two ordinals");
    /* nothing to order */
    CHECK(pw_gpu_order(node, 8, some, 0, index) == -1, "no device");
    CHECK(pw_gpu_order(NULL, 0, node, 1, index) == -1, "hwloc lists none");
    /* a rank's GPU against a device of this process: by address where both are known */
    PwBinding b;
    memset(&b, 0, sizeof b);
    b.gpu = 0;
    snprintf(b.gpu_name, sizeof b.gpu_name, "cuda:0@0000:1b:00.0");
    CHECK(!strcmp(pw_binding_gpu_pci(&b), "0000:1b:00.0"), "address: '%s'", pw_binding_gpu_pci(&b));
    CHECK(pw_binding_gpu_is(&b, 0, "0000:1b:00.0"), "the same ordinal and address");
    CHECK(!pw_binding_gpu_is(&b, 0, "0000:3b:00.0"), "its cuda:0 is not this process's cuda:0");
    CHECK(pw_binding_gpu_is(&b, 1, "0000:1b:00.0"), "its cuda:0 is this process's cuda:1");
    CHECK(pw_binding_gpu_is(&b, 0, "") && !pw_binding_gpu_is(&b, 1, ""),
          "no address here: the ordinal decides");
    snprintf(b.gpu_name, sizeof b.gpu_name, "cuda:0@unknown-locality");
    CHECK(!pw_binding_gpu_pci(&b)[0], "unknown locality has no address");
    CHECK(pw_binding_gpu_is(&b, 0, "0000:3b:00.0") && !pw_binding_gpu_is(&b, 2, "0000:1b:00.0"),
          "no address there: the ordinal decides");
    snprintf(b.gpu_name, sizeof b.gpu_name, "none");
    CHECK(!pw_binding_gpu_pci(&b)[0], "'none' has no address");
    return pw_test_done("gpu_order");
}
