/* Fake NCCL: how long a collective takes once every rank has arrived, from the run's cluster description
 * (TIMEWARP_TOPOLOGY, written by integrations/cluster.py) and NCCL's ring algorithm.
 *
 * With n ranks, a per-rank buffer of S bytes (allreduce, broadcast, send) or a total of S bytes (allgather,
 * reducescatter, alltoall, gather, scatter), a link of bandwidth B (bytes/s a GPU moves per direction) and a
 * per-step latency L:
 *   allreduce        2 (n-1)/n * S / B + 2 (n-1) L       (reduce-scatter then all-gather around the ring)
 *   allgather, reducescatter, alltoall, gather, scatter:   (n-1)/n * S / B + (n-1) L
 *   broadcast, reduce   S / B + (n-1) L                   (pipelined chain)
 *   send/recv           S / B + L
 * The measured 2-rank cost of a small operation replaces the latency terms at n = 2 (kind_model), and B is
 * scaled by the fraction of the link each kind reaches. The link is the ranks' node's (NVLink or PCIe) when
 * every rank is on one node, else the network between nodes (the slowest hop of the ring). B and L per
 * link kind come from the topology string (integrations/cluster.py; NVLink values measured on 2 x H200).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nccl_internal.h"

typedef struct { double bw, lat; } link_t;   /* bytes/s, seconds */

/* Per operation kind, measured on 2 x H200 over NVLink with NCCL 2.28.9 (device time of the operation
 * replayed in a CUDA graph; predictors/data/h200/nccl_2026-11-30/collectives.csv, column graph_us): the
 * cost of a small operation (1 KiB) and the fraction of the link's bandwidth reached at 1 GiB. */
static const struct { double floor_us, eff; } kind_model[] = {
    [TW_NCCL_COLL_ALLREDUCE] = {14.1, 0.89},      /* 3268 us at 1 GiB */
    [TW_NCCL_COLL_ALLGATHER] = {13.0, 0.735},     /* 1986 us */
    [TW_NCCL_COLL_REDUCESCATTER] = {12.0, 0.735}, /* 2016 us */
    [TW_NCCL_COLL_BROADCAST] = {8.9, 1.0},        /* 2918 us */
    [TW_NCCL_COLL_REDUCE] = {8.9, 0.89},          /* not measured: broadcast's floor, allreduce's efficiency */
    [TW_NCCL_COLL_ALLTOALL] = {13.0, 0.735},      /* not measured: as allgather */
    [TW_NCCL_COLL_GATHER] = {13.0, 0.735},        /* not measured: as allgather */
    [TW_NCCL_COLL_SCATTER] = {13.0, 0.735},       /* not measured: as allgather */
    [TW_NCCL_COLL_SENDRECV] = {16.7, 1.0},        /* 2899 us */
};
#define NVLINK_LAT_REF 10.0e-6   /* the NVLink latency the floors above belong to (integrations/cluster.py) */
#define MAX_NODES 1024
static struct {
    int parsed;
    int nodes;
    int first_gpu[MAX_NODES + 1];   /* node i holds physical GPUs [first_gpu[i], first_gpu[i+1]) */
    char intra[MAX_NODES];          /* 'n' nvlink, 'p' pcie */
    link_t nvlink, pcie, net;
} topo = {
    .nvlink = {370e9, 10.0e-6}, .pcie = {55e9, 12.0e-6}, .net = {50e9, 5.0e-6},
};

static void parse_link(const char *v, link_t *l) {
    char *end;
    double bw = strtod(v, &end);
    if (*end != ':') return;
    double lat = strtod(end + 1, NULL);
    if (bw > 0) l->bw = bw * 1e9;
    if (lat >= 0) l->lat = lat * 1e-6;
}

/* "v1;nodes=N;gpus=g0,g1;intra=nvlink,pcie;nvlink=bw:lat;pcie=bw:lat;net=bw:lat" (bw GB/s, lat us) */
static void parse(void) {
    if (topo.parsed) return;
    topo.parsed = 1;
    const char *t = tw_coll_topology();
    if (!t || !*t) t = getenv("TIMEWARP_TOPOLOGY");
    if (!t || strncmp(t, "v1;", 3) != 0) return;
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", t + 3);
    char *save = NULL;
    for (char *f = strtok_r(buf, ";", &save); f; f = strtok_r(NULL, ";", &save)) {
        char *eq = strchr(f, '=');
        if (!eq) continue;
        *eq = '\0';
        const char *v = eq + 1;
        if (!strcmp(f, "nodes")) topo.nodes = atoi(v);
        else if (!strcmp(f, "gpus")) {
            int i = 0, acc = 0;
            for (const char *p = v; *p && i < MAX_NODES; i++) {
                topo.first_gpu[i] = acc;
                acc += atoi(p);
                p = strchr(p, ',');
                if (!p) { i++; break; }
                p++;
            }
            topo.first_gpu[i] = acc;
            if (!topo.nodes) topo.nodes = i;
        } else if (!strcmp(f, "intra")) {
            int i = 0;
            for (const char *p = v; *p && i < MAX_NODES; i++) {
                topo.intra[i] = *p == 'p' ? 'p' : 'n';
                p = strchr(p, ',');
                if (!p) break;
                p++;
            }
        } else if (!strcmp(f, "nvlink")) parse_link(v, &topo.nvlink);
        else if (!strcmp(f, "pcie")) parse_link(v, &topo.pcie);
        else if (!strcmp(f, "net")) parse_link(v, &topo.net);
    }
}

static int node_of(int gpu) {
    for (int i = 0; i < topo.nodes; i++)
        if (gpu < topo.first_gpu[i + 1]) return i;
    return 0;
}

static link_t link_for(int n, const int32_t *gpus) {
    int node = node_of(gpus[0]);
    for (int r = 1; r < n; r++)
        if (node_of(gpus[r]) != node) return topo.net;
    return topo.intra[node] == 'p' ? topo.pcie : topo.nvlink;
}

uint64_t tw_nccl_cost_ns(int kind, size_t bytes, int n, const int32_t *gpus) {
    parse();
    if (n <= 1) return 1000;
    if (kind < TW_NCCL_COLL_ALLREDUCE || kind > TW_NCCL_COLL_SENDRECV) kind = TW_NCCL_COLL_SENDRECV;
    link_t l = link_for(n, gpus);
    double S = (double)bytes, f = (double)(n - 1) / n, share, steps;
    switch (kind) {
    case TW_NCCL_COLL_ALLREDUCE: share = 2 * f; steps = 2 * (n - 2); break;
    case TW_NCCL_COLL_BROADCAST: case TW_NCCL_COLL_REDUCE: share = 1; steps = n - 2; break;
    case TW_NCCL_COLL_SENDRECV: share = 1; steps = 0; break;
    default: share = f; steps = n - 2; break;
    }
    /* the measured 2-rank floor, moved to this link's latency, plus a latency per extra ring step */
    double floor = kind_model[kind].floor_us * 1e-6 * (l.lat / NVLINK_LAT_REF) + steps * l.lat;
    double t = floor + share * S / (l.bw * kind_model[kind].eff);
    return (uint64_t)(t * 1e9);
}
