/* test_gpu.c: GPU tensors through the runtime: messages between roles (staged through pinned
 * host memory, or through memory on one rank), the broadcast of the weights (a device-to-device
 * copy into the bound generator on the sender's rank, staged to the others) and the NCCL
 * collectives of a GPU role, against the serial result. Skips (77) where NCCL or a GPU per rank
 * is missing. */
#include <stdlib.h>

#include "comm_test.h"
#include "pw_collective.h"
#include "pw_device.h"
#include "pw_fanout.h"
#include "pw_message.h"
#include "pw_model.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int size, rank;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
#ifndef PW_HAVE_NCCL
    MPI_Finalize();
    return PW_SKIP_CODE;
#else
    /* NCCL refuses two ranks on one GPU: one GPU per rank or skip. */
    if (pw_device_count() < size) {
        if (rank == 0) printf("test_gpu: %d GPU(s) for %d ranks: skipped\n", pw_device_count(), size);
        MPI_Finalize();
        return PW_SKIP_CODE;
    }
    PW_CUDA_CHECK(cudaSetDevice(rank));
    TestMap t;
    tmap_init(&t, size);
    tmap_range(&t, PW_ROLE_ACTOR, 0, size);
    t.map.role[PW_ROLE_ACTOR].device = PW_DEVICE_CUDA;
    tmap_range(&t, PW_ROLE_CRITIC, size - 1, 1); /* rank 0's peer: MPI, or memory when alone */
    t.map.role[PW_ROLE_CRITIC].device = PW_DEVICE_CUDA;
    tmap_range(&t, PW_ROLE_GENERATOR, 0, size); /* the weights' receivers, one on rank 0 */
    t.map.role[PW_ROLE_GENERATOR].device = PW_DEVICE_CUDA;
    PwWorld w;
    tworld(&w, &t, 60.0);
    CHECK(strcmp(pw_collective_backend(&w, PW_ROLE_ACTOR), "nccl") == 0, "GPU role not on NCCL");
    enum { N = 4096 };
    float host[N];
    for (int i = 0; i < N; i++) host[i] = (float)((rank * 7 + i) % 13);
    float *dev = NULL;
    PW_CUDA_CHECK(cudaMalloc((void **)&dev, sizeof host));
    PW_CUDA_CHECK(cudaMemcpy(dev, host, sizeof host, cudaMemcpyHostToDevice));
    int64_t shape[1] = {N};
    PwTensor tt = pw_tensor_host(dev, PW_DTYPE_F32, 1, shape);
    tt.device = PW_DEVICE_CUDA;
    PwErr err;

    /* critic -> actor[0], a device tensor of 3 MiB + 5 bytes, every byte checked */
    size_t nb = (3u << 20) + 5;
    unsigned char *hb = malloc(nb), *db = NULL;
    PW_CUDA_CHECK(cudaMalloc((void **)&db, nb));
    int64_t bshape[1] = {(int64_t)nb};
    PwTensor tb = pw_tensor_host(db, PW_DTYPE_U8, 1, bshape);
    tb.device = PW_DEVICE_CUDA;
    if (pw_world_has_role(&w, PW_ROLE_CRITIC)) {
        tfill(hb, nb, 99);
        PW_CUDA_CHECK(cudaMemcpy(db, hb, nb, cudaMemcpyHostToDevice));
        pw_send(&w, PW_ROLE_CRITIC, PW_ROLE_ACTOR, 0, PW_MSG_VALUES, 1, &tb);
    }
    if (w.role_rank[PW_ROLE_ACTOR] == 0) {
        PW_CUDA_CHECK(cudaMemset(db, 0, nb));
        pw_recv(&w, PW_ROLE_ACTOR, PW_ROLE_CRITIC, 0, PW_MSG_VALUES, 1, &tb);
        PW_CUDA_CHECK(cudaMemcpy(hb, db, nb, cudaMemcpyDeviceToHost));
        CHECK(tverify(hb, nb, 99) < 0, "device message corrupted (%s)",
              size > 1 ? "staged over MPI" : "same rank");
    }

    /* actor[0] -> every generator rank, the same bytes: rank 0's generator is bound (one
     * device-to-device copy at the send), the others receive the staged broadcast */
    PwFanout f;
    CHECK(pw_fanout_init(&w, PW_ROLE_ACTOR, 0, PW_ROLE_GENERATOR, &f, &err) == 0, "%s", err.msg);
    unsigned char *gb = NULL;
    PW_CUDA_CHECK(cudaMalloc((void **)&gb, nb));
    PW_CUDA_CHECK(cudaMemset(gb, 0, nb));
    PwTensor tg = tb;
    tg.data = gb;
    PwMsgReq fq[2];
    int nfq = 0;
    if (rank == 0) {
        pw_fanout_bind(&f, &tg);
        tfill(hb, nb, 123);
        PW_CUDA_CHECK(cudaMemcpy(db, hb, nb, cudaMemcpyHostToDevice));
        CHECK(pw_fanout_isend(&w, &f, PW_MSG_WEIGHTS, 2, &tb, &fq[nfq++], &err) == 0, "%s",
              err.msg);
    }
    CHECK(pw_fanout_irecv(&w, &f, PW_MSG_WEIGHTS, 2, &tg, &fq[nfq++], &err) == 0, "%s", err.msg);
    CHECK(pw_msg_waitall(&w, nfq, fq, &err) == 0, "%s", err.msg);
    memset(hb, 0, nb);
    PW_CUDA_CHECK(cudaMemcpy(hb, gb, nb, cudaMemcpyDeviceToHost));
    CHECK(tverify(hb, nb, 123) < 0, "weights broadcast on rank %d corrupted (%s)", rank,
          rank ? "staged" : "device-to-device");
    pw_fanout_free(&f);
    PW_CUDA_CHECK(cudaFree(gb));
    PW_CUDA_CHECK(cudaFree(db));
    free(hb);

    for (int op = 0; op < 2; op++) {
        PW_CUDA_CHECK(cudaMemcpy(dev, host, sizeof host, cudaMemcpyHostToDevice));
        CHECK(pw_allreduce(&w, PW_ROLE_ACTOR, &tt, (PwReduceOp)op, &err) == 0, "%s", err.msg);
        float got[N];
        PW_CUDA_CHECK(cudaMemcpy(got, dev, sizeof got, cudaMemcpyDeviceToHost));
        int bad = 0;
        for (int i = 0; i < N; i++) {
            double e = 0;
            for (int q = 0; q < size; q++) e += (q * 7 + i) % 13;
            if (op == PW_REDUCE_MEAN) e /= size;
            bad += fabs(got[i] - e) > 1e-5 * fmax(1, fabs(e));
        }
        CHECK(bad == 0, "NCCL all-reduce %s: %d wrong", op ? "mean" : "sum", bad);
    }
    /* gradient buckets over NCCL: each range is written on a stream of its own (as a model's
     * backward writes it) right before it is reported, the lowest one written but never
     * reported (the end sums it), so a sum that did not wait for that stream would add stale
     * zeros: with 1-byte buckets every report is posted at once, with 1 GiB all at the end */
    static const size_t buckets[2] = {1, (size_t)1 << 30};
    for (int k = 0; k < 2; k++) {
        float vals[N], got[N];
        for (int i = 0; i < N; i++) vals[i] = (float)((rank * 7 + i) % 13);
        cudaStream_t ms;
        PW_CUDA_CHECK(cudaStreamCreateWithFlags(&ms, cudaStreamNonBlocking));
        PW_CUDA_CHECK(cudaMemset(dev, 0, sizeof vals));
        PW_CUDA_CHECK(cudaDeviceSynchronize());
        PwGradSync *gs = pw_grad_sync_begin(&w, PW_ROLE_ACTOR, &tt, buckets[k], &err);
        CHECK(gs != NULL, "%s", err.msg);
        for (int hi = N; gs && hi > 0; hi -= 100) {
            int lo = hi - 100 > 0 ? hi - 100 : 0;
            PW_CUDA_CHECK(cudaMemcpyAsync(dev + lo, vals + lo, (size_t)(hi - lo) * sizeof(float),
                                          cudaMemcpyHostToDevice, ms));
            PwGradRange r = {(size_t)lo, (size_t)(hi - lo)};
            if (lo > 0) pw_grad_sync_ready(gs, &r, 1, ms);
        }
        int early = -1;
        CHECK(pw_grad_sync_end(gs, &early, &err) == 0, "%s", err.msg);
        PW_CUDA_CHECK(cudaStreamSynchronize(ms)); /* one rank sums nothing: its own copy */
        PW_CUDA_CHECK(cudaMemcpy(got, dev, sizeof got, cudaMemcpyDeviceToHost));
        int bad = 0;
        for (int i = 0; i < N; i++) {
            double e = 0;
            for (int q = 0; q < size; q++) e += (q * 7 + i) % 13;
            bad += got[i] != (float)e;
        }
        CHECK(bad == 0, "NCCL gradient buckets of %zu bytes: %d of %d wrong", buckets[k], bad, N);
        int want = size > 1 && k == 0 ? N / 100 : 0;
        CHECK(early == want, "NCCL gradient buckets of %zu bytes: %d early, expected %d",
              buckets[k], early, want);
        PW_CUDA_CHECK(cudaStreamDestroy(ms));
    }
    if (rank == 0) for (int i = 0; i < N; i++) host[i] = (float)i;
    PW_CUDA_CHECK(cudaMemcpy(dev, host, sizeof host, cudaMemcpyHostToDevice));
    CHECK(pw_broadcast(&w, PW_ROLE_ACTOR, &tt, 0, &err) == 0, "%s", err.msg);
    PW_CUDA_CHECK(cudaMemcpy(host, dev, sizeof host, cudaMemcpyDeviceToHost));
    int bad = 0;
    for (int i = 0; i < N; i++) bad += host[i] != (float)i;
    CHECK(bad == 0, "NCCL broadcast: %d wrong", bad);
    CHECK(pw_barrier(&w, PW_ROLE_ACTOR, &err) == 0, "%s", err.msg);
    PW_CUDA_CHECK(cudaFree(dev));
    pw_world_free(&w);
    return tdone("test_gpu");
#endif
}
