"""The cluster description (integrations/cluster.py): valid files, the --gpus shorthand, the TIMEWARP_TOPOLOGY
string, and an error naming the file and the field for every kind of mistake."""
from __future__ import annotations

import math
import re
import textwrap

import pytest

from timewarp.integrations import cluster
from timewarp.predictors import catalog

H200_NVLINK = cluster.LINK_DEFAULTS["nvlink"]["H200"]


def parse(text: str) -> cluster.Cluster:
    return cluster.parse(textwrap.dedent(text), "cluster.toml")


def error_of(text: str) -> str:
    with pytest.raises(cluster.ClusterError) as e:
        parse(text)
    return str(e.value)


# ------------------------------------------------------------------------------------------------ valid files
def test_minimal_file_is_one_h200_node_with_default_links():
    c = parse("""
        [[nodes]]
        gpus = 8
    """)
    assert c.nodes == (cluster.Node("node0", 8, "H200", "nvlink"),)
    assert c.total_gpus == 8 and c.num_nodes == 1
    assert c.network is None
    assert c.links["nvlink"].bandwidth_gbps == H200_NVLINK[0]
    assert c.links["nvlink"].latency_us == H200_NVLINK[1]
    assert "measured" in c.links["nvlink"].source
    assert c.links["pcie"].bandwidth_gbps == catalog.get("H200").rates["pcie_bytes_per_s"] / 1e9


def test_full_file(tmp_path):
    path = tmp_path / "cluster.toml"
    path.write_text(textwrap.dedent("""
        [defaults]
        gpu = "h100-sxm"          # an alias, any case
        intra = "pcie"

        [[nodes]]
        name = "alpha"
        gpus = 8
        gpu = "H200"
        intra = "nvlink"

        [[nodes]]
        gpus = 4                  # takes the defaults: H100 over PCIe

        [[nodes]]
        name = "gamma"
        gpus = 2
        gpu = "A100"

        [links.nvlink]
        bandwidth_gbps = 450
        latency_us = 2.0

        [links.pcie]
        bandwidth_gbps = 25.5     # latency left to the default

        [network]
        bandwidth_gbps = 50
        latency_us = 5
    """))
    c = cluster.load(path)
    assert [n.name for n in c.nodes] == ["alpha", "node1", "gamma"]
    assert [n.gpus for n in c.nodes] == [8, 4, 2]
    assert [n.gpu_key for n in c.nodes] == ["H200", "H100", "A100"]
    assert [n.intra for n in c.nodes] == ["nvlink", "pcie", "pcie"]
    assert c.total_gpus == 14
    assert c.gpu_keys == ["H200"] * 8 + ["H100"] * 4 + ["A100"] * 2
    assert c.locate(0) == (0, 0) and c.locate(7) == (0, 7) and c.locate(8) == (1, 0) and c.locate(13) == (2, 1)
    with pytest.raises(IndexError):
        c.locate(14)
    assert c.links["nvlink"] == cluster.Link(450.0, 2.0)
    assert c.links["pcie"].bandwidth_gbps == 25.5
    # The PCIe latency default of the slowest PCIe node type is kept.
    assert c.links["pcie"].latency_us == cluster.LINK_DEFAULTS["pcie"]["A100"][1]
    assert c.network == cluster.Link(50.0, 5.0)
    assert c.intra_link(1) is c.links["pcie"]
    assert c.source == str(path)
    assert "alpha 8 x H200 (nvlink)" in c.describe() and "network 50 GB/s" in c.describe()
    d = c.to_dict()
    assert d["nodes"][2] == {"name": "gamma", "gpus": 2, "gpu": "A100", "intra": "pcie"}
    assert d["network"]["bandwidth_gbps"] == 50.0


def test_single_node_is_the_gpus_shorthand():
    c = cluster.single_node("h200-SXM", 8)
    assert c == parse("""
        [[nodes]]
        gpus = 8
        gpu = "H200"
    """)
    assert c.nodes == (cluster.Node("node0", 8, "H200", "nvlink"),)
    assert c.network is None and c.total_gpus == 8
    assert cluster.single_node().nodes[0] == cluster.Node("node0", 1, catalog.default_key(), "nvlink")
    assert cluster.single_node("A100", 2).links["nvlink"].bandwidth_gbps == cluster.LINK_DEFAULTS["nvlink"]["A100"][0]


def test_mixed_gpu_types_take_the_slowest_default_link():
    c = parse("""
        [[nodes]]
        gpus = 8
        gpu = "B200"
        [[nodes]]
        gpus = 8
        gpu = "A100"
        [network]
        bandwidth_gbps = 50
        latency_us = 5.0
    """)
    assert [n.gpu_key for n in c.nodes] == ["B200", "A100"]
    assert c.links["nvlink"].bandwidth_gbps == cluster.LINK_DEFAULTS["nvlink"]["A100"][0]
    assert "mixed GPU types" in c.links["nvlink"].source


def test_every_catalog_gpu_has_link_defaults_with_a_source():
    for key in catalog.keys():
        bw, lat, bw_src, lat_src = cluster.LINK_DEFAULTS["nvlink"][key]
        assert bw > 0 and lat >= 0
        for src in (bw_src, lat_src):
            assert src.startswith(("measured", "estimate")), src
        links = cluster.default_links([key])
        assert set(links) == {"nvlink", "pcie"}
        assert all(l.bandwidth_gbps > 0 and l.source for l in links.values())


# ------------------------------------------------------------------------------------------------ TIMEWARP_TOPOLOGY
ENV_RE = re.compile(r"^v1;nodes=(\d+);gpus=(\d+(?:,\d+)*);intra=((?:nvlink|pcie)(?:,(?:nvlink|pcie))*);"
                    r"nvlink=([0-9.e+-]+):([0-9.e+-]+);pcie=([0-9.e+-]+):([0-9.e+-]+);net=([0-9.e+-]+):([0-9.e+-]+)$")


def test_to_env_exact_format():
    c = parse("""
        [[nodes]]
        gpus = 8
        [[nodes]]
        gpus = 4
        intra = "pcie"
        [links.nvlink]
        bandwidth_gbps = 450
        latency_us = 2
        [links.pcie]
        bandwidth_gbps = 25
        latency_us = 5.5
        [network]
        bandwidth_gbps = 50
        latency_us = 0.1
    """)
    env = c.to_env()
    assert env == "v1;nodes=2;gpus=8,4;intra=nvlink,pcie;nvlink=450.0:2.0;pcie=25.0:5.5;net=50.0:0.1"
    assert ENV_RE.match(env)
    assert cluster.ENV_VAR == "TIMEWARP_TOPOLOGY"


def test_to_env_single_node_has_no_network():
    env = cluster.single_node("H200", 8).to_env()
    bw, lat = H200_NVLINK[0], H200_NVLINK[1]
    assert env.startswith(f"v1;nodes=1;gpus=8;intra=nvlink;nvlink={bw!r}:{lat!r};pcie=")
    assert env.endswith(";net=0.0:0.0")
    assert ENV_RE.match(env)


def test_to_env_round_trips_through_a_plain_split():
    c = parse("""
        [[nodes]]
        gpus = 3
        [[nodes]]
        gpus = 1
        intra = "pcie"
        [links.nvlink]
        bandwidth_gbps = 123.456789
        latency_us = 1e-3
        [network]
        bandwidth_gbps = 12.5
        latency_us = 7
    """)
    env = c.to_env()
    # What a C reader does: split on ';', then on '=', ',' and ':'.
    fields = dict(f.split("=", 1) for f in env.split(";")[1:])
    assert fields["gpus"].split(",") == ["3", "1"]
    bw, lat = (float(x) for x in fields["nvlink"].split(":"))
    assert bw == 123.456789 and lat == 0.001
    back = cluster.parse_env(env)
    assert back["nodes"] == [{"gpus": 3, "intra": "nvlink"}, {"gpus": 1, "intra": "pcie"}]
    assert back["nvlink"] == (123.456789, 0.001) and back["net"] == (12.5, 7.0)
    # Readers ignore fields they do not know.
    assert cluster.parse_env(env + ";future=1")["net"] == (12.5, 7.0)
    with pytest.raises(ValueError):
        cluster.parse_env("v2;nodes=1")


# ------------------------------------------------------------------------------------------------ errors
def test_error_is_a_value_error():
    assert issubclass(cluster.ClusterError, ValueError)


@pytest.mark.parametrize("value, shown", [('"eight"', '"eight"'), ("0", "0"), ("-2", "-2"), ("1.5", "1.5"),
                                          ("true", "true"), ("[8]", "an array")])
def test_gpus_must_be_a_positive_integer(value, shown):
    msg = error_of(f"""
        [[nodes]]
        gpus = 8
        [[nodes]]
        gpus = {value}
    """)
    assert msg == f"cluster.toml: nodes[1].gpus: must be a positive integer, got {shown}"


def test_gpus_has_an_upper_limit():
    msg = error_of("""
        [[nodes]]
        gpus = 65
    """)
    assert msg.startswith("cluster.toml: nodes[0].gpus: must be at most 64")


def test_gpus_is_required():
    msg = error_of("""
        [[nodes]]
        gpu = "H200"
    """)
    assert msg.startswith("cluster.toml: nodes[0].gpus: missing")


@pytest.mark.parametrize("text, field, hint", [
    ("[[nodes]]\ngpu_count = 8\n", "nodes[0].gpu_count", "gpus"),
    ("[[nodes]]\ngpus = 8\ngpu_typ = 'H200'\n", "nodes[0].gpu_typ", None),
    ("[[node]]\ngpus = 8\n", "node", "nodes"),
    ("[defaults]\ngpus = 8\n[[nodes]]\ngpus = 8\n", "defaults.gpus", "gpu"),
    ("[[nodes]]\ngpus = 8\n[links.nvlink]\nbandwith_gbps = 400\n", "links.nvlink.bandwith_gbps", "bandwidth_gbps"),
    ("[[nodes]]\ngpus = 8\n[links.infiniband]\nbandwidth_gbps = 400\n", "links.infiniband", None),
    ("[[nodes]]\ngpus = 8\n[network]\nbandwidth_gbps = 50\nlatency_us = 5\nlatency = 5\n", "network.latency",
     "latency_us"),
])
def test_unknown_keys_are_named(text, field, hint):
    msg = error_of(text)
    assert msg.startswith(f"cluster.toml: {field}: unknown key"), msg
    assert "expected one of:" in msg
    if hint:
        assert f"did you mean {hint!r}?" in msg


def test_unknown_gpu_lists_the_known_ones():
    msg = error_of("""
        [[nodes]]
        gpus = 8
        gpu = "H300"
    """)
    assert msg.startswith("cluster.toml: nodes[0].gpu: unknown GPU 'H300'; known GPUs: ")
    for key in catalog.keys():
        assert key in msg
    msg = error_of("""
        [defaults]
        gpu = "V100"
        [[nodes]]
        gpus = 8
    """)
    assert msg.startswith("cluster.toml: defaults.gpu: unknown GPU 'V100'")


@pytest.mark.parametrize("where, text", [
    ("nodes[0].gpu", '[[nodes]]\ngpus = 8\ngpu = 200\n'),
    ("nodes[0].name", '[[nodes]]\ngpus = 8\nname = 3\n'),
])
def test_strings_must_be_strings(where, text):
    assert error_of(text).startswith(f"cluster.toml: {where}: must be a string, got ")


def test_intra_must_be_nvlink_or_pcie():
    msg = error_of("""
        [[nodes]]
        gpus = 8
        intra = "infiniband"
    """)
    assert msg == 'cluster.toml: nodes[0].intra: must be one of "nvlink", "pcie", got "infiniband"'
    assert parse('[[nodes]]\ngpus = 2\nintra = "PCIe"\n').nodes[0].intra == "pcie"


@pytest.mark.parametrize("text, expected", [
    ("[defaults]\ngpu = 'H200'\n", "cluster.toml: nodes: missing"),
    ("nodes = []\n", "cluster.toml: nodes: must list at least one node"),
    ("[nodes]\ngpus = 8\n", "cluster.toml: nodes: must be an array of tables: write [[nodes]], not [nodes]"),
    ("nodes = 8\n", "cluster.toml: nodes: must be an array of tables ([[nodes]]), got 8"),
    ("nodes = [1]\n", "cluster.toml: nodes[0]: must be a table, got 1"),
    ("defaults = 1\n[[nodes]]\ngpus = 1\n", "cluster.toml: defaults: must be a table, got 1"),
    ("[[nodes]]\ngpus = 1\n[links]\nnvlink = 400\n", "cluster.toml: links.nvlink: must be a table, got 400"),
])
def test_structure_errors(text, expected):
    assert error_of(text).startswith(expected)


def test_duplicate_node_names():
    msg = error_of("""
        [[nodes]]
        name = "a"
        gpus = 1
        [[nodes]]
        name = "a"
        gpus = 1
        [network]
        bandwidth_gbps = 50
        latency_us = 5
    """)
    assert msg == 'cluster.toml: nodes[1].name: "a" is already the name of nodes[0]'
    msg = error_of("""
        [[nodes]]
        name = "node1"
        gpus = 1
        [[nodes]]
        gpus = 1
        [network]
        bandwidth_gbps = 50
        latency_us = 5
    """)
    assert msg == 'cluster.toml: nodes[1].name: the default name "node1" is already the name of nodes[0]'
    assert error_of('[[nodes]]\nname = " "\ngpus = 1\n') == "cluster.toml: nodes[0].name: must not be empty"


def test_several_nodes_need_a_network():
    msg = error_of("""
        [[nodes]]
        gpus = 8
        [[nodes]]
        gpus = 8
    """)
    assert msg.startswith("cluster.toml: network: missing; a cluster of 2 nodes needs a [network] table")
    msg = error_of("""
        [[nodes]]
        gpus = 8
        [network]
        bandwidth_gbps = 50
    """)
    assert msg.startswith("cluster.toml: network.latency_us: missing")


@pytest.mark.parametrize("table, key, value, expected", [
    ("network", "bandwidth_gbps", "0", "must be a positive number, got 0"),
    ("network", "bandwidth_gbps", '"fast"', 'must be a positive number, got "fast"'),
    ("network", "bandwidth_gbps", "inf", "must be a positive number, got inf"),
    ("network", "latency_us", "-1", "must be a number >= 0, got -1"),
    ("network", "latency_us", "nan", "must be a number >= 0, got nan"),
    ("links.nvlink", "bandwidth_gbps", "-400", "must be a positive number, got -400"),
    ("links.pcie", "latency_us", "true", "must be a number >= 0, got true"),
])
def test_link_numbers(table, key, value, expected):
    other = {"bandwidth_gbps": "latency_us = 1", "latency_us": "bandwidth_gbps = 1"}[key]
    msg = error_of(f"""
        [[nodes]]
        gpus = 8
        [{table}]
        {key} = {value}
        {other}
    """)
    assert msg == f"cluster.toml: {table}.{key}: {expected}"


def test_zero_latency_is_allowed():
    c = parse("[[nodes]]\ngpus = 2\n[links.nvlink]\nlatency_us = 0\n")
    assert c.links["nvlink"].latency_us == 0.0
    assert c.links["nvlink"].bandwidth_gbps == H200_NVLINK[0]
    assert not math.isnan(c.links["pcie"].latency_us)


def test_toml_syntax_error_names_line_and_column():
    msg = error_of("""\
        [[nodes]]
        gpus = 8
        gpu "H200"
    """)
    assert msg.startswith("cluster.toml: invalid TOML: ")
    assert "line 3" in msg and "column" in msg


def test_load_errors_name_the_path(tmp_path):
    missing = tmp_path / "nope.toml"
    with pytest.raises(cluster.ClusterError, match=re.escape(f"{missing}: no such file")):
        cluster.load(missing)
    with pytest.raises(cluster.ClusterError, match="is a directory"):
        cluster.load(tmp_path)
    binary = tmp_path / "bin.toml"
    binary.write_bytes(b"\xff\xfe[[nodes]]")
    with pytest.raises(cluster.ClusterError, match=re.escape(f"{binary}: not UTF-8 text")):
        cluster.load(binary)
    bad = tmp_path / "bad.toml"
    bad.write_text("[[nodes]]\ngpus = 'eight'\n")
    with pytest.raises(cluster.ClusterError) as e:
        cluster.load(str(bad))
    assert str(e.value) == f'{bad}: nodes[0].gpus: must be a positive integer, got "eight"'


def test_single_node_errors():
    with pytest.raises(cluster.ClusterError) as e:
        cluster.single_node("H300", 8)
    assert str(e.value).startswith("command line: --gpu: unknown GPU 'H300'; known GPUs: H200")
    for n in (0, -1):
        with pytest.raises(cluster.ClusterError) as e:
            cluster.single_node("H200", n)
        assert str(e.value) == f"command line: --gpus: must be a positive integer, got {n}"
    with pytest.raises(cluster.ClusterError, match="--gpus: must be at most 64"):
        cluster.single_node("H200", 65)
