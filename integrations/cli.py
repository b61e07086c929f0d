"""The `timewarp` command.

    timewarp run [--gpu H200] [--gpus N] [--report FILE] [--trace FILE] [--strict] [--] CMD ...
    timewarp demo [--gpu H200] [...] [-- DEMO-ARGS]
    timewarp vllm-bench [--gpu H200] [--model DIR] [--input-len N] [--output-len N] [--num-prompts N] [--concurrency N]
                        [--request-rate R] [--range-ratio X]
    timewarp gpus
    timewarp env [--gpu H200] [--gpus N] [--report FILE] [--trace FILE] [--strict]
    timewarp validate [--gpu H200] [--sections ...] [--keep DIR] [--errors FILE] [--no-programs]
    timewarp record [--shim] [--out DIR] -- CMD ARGS ...   (on a real GPU)
"""
from __future__ import annotations

import logging
import os
import shlex
import sys

import click

from timewarp import __version__
from timewarp.integrations import launcher
from timewarp.predictors import catalog

log = logging.getLogger(__name__)


def _gpu_key(ctx: click.Context, param: click.Parameter, value: str | None) -> str:
    try:
        return catalog.load().resolve_key(value or catalog.default_key())
    except catalog.UnknownGpuError:
        raise click.BadParameter(
            f"unknown GPU {value!r}; known GPUs: {catalog.load().describe_known()}", ctx=ctx, param=param)


def coordinator_options(f):
    """--cluster/--coordinator/--listen/--token: the run's clock and topology (run and demo)."""
    f = click.option("--token", envvar="TIMEWARP_TOKEN", default=None,
                     help="Shared secret of the coordinator (required to listen beyond loopback; env TIMEWARP_TOKEN).")(f)
    f = click.option("--listen", default=None, metavar="HOST:PORT",
                     help="Where this run's coordinator listens (default 127.0.0.1, any free port).")(f)
    f = click.option("--coordinator", "join", default=None, metavar="HOST:PORT",
                     help="Join the coordinator of another `timewarp run` instead of starting one: one virtual clock.")(f)
    f = click.option("--cluster", type=click.Path(dir_okay=False), default=None,
                     help="Cluster description (TOML: nodes, GPUs, links; docs/CLUSTER.md). Default: --gpus N on one node.")(f)
    return f


def emulation_options(f):
    """--gpu/--gpus/--report/--trace/--strict, shared by run, demo and env."""
    f = click.option("--strict", is_flag=True,
                     help="Abort on the first call the emulator does not implement (TIMEWARP_STRICT=1).")(f)
    f = click.option("--trace", type=click.Path(dir_okay=False), default=None,
                     help="Write a Chrome/Perfetto trace of the virtual timeline to FILE.")(f)
    f = click.option("--report", type=click.Path(dir_okay=False), default=None,
                     help="Keep the per-process report (JSON lines) in FILE; without it a temporary file is used.")(f)
    f = click.option("--gpus", type=click.IntRange(1, 1024), default=1, show_default=True,
                     help="Number of virtual GPUs visible to the program.")(f)
    f = click.option("--gpu", default=None, callback=_gpu_key, metavar="NAME",
                     help="Virtual GPU model, a catalog key or alias (see `timewarp gpus`); default H200.")(f)
    return f


def _launch(argv, gpu, gpus, report, trace, strict, cluster_file=None, join=None, listen=None, token=None) -> int:
    from timewarp.integrations import cluster as clusters

    try:
        if cluster_file:
            cl = clusters.load(cluster_file)
            if cl.num_nodes > 1:
                click.echo(f"timewarp: {cluster_file}: {cl.num_nodes} nodes; this machine runs the processes of "
                           "every node, each sees the GPUs of its node by CUDA_VISIBLE_DEVICES", err=True)
            gpus = cl.total_gpus
            gpu = cl.gpu_keys[0]
        else:
            cl = clusters.single_node(gpu, gpus)
    except clusters.ClusterError as e:
        click.echo(f"timewarp: {e}", err=True)
        return 2
    try:
        return launcher.launch(argv, gpu, gpus, report=report, trace=trace, strict=strict,
                               gpu_name=f"{gpus} x {catalog.get(gpu).name}" if gpus > 1 else catalog.get(gpu).name,
                               topology=cl.to_env(), join=join, listen=listen, token=token)
    except launcher.CommandError as e:
        click.echo(str(e), err=True)
        return e.code
    except launcher.LauncherError as e:
        click.echo(f"timewarp: {e}", err=True)
        return 1


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="timewarp")
def cli() -> None:
    """Run unmodified GPU programs on a machine with no GPU and see how long they would take on real GPUs."""


@cli.command(context_settings={"allow_interspersed_args": False})
@emulation_options
@coordinator_options
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
@click.pass_context
def run(ctx, gpu, gpus, report, trace, strict, cluster, join, listen, token, command) -> None:
    """Run COMMAND (and every process it starts) on virtual GPUs, all on one virtual clock.

    Options must come before COMMAND; `--` ends them. Exits with the command's status."""
    ctx.exit(_launch(list(command), gpu, gpus, report, trace, strict, cluster, join, listen, token))


@cli.command(context_settings={"allow_interspersed_args": False})
@emulation_options
@click.argument("demo_args", nargs=-1, type=click.UNPROCESSED)
@click.pass_context
def demo(ctx, gpu, gpus, report, trace, strict, demo_args) -> None:
    """Run the built-in demo (a Llama-shaped model's prefill and decode in plain PyTorch) under emulation.

    DEMO_ARGS go to the demo (`timewarp demo -- --help` lists them)."""
    argv = [sys.executable, "-m", "timewarp.integrations.demo", *demo_args]
    # The demo reads nothing back from the GPU, so it needs no shadow of small results, whose Python
    # dispatch overhead is only partly excluded from the virtual clock (docs/LIMITATIONS.md).
    os.environ.setdefault("TIMEWARP_SHADOW", "0")
    ctx.exit(_launch(argv, gpu, gpus, report, trace, strict))


@cli.command("vllm-bench")
@click.option("--gpu", default=None, callback=_gpu_key, metavar="NAME", help="Virtual GPU (default H200).")
@click.option("--model", type=click.Path(file_okay=False), default=None,
              help="Model folder (config.json, and a tokenizer or the embedded model's is used; weights are "
                   "not read). Default: the embedded Llama-3-8B-shaped model.")
@click.option("--input-len", type=click.IntRange(1), default=512, show_default=True, help="Prompt tokens.")
@click.option("--output-len", type=click.IntRange(1), default=128, show_default=True, help="Output tokens (--ignore-eos).")
@click.option("--num-prompts", type=click.IntRange(1), default=32, show_default=True)
@click.option("--concurrency", type=click.IntRange(1), default=None,
              help="--max-concurrency. [default: 8; with --request-rate, no limit]")
@click.option("--request-rate", type=click.FloatRange(0, min_open=True), default=None,
              help="Requests per second, Poisson arrivals (vLLM's --request-rate; default: all at once, up to "
                   "--concurrency).")
@click.option("--range-ratio", type=click.FloatRange(0, 1, max_open=True), default=0.0, show_default=True,
              help="Draw input and output lengths within this ratio of --input-len and --output-len "
                   "(vLLM's --random-range-ratio).")
@click.option("--repeat", type=click.IntRange(1), default=3, show_default=True,
              help="Run the benchmark N times on the same server (the K-th with --seed K) and print each metric's "
                   "mean and range: host-bound metrics such as TTFT vary between runs (one run's TTFT by up to "
                   "25% at 8-64 concurrent requests; docs/LIMITATIONS.md), the mean of three much less.")
@click.option("--serve-arg", "serve_args", multiple=True, help="Extra argument for `vllm serve` (repeatable).")
@click.option("--bench-arg", "bench_args", multiple=True, help="Extra argument for `vllm bench serve` (repeatable).")
@click.option("--logs", type=click.Path(file_okay=False), default=None, help="Keep logs and the result JSON in DIR.")
@click.pass_context
def vllm_bench(ctx, gpu, model, input_len, output_len, num_prompts, concurrency, request_rate, range_ratio, repeat,
               serve_args, bench_args, logs) -> None:
    """Serve a model with `vllm serve` and benchmark it with `vllm bench serve`, both on the virtual GPU and one
    virtual clock; print the predicted TTFT, TPOT, ITL and throughput. Needs vLLM 0.24 installed."""
    import importlib.util
    import tempfile

    from timewarp.integrations import vllm_bench as vb

    if importlib.util.find_spec("vllm") is None:
        click.echo("timewarp vllm-bench needs vLLM: pip install vllm==0.24.0", err=True)
        ctx.exit(1)
    model = os.path.abspath(model) if model else str(vb.EMBEDDED_MODEL)
    if not os.path.isfile(os.path.join(model, "config.json")):
        click.echo(f"timewarp vllm-bench: {model} has no config.json (a model folder is needed)", err=True)
        ctx.exit(2)
    tokenizer_files = ("tokenizer.json", "tokenizer.model", "tokenizer_config.json", "tekken.json")
    given = any(a.startswith("--tokenizer") for a in (*serve_args, *bench_args))
    if not given and not any(os.path.isfile(os.path.join(model, f)) for f in tokenizer_files):
        # a config.json alone (the shape is all the emulator needs): prompts and outputs go through the
        # embedded model's tokenizer, as integrations/bench/cases.sh does for such folders
        click.echo(f"timewarp vllm-bench: {model} has no tokenizer; using the embedded model's "
                   f"({vb.EMBEDDED_MODEL})", err=True)
        serve_args = (*serve_args, f"--tokenizer={vb.EMBEDDED_MODEL}")
        bench_args = (*bench_args, f"--tokenizer={vb.EMBEDDED_MODEL}")
    if request_rate is not None:
        bench_args = ("--request-rate", str(request_rate), *bench_args)
    elif concurrency is None:
        concurrency = 8   # all at once: a limit is what makes it a benchmark of that many streams
    if range_ratio:
        bench_args = ("--random-range-ratio", str(range_ratio), *bench_args)
    workdir = os.path.abspath(logs) if logs else tempfile.mkdtemp(prefix="timewarp-vllm-bench-")
    spec = vb.Spec(model=model, port=vb.free_port(), input_len=input_len, output_len=output_len,
                   num_prompts=num_prompts, concurrency=concurrency, workdir=workdir,
                   serve_args=list(serve_args), bench_args=list(bench_args), repeat=repeat)
    try:
        rc = vb.run_benchmark(spec, gpu, catalog.get(gpu).name, launcher.launch)
    except (launcher.LauncherError, launcher.CommandError) as e:
        click.echo(f"timewarp: {e}", err=True)
        rc = 1
    ctx.exit(rc)


@cli.command()
def gpus() -> None:
    """List the virtual GPUs of the catalog."""
    cat = catalog.load()
    header = ("GPU", "name", "cc", "SMs", "memory", "bf16 TFLOP/s", "HBM TB/s", "aliases")
    rows = []
    for key, g in cat.gpus.items():
        aliases = sorted(a for a, k in cat.aliases.items() if k == key and a != key.lower())
        rows.append((
            key + ("*" if key == cat.default else ""), g.name, f"{g.cc[0]}.{g.cc[1]}", str(g.sm_count),
            f"{g.total_mem / 2**30:.1f} GiB", f"{g.rates['bf16_flops'] / 1e12:.0f}",
            f"{g.rates['hbm_bytes_per_s'] / 1e12:.2f}", ", ".join(aliases),
        ))
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    right = {2, 3, 4, 5, 6}
    for r in [header, *rows]:
        cells = [c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths))]
        click.echo("  ".join(cells).rstrip())
    click.echo("\n* default. Rates are achievable ones (what the analytical model uses), not datasheet peaks.")
    click.echo("\nAccuracy:")
    for key, g in cat.gpus.items():
        click.echo(f"  {key}: {g.accuracy or 'not stated'}")


@cli.command("env")
@emulation_options
@click.pass_context
def env_cmd(ctx, gpu, gpus, report, trace, strict) -> None:
    """Print the environment `timewarp run` would set, as shell exports (eval "$(timewarp env)")."""
    try:
        env = launcher.timewarp_env(gpu, gpus, report=report, trace=trace, strict=strict)
    except launcher.LauncherError as e:
        click.echo(f"timewarp: {e}", err=True)
        ctx.exit(1)
    for k, v in env.items():
        click.echo(f"export {k}={shlex.quote(v)}")


@cli.command(context_settings={"allow_interspersed_args": False, "ignore_unknown_options": True})
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
@click.pass_context
def record(ctx, args) -> None:
    """On a real GPU: run a program unmodified and write one row per kernel, copy and memset, keyed as the
    emulator keys its launches. `timewarp record --shim [--out DIR] -- CMD ARGS` preloads the recorder library
    (any program; GEMMs keyed by cuBLAS's view); `timewarp record [--out DIR] -- script.py ARGS` runs a Python
    program under torch.profiler (operator shapes and labels too); `--help-recorder` lists its options."""
    if list(args[:1]) == ["--shim"]:
        from timewarp.integrations import record_shim

        ctx.exit(record_shim.main(list(args[1:])))
    from timewarp.integrations import record as rec

    argv = ["--help"] if list(args) == ["--help-recorder"] else list(args)
    ctx.exit(rec.main(argv))


@cli.command()
@click.option("--gpu", default="H200", show_default=True, help="GPU whose real measurements to compare with.")
@click.option("--sections", default=None, help="Benchmark sections (default: gemm_main,gemm_models,elementwise,memcpy,sdpa).")
@click.option("--keep", type=click.Path(file_okay=False), default=None, help="Keep the emulated tables in DIR.")
@click.option("--errors", type=click.Path(dir_okay=False), default=None, help="Write every row's error to a CSV.")
@click.option("--programs/--no-programs", default=True, show_default=True,
              help="Also run the whole programs (a transformers Llama-3-8B-shaped model, GEMM and graph loops, "
                   "torch.compile, the demo; about 3 minutes) and print their figures against the real GPU's.")
@click.pass_context
def validate(ctx, gpu, sections, keep, errors, programs) -> None:
    """Run the calibration microbenchmarks and whole programs under emulation and print their error against the
    real GPU."""
    from timewarp.predictors import validate as v

    try:
        _, summary = v.validate(gpu, sections or v.SECTIONS, keep=keep, errors_csv=errors)
    except ImportError as e:
        click.echo(f"timewarp validate needs pandas and pyarrow ({e}): pip install pandas pyarrow", err=True)
        ctx.exit(1)
    except v.ValidateError as e:
        click.echo(f"timewarp: {e}", err=True)
        ctx.exit(1)
    newer = ", ".join(f"{t}: {' + '.join(x.name for x in (d if isinstance(d, list) else [d]))}"
                      for t, d in v.DATA_TABLES.get(gpu, {}).items())
    click.echo(f"emulated vs real {gpu} ({v.real_data(gpu).name}{'; ' + newer if newer else ''}); "
               f"error = (emulated - real) / real; graph-node: per-node device time inside a graph")
    click.echo(v.format_summary(summary))
    if programs:
        from timewarp.predictors import compare_programs as cp

        if gpu not in cp.REAL_PROGRAMS:
            click.echo(f"timewarp: no whole-program measurements stored for {gpu}", err=True)
            ctx.exit(1)
        click.echo(f"\nwhole programs, emulated vs real {gpu} ({cp.REAL_PROGRAMS[gpu].name}):")
        try:
            click.echo(cp.format_table(cp.compare(real_dir=cp.REAL_PROGRAMS[gpu], gpu=gpu)))
        except RuntimeError as e:
            click.echo(f"timewarp: {e}", err=True)
            ctx.exit(1)


def main(argv: list[str] | None = None) -> None:
    """Entry point of the `timewarp` console script."""
    level = os.environ.get("TIMEWARP_LOG_LEVEL", "WARNING").upper()
    logging.basicConfig(level=level if level in logging.getLevelNamesMapping() else "WARNING",
                        format="timewarp: %(message)s")
    cli.main(args=argv, prog_name="timewarp")


if __name__ == "__main__":
    main()
