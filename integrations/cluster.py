"""The cluster description: how many nodes, how many virtual GPUs of which kind on each, and the links between them.

Read from a TOML file (``timewarp run --cluster cluster.toml``) or made from ``--gpu``/``--gpus`` (one node),
and handed to the emulated processes and the coordinator as one environment variable, ``TIMEWARP_TOPOLOGY``
(``Cluster.to_env()``), that C can split with ``strtok``. The format and the defaults with their sources are
documented in ``docs/CLUSTER.md``.

    [defaults]                 # optional
    gpu = "H200"               # catalog key or alias; default: the catalog's default GPU
    intra = "nvlink"           # "nvlink" | "pcie"; default nvlink

    [[nodes]]                  # one table per node, at least one
    name = "node0"             # optional; default node<i>
    gpus = 8                   # required, 1..64
    gpu = "H200"               # optional; overrides defaults.gpu
    intra = "nvlink"           # optional; overrides defaults.intra

    [links.nvlink]             # optional overrides of the built-in link values (either key may be left out)
    bandwidth_gbps = 370       # GB/s (1e9 bytes/s) per direction per GPU, as NCCL achieves it
    latency_us = 10.0          # fixed cost of one transfer (small-message floor), µs
    [links.pcie]
    bandwidth_gbps = 55
    latency_us = 12.0

    [network]                  # between nodes; required when there is more than one node
    bandwidth_gbps = 50        # GB/s per GPU per direction (one 400 Gb/s NIC per GPU = 50 GB/s)
    latency_us = 5.0

Every error is a ``ClusterError`` (a ValueError) whose message starts with the file and the field at fault:
``cluster.toml: nodes[1].gpus: must be a positive integer, got "eight"``.

Standard library only (Python >= 3.11, ``tomllib``), plus the GPU catalog.
"""
from __future__ import annotations

import difflib
import json
import math
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from timewarp.predictors import catalog

__all__ = [
    "ENV_VAR", "ENV_VERSION", "INTRA_KINDS", "LINK_DEFAULTS", "MAX_GPUS_PER_NODE",
    "Cluster", "ClusterError", "Link", "Node", "default_links", "load", "parse", "parse_env", "single_node",
]

ENV_VAR = "TIMEWARP_TOPOLOGY"
ENV_VERSION = "v1"
INTRA_KINDS = ("nvlink", "pcie")

# One process of the shim serves at most this many devices (TW_MAX_DEVICES in shim_c/core/internal.h); the
# processes of a node see all of the node's GPUs.
MAX_GPUS_PER_NODE = 64

# ------------------------------------------------------------------------------------------------ defaults
# Built-in link values, used where the cluster file sets none: {link kind: {catalog key: (bandwidth GB/s,
# latency µs, source)}}. Bandwidth is GB/s (1e9 bytes/s) per GPU per direction as a collective algorithm sees
# it; latency is the fixed cost of one NCCL transfer over the link (the small-message floor of a one-hop
# operation, kernel and protocol overhead included), not the wire's own latency.
#
# Measured (H200, NVLink): predictors/calibration/nccl_bench.py on the 2 x H200 SXM machine (NV18: 18 NVLink 4
# links, nvidia-smi 26.562 GB/s each), NCCL 2.28.9, NVLS off, 2026-11-30, timings of operations captured in
# CUDA graphs: broadcast and send/recv of 1 GiB reach 368-370 GB/s one way (all_reduce bus bandwidth 328,
# all_gather/reduce_scatter 268-271); one-hop operations of 1-64 KiB take 8-15 µs (broadcast median 11.4,
# all_gather 13.4; a 2-rank all_reduce 15.0). For comparison, the datasheet: NVLink 900 GB/s per GPU, both
# directions together, i.e. 450 GB/s each way.
# The other rows are estimates: the H200's measured efficiency (370 of 450 GB/s, 0.82) applied to each GPU's
# datasheet NVLink figure, and the H200's latency.
# A GPU missing from a table (a catalog entry added later) gets the H200 row, reported as an estimate.
_H200_NVLINK_GBPS = 370.0
_H200_NVLINK_US = 10.0
_NVLINK_EFFICIENCY = 370.0 / 450.0
_MEASURED_BW = ("measured: nccl_bench on 2 x H200 SXM, 2026-11-30 (broadcast and send/recv of 1 GiB: "
                "368-370 GB/s one way)")
_MEASURED_LAT = "measured: nccl_bench on 2 x H200 SXM, 2026-11-30 (one-hop ops of 1-64 KiB: 8-15 µs)"
_LAT_AS_H200 = "estimate: the H200's measured NVLink floor"
_PCIE_LAT = "estimate: the H200's measured NVLink floor + 2 µs for the PCIe hops"
# {link kind: {catalog key: (GB/s, µs, source of the bandwidth, source of the latency)}}
LINK_DEFAULTS: Mapping[str, Mapping[str, tuple[float, float, str, str]]] = {
    "nvlink": {
        "H200": (_H200_NVLINK_GBPS, _H200_NVLINK_US, _MEASURED_BW, _MEASURED_LAT),
        "H100": (_H200_NVLINK_GBPS, _H200_NVLINK_US,
                 "estimate: the H200's measured value (the same NVLink 4, 900 GB/s per GPU in the H100 SXM5 datasheet)",
                 _LAT_AS_H200),
        "A100": (round(300.0 * _NVLINK_EFFICIENCY, 1), _H200_NVLINK_US,
                 "estimate: A100 SXM4 datasheet NVLink 600 GB/s per GPU (300 each way) x the H200's measured 0.82",
                 _LAT_AS_H200),
        "B200": (round(900.0 * _NVLINK_EFFICIENCY, 1), _H200_NVLINK_US,
                 "estimate: HGX B200 datasheet NVLink 1.8 TB/s per GPU (900 each way) x the H200's measured 0.82",
                 _LAT_AS_H200),
    },
    # PCIe peer to peer, not measured. Bandwidth: the catalog's rates.pcie_bytes_per_s (pinned host<->device
    # copies: measured on the H200, PCIe Gen5 x16; an estimate for the A100's Gen4), assumed to hold GPU to GPU,
    # which is an estimate (peer traffic through the CPU's root complex is often slower than through a PCIe
    # switch). The bandwidths below are only the fallback for a catalog entry without that rate.
    "pcie": {
        "H200": (55.0, _H200_NVLINK_US + 2.0, "estimate: PCIe Gen5 x16, 64 GB/s raw per direction, ~55 achieved",
                 _PCIE_LAT),
        "A100": (25.0, _H200_NVLINK_US + 2.0, "estimate: PCIe Gen4 x16, 32 GB/s raw per direction, ~25 achieved",
                 _PCIE_LAT),
    },
}


class ClusterError(ValueError):
    """A cluster file (or --gpu/--gpus) that cannot be used; the message names the source and the field."""


@dataclass(frozen=True)
class Link:
    """Bandwidth (GB/s = 1e9 bytes/s, per GPU per direction) and latency (µs) of one kind of link."""

    bandwidth_gbps: float
    latency_us: float
    source: str = field(default="", compare=False)

    @property
    def bytes_per_s(self) -> float:
        return self.bandwidth_gbps * 1e9

    @property
    def latency_s(self) -> float:
        return self.latency_us * 1e-6

    def env(self) -> str:
        return f"{_num(self.bandwidth_gbps)}:{_num(self.latency_us)}"


@dataclass(frozen=True)
class Node:
    name: str
    gpus: int
    gpu_key: str       # catalog key (aliases resolved)
    intra: str         # "nvlink" | "pcie"


@dataclass(frozen=True)
class Cluster:
    nodes: tuple[Node, ...]
    links: Mapping[str, Link]          # "nvlink" and "pcie", always both
    network: Link | None               # None: one node and no [network] table
    source: str = field(default="<string>", compare=False)

    @property
    def total_gpus(self) -> int:
        return sum(n.gpus for n in self.nodes)

    @property
    def num_nodes(self) -> int:
        return len(self.nodes)

    @property
    def gpu_keys(self) -> list[str]:
        """The catalog key of every GPU, by global rank (node by node, in file order)."""
        return [n.gpu_key for n in self.nodes for _ in range(n.gpus)]

    def locate(self, rank: int) -> tuple[int, int]:
        """(node index, local GPU index) of global GPU ``rank``."""
        if not 0 <= rank < self.total_gpus:
            raise IndexError(f"GPU {rank} is not in a cluster of {self.total_gpus} GPUs")
        for i, n in enumerate(self.nodes):
            if rank < n.gpus:
                return i, rank
            rank -= n.gpus
        raise AssertionError("unreachable")

    def intra_link(self, node: int) -> Link:
        return self.links[self.nodes[node].intra]

    def to_env(self) -> str:
        """The one-line form for TIMEWARP_TOPOLOGY (see docs/CLUSTER.md):

        ``v1;nodes=2;gpus=8,8;intra=nvlink,nvlink;nvlink=370.0:10.0;pcie=55.0:12.0;net=50.0:5.0``

        Bandwidths GB/s (1e9 bytes/s) per GPU per direction, latencies µs; ``net=0.0:0.0`` when there is no
        network (one node). GPU types are not part of it (each process learns its own from TIMEWARP_GPU)."""
        net = self.network.env() if self.network is not None else "0.0:0.0"
        return ";".join([
            ENV_VERSION,
            f"nodes={len(self.nodes)}",
            "gpus=" + ",".join(str(n.gpus) for n in self.nodes),
            "intra=" + ",".join(n.intra for n in self.nodes),
            f"nvlink={self.links['nvlink'].env()}",
            f"pcie={self.links['pcie'].env()}",
            f"net={net}",
        ])

    def describe(self) -> str:
        """One line for people: ``2 nodes: node0 8 x H200 (nvlink), node1 8 x H200 (nvlink); network 50 GB/s, 5 µs``."""
        parts = [f"{n.name} {n.gpus} x {n.gpu_key} ({n.intra})" for n in self.nodes]
        s = f"{len(self.nodes)} node{'s' if len(self.nodes) != 1 else ''}: " + ", ".join(parts)
        if self.network is not None:
            s += f"; network {self.network.bandwidth_gbps:g} GB/s, {self.network.latency_us:g} µs"
        return s

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready form (for reports)."""
        def link(l: Link) -> dict[str, Any]:
            return {"bandwidth_gbps": l.bandwidth_gbps, "latency_us": l.latency_us, "source": l.source}
        return {
            "nodes": [{"name": n.name, "gpus": n.gpus, "gpu": n.gpu_key, "intra": n.intra} for n in self.nodes],
            "links": {k: link(v) for k, v in self.links.items()},
            "network": link(self.network) if self.network is not None else None,
            "source": self.source,
        }


# ------------------------------------------------------------------------------------------------ helpers
def _num(x: float) -> str:
    """Shortest round-trip form of a float (``repr``): 450.0, 2.5, 1e-05."""
    return repr(float(x))


def _show(value: Any) -> str:
    """A value as it was written in TOML, for messages: "eight", true, 8, 1.5, a table, an array."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, list):
        return "an array"
    return repr(value)


# Spellings people are likely to try, for the "did you mean" hint (close misspellings are found by difflib).
_SYNONYMS = {
    "gpu_count": "gpus", "num_gpus": "gpus", "n_gpus": "gpus", "ngpus": "gpus", "gpus_per_node": "gpus",
    "count": "gpus", "gpu_type": "gpu", "type": "gpu", "model": "gpu", "gpu_model": "gpu", "interconnect": "intra",
    "bandwidth": "bandwidth_gbps", "bw": "bandwidth_gbps", "latency": "latency_us", "node": "nodes",
    "link": "links", "net": "network",
}


class _Ctx:
    def __init__(self, source: str):
        self.source = source

    def error(self, path: str, msg: str) -> ClusterError:
        return ClusterError(f"{self.source}: {path}: {msg}" if path else f"{self.source}: {msg}")

    def table(self, value: Any, path: str, allowed: tuple[str, ...]) -> dict:
        if not isinstance(value, dict):
            raise self.error(path, f"must be a table, got {_show(value)}")
        for k in value:
            if k not in allowed:
                where = f"{path}.{k}" if path else k
                close = [_SYNONYMS[k.lower()]] if _SYNONYMS.get(k.lower()) in allowed else \
                    difflib.get_close_matches(k, allowed, n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                raise self.error(where, f"unknown key{hint}; expected one of: {', '.join(allowed)}")
        return value

    def positive_int(self, value: Any, path: str, maximum: int | None = None) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise self.error(path, f"must be a positive integer, got {_show(value)}")
        if maximum is not None and value > maximum:
            raise self.error(path, f"must be at most {maximum} (the emulator's devices per process), got {value}")
        return value

    def number(self, value: Any, path: str, *, positive: bool) -> float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
        ok = ok and (value > 0 if positive else value >= 0)
        if not ok:
            kind = "a positive number" if positive else "a number >= 0"
            raise self.error(path, f"must be {kind}, got {_show(value)}")
        return float(value)

    def string(self, value: Any, path: str) -> str:
        if not isinstance(value, str):
            raise self.error(path, f"must be a string, got {_show(value)}")
        return value

    def gpu(self, value: Any, path: str) -> str:
        name = self.string(value, path)
        try:
            return catalog.load().resolve_key(name)
        except catalog.UnknownGpuError as e:
            raise self.error(path, str(e)) from None

    def intra(self, value: Any, path: str) -> str:
        s = self.string(value, path)
        if s.strip().lower() not in INTRA_KINDS:
            raise self.error(path, f"must be one of {', '.join(json.dumps(k) for k in INTRA_KINDS)}, got {_show(value)}")
        return s.strip().lower()


def _catalog_rate(gpu_key: str, rate: str) -> float | None:
    try:
        v = catalog.load().gpus[gpu_key].rates.get(rate)
    except KeyError:
        return None
    return float(v) if v else None


def _default_link(kind: str, gpu_key: str) -> Link:
    """The built-in value of one link kind for one GPU type: LINK_DEFAULTS, except that a catalog entry's
    rates.<kind>_bytes_per_s / rates.<kind>_latency_s win where present (rates.pcie_bytes_per_s is, for all)."""
    table = LINK_DEFAULTS[kind]
    if gpu_key in table:
        bw, lat, bw_src, lat_src = table[gpu_key]
    else:
        bw, lat, bw_src, lat_src = table["H200"]
        bw_src = f"estimate: the H200's ({bw_src})"
        lat_src = f"estimate: the H200's ({lat_src})"
    cat_bw = _catalog_rate(gpu_key, f"{kind}_bytes_per_s")
    if cat_bw is not None:
        bw = cat_bw / 1e9
        bw_src = f"catalog gpu.{gpu_key}.rates.{kind}_bytes_per_s" + (
            " (host<->device copies, assumed to hold GPU to GPU: estimate)" if kind == "pcie" else "")
    cat_lat = _catalog_rate(gpu_key, f"{kind}_latency_s")
    if cat_lat is not None:
        lat, lat_src = cat_lat * 1e6, f"catalog gpu.{gpu_key}.rates.{kind}_latency_s"
    return Link(float(bw), float(lat), f"{kind} default for {gpu_key}: bandwidth {bw_src}; latency {lat_src}")


def default_links(gpu_keys: list[str] | tuple[str, ...]) -> dict[str, Link]:
    """Built-in link values for a set of GPU types: for mixed types the slowest bandwidth and the longest
    latency of any of them (one value per link kind travels in TIMEWARP_TOPOLOGY)."""
    keys = list(dict.fromkeys(gpu_keys)) or [catalog.default_key()]
    out = {}
    for kind in INTRA_KINDS:
        cands = [_default_link(kind, k) for k in keys]
        if len(cands) == 1:
            out[kind] = cands[0]
        else:
            bw = min(cands, key=lambda l: l.bandwidth_gbps)
            lat = max(cands, key=lambda l: l.latency_us)
            out[kind] = Link(bw.bandwidth_gbps, lat.latency_us,
                             f"mixed GPU types: slowest of {', '.join(keys)} ({bw.source})")
    return out


# ------------------------------------------------------------------------------------------------ entry points
_TOP_KEYS = ("defaults", "nodes", "links", "network")
_DEFAULTS_KEYS = ("gpu", "intra")
_NODE_KEYS = ("name", "gpus", "gpu", "intra")
_LINK_KEYS = ("bandwidth_gbps", "latency_us")


def load(path: str | Path) -> Cluster:
    """Read a cluster file. Errors name the path as given."""
    source = str(path)
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        raise ClusterError(f"{source}: no such file") from None
    except IsADirectoryError:
        raise ClusterError(f"{source}: is a directory, not a cluster file") from None
    except OSError as e:
        raise ClusterError(f"{source}: cannot read: {e.strerror or e}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ClusterError(f"{source}: not UTF-8 text (byte {e.start})") from None
    return parse(text, source)


def parse(text: str, source: str = "<string>") -> Cluster:
    """Parse the text of a cluster file; ``source`` names it in error messages."""
    ctx = _Ctx(source)
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        # The message ends with "(at line L, column C)".
        raise ClusterError(f"{source}: invalid TOML: {e}") from None
    ctx.table(doc, "", _TOP_KEYS)

    defaults = ctx.table(doc.get("defaults", {}), "defaults", _DEFAULTS_KEYS)
    default_gpu = ctx.gpu(defaults["gpu"], "defaults.gpu") if "gpu" in defaults else catalog.default_key()
    default_intra = ctx.intra(defaults["intra"], "defaults.intra") if "intra" in defaults else "nvlink"

    if "nodes" not in doc:
        raise ctx.error("nodes", "missing; describe each node in a [[nodes]] table with at least `gpus = N`")
    raw_nodes = doc["nodes"]
    if isinstance(raw_nodes, dict):
        raise ctx.error("nodes", "must be an array of tables: write [[nodes]], not [nodes]")
    if not isinstance(raw_nodes, list):
        raise ctx.error("nodes", f"must be an array of tables ([[nodes]]), got {_show(raw_nodes)}")
    if not raw_nodes:
        raise ctx.error("nodes", "must list at least one node")

    nodes: list[Node] = []
    seen: dict[str, int] = {}
    for i, raw in enumerate(raw_nodes):
        where = f"nodes[{i}]"
        ctx.table(raw, where, _NODE_KEYS)
        if "gpus" not in raw:
            raise ctx.error(f"{where}.gpus", "missing; every node needs `gpus = N`")
        gpus = ctx.positive_int(raw["gpus"], f"{where}.gpus", MAX_GPUS_PER_NODE)
        name = ctx.string(raw["name"], f"{where}.name") if "name" in raw else f"node{i}"
        if not name.strip():
            raise ctx.error(f"{where}.name", "must not be empty")
        if name in seen:
            what = f"{_show(name)} is" if "name" in raw else f"the default name {_show(name)} is"
            raise ctx.error(f"{where}.name", f"{what} already the name of nodes[{seen[name]}]")
        seen[name] = i
        gpu = ctx.gpu(raw["gpu"], f"{where}.gpu") if "gpu" in raw else default_gpu
        intra = ctx.intra(raw["intra"], f"{where}.intra") if "intra" in raw else default_intra
        nodes.append(Node(name=name, gpus=gpus, gpu_key=gpu, intra=intra))

    # Link defaults follow the GPU types of the nodes that use each kind of link (all nodes if none does).
    links: dict[str, Link] = {}
    for kind in INTRA_KINDS:
        users = [n.gpu_key for n in nodes if n.intra == kind] or [n.gpu_key for n in nodes]
        links[kind] = default_links(users)[kind]
    raw_links = ctx.table(doc.get("links", {}), "links", INTRA_KINDS)
    for kind, raw in raw_links.items():
        where = f"links.{kind}"
        ctx.table(raw, where, _LINK_KEYS)
        base = links[kind]
        bw = ctx.number(raw["bandwidth_gbps"], f"{where}.bandwidth_gbps", positive=True) \
            if "bandwidth_gbps" in raw else base.bandwidth_gbps
        lat = ctx.number(raw["latency_us"], f"{where}.latency_us", positive=False) \
            if "latency_us" in raw else base.latency_us
        src = f"{source} [{where}]" if len(raw) == 2 else f"{source} [{where}], the rest {base.source}"
        links[kind] = Link(bw, lat, src)

    network = None
    if "network" in doc:
        raw = ctx.table(doc["network"], "network", _LINK_KEYS)
        for k in _LINK_KEYS:
            if k not in raw:
                raise ctx.error(f"network.{k}", "missing; [network] needs bandwidth_gbps and latency_us")
        network = Link(ctx.number(raw["bandwidth_gbps"], "network.bandwidth_gbps", positive=True),
                       ctx.number(raw["latency_us"], "network.latency_us", positive=False),
                       f"{source} [network]")
    elif len(nodes) > 1:
        raise ctx.error("network", f"missing; a cluster of {len(nodes)} nodes needs a [network] table "
                                   "with bandwidth_gbps (GB/s per GPU) and latency_us")

    return Cluster(nodes=tuple(nodes), links=links, network=network, source=source)


def single_node(gpu_key: str | None = None, n: int = 1, intra: str = "nvlink") -> Cluster:
    """The cluster ``--gpu KEY --gpus N`` stands for: one node of N GPUs, built-in link values, no network."""
    ctx = _Ctx("command line")
    key = ctx.gpu(gpu_key, "--gpu") if gpu_key is not None else catalog.default_key()
    n = ctx.positive_int(n, "--gpus", MAX_GPUS_PER_NODE)
    intra = ctx.intra(intra, "intra")
    return Cluster(nodes=(Node("node0", n, key, intra),), links=default_links([key]), network=None,
                   source="command line")


def parse_env(value: str) -> dict[str, Any]:
    """Read a TIMEWARP_TOPOLOGY string back (the inverse of Cluster.to_env, less the GPU types and names):
    ``{"nodes": [{"gpus": 8, "intra": "nvlink"}, ...], "nvlink": (bw, lat), "pcie": (bw, lat), "net": (bw, lat)}``.
    Unknown ``key=value`` fields are ignored, as a C reader should."""
    parts = value.strip().split(";")
    if not parts or parts[0] != ENV_VERSION:
        raise ValueError(f"{ENV_VAR}: unsupported version {parts[0] if parts else ''!r} (expected {ENV_VERSION})")
    fields: dict[str, str] = {}
    for p in parts[1:]:
        k, sep, v = p.partition("=")
        if not sep:
            raise ValueError(f"{ENV_VAR}: field {p!r} is not key=value")
        fields[k] = v
    try:
        n = int(fields["nodes"])
        gpus = [int(x) for x in fields["gpus"].split(",")]
        intra = fields["intra"].split(",")
        if len(gpus) != n or len(intra) != n:
            raise ValueError(f"{ENV_VAR}: nodes={n} but {len(gpus)} gpus and {len(intra)} intra entries")

        def pair(s: str) -> tuple[float, float]:
            bw, lat = s.split(":")
            return float(bw), float(lat)
        return {"nodes": [{"gpus": g, "intra": t} for g, t in zip(gpus, intra)],
                "nvlink": pair(fields["nvlink"]), "pcie": pair(fields["pcie"]), "net": pair(fields["net"])}
    except KeyError as e:
        raise ValueError(f"{ENV_VAR}: missing field {e.args[0]!r}") from None
