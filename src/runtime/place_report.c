/* place_report.c: the rank -> roles -> device -> cores/NUMA -> GPU table that --dry-run and the
 * start of a run print, so a placement can be read before any model is loaded. */
#include "pw_startup.h"

#include <string.h>

void pw_place_row(const PwPlacement *p, int rank, const PwBinding *b, PwPlaceRow *row)
{
    memset(row, 0, sizeof *row);
    row->rank = rank;
    pw_placement_rank_roles(p, rank, row->roles, sizeof row->roles);
    pw_placement_rank_models(p, rank, row->models, sizeof row->models);
    snprintf(row->device, sizeof row->device, "%s",
             pw_placement_rank_device(p, rank) == PW_DEVICE_CUDA ? "cuda" : "cpu");
    row->b = *b;
}

enum {
    COL_RANK,
    COL_HOST,
    COL_LOCAL,
    COL_ROLES,
    COL_DEVICE,
    COL_THREADS,
    COL_CORES,
    COL_NUMA,
    COL_GPU,
    COL_MODELS,
    NCOL
};

static void cells(const PwPlaceRow *r, char c[NCOL][200])
{
    snprintf(c[COL_RANK], 200, "%d", r->rank);
    snprintf(c[COL_HOST], 200, "%s", r->b.host);
    snprintf(c[COL_LOCAL], 200, "%d/%d", r->b.local_rank, r->b.local_size);
    snprintf(c[COL_ROLES], 200, "%s", r->roles);
    snprintf(c[COL_DEVICE], 200, "%s", r->device);
    snprintf(c[COL_THREADS], 200, "%d", r->b.threads);
    snprintf(c[COL_CORES], 200, "%s", r->b.cpus);
    snprintf(c[COL_NUMA], 200, "%s", r->b.numa[0] ? r->b.numa : "-");
    snprintf(c[COL_GPU], 200, "%s", r->b.gpu_name);
    snprintf(c[COL_MODELS], 200, "%s", r->models);
}

static void print_line(FILE *f, const int *w, char c[NCOL][200])
{
    for (int k = 0; k + 1 < NCOL; k++) fprintf(f, "%-*s  ", w[k], c[k]);
    fprintf(f, "%s\n", c[NCOL - 1]);
}

/* Fields never contain spaces, so the table reads back as whitespace-separated columns. */
void pw_place_report(FILE *f, const PwPlacement *p, const PwPlaceRow *rows, int n, int planned)
{
    static const char *const head[NCOL] = {"rank",    "host",  "local", "roles", "device",
                                           "threads", "cores", "numa",  "gpu",   "reward_models"};
    int w[NCOL];
    char c[NCOL][200];
    for (int k = 0; k < NCOL; k++) w[k] = (int)strlen(head[k]);
    int nhosts = 0;
    for (int i = 0; i < n; i++) {
        cells(&rows[i], c);
        for (int k = 0; k < NCOL; k++)
            if ((int)strlen(c[k]) > w[k]) w[k] = (int)strlen(c[k]);
        int seen = 0;
        for (int j = 0; j < i && !seen; j++) seen = !strcmp(rows[j].b.host, rows[i].b.host);
        nhosts += !seen;
    }
    const PwRoleMap *m = &p->map;
    fprintf(f, "placement %s: %d rank%s on %d host%s, bind %s%s\n", p->path, n, n == 1 ? "" : "s",
            nhosts, nhosts == 1 ? "" : "s", pw_bind_name(p->bind),
            planned ? " (planned for this host, not launched)" : "");
    fprintf(f, "roles:");
    for (int r = 0; r < PW_ROLE_COUNT; r++) {
        fprintf(f, " %s=", pw_role_name((PwRole)r));
        if (!pw_role_present(m, (PwRole)r)) fprintf(f, "absent");
        for (int i = 0; i < m->role[r].nranks; i++)
            fprintf(f, "%s%d", i ? "," : "", m->role[r].ranks[i]);
    }
    fprintf(f, "\n");
    fprintf(f, "reference: %s; generator: %s\n",
            pw_role_present(m, PW_ROLE_REFERENCE) ? "present" : "absent (KL penalty must be 0)",
            pw_role_present(m, PW_ROLE_GENERATOR) ? "present" : "absent (the actor generates)");
    for (int k = 0; k < NCOL; k++) snprintf(c[k], 200, "%s", head[k]);
    print_line(f, w, c);
    for (int i = 0; i < n; i++) {
        cells(&rows[i], c);
        print_line(f, w, c);
    }
    for (int i = 0; i < m->n_reward_models; i++) {
        fprintf(f, "reward model %d %s -> ranks", i, m->reward_models[i].name);
        for (int k = 0; k < m->reward_models[i].nranks; k++)
            fprintf(f, "%s%d", k ? "," : " ", m->reward_models[i].ranks[k]);
        fprintf(f, "\n");
    }
    fflush(f);
}
