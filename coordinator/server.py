"""The coordinator of a run: the shared clock with its time keeper, and the gRPC service around it.

`timewarp run` starts one in its own process for the command it runs (integrations/launcher.py); another
`timewarp run --coordinator HOST:PORT` joins it, and its processes then live on the same clock. It listens
on loopback unless told otherwise; beyond loopback a shared token is required.
"""
from __future__ import annotations

import ipaddress
import json
import logging
import os
import queue
import secrets
import socket
import threading
from concurrent import futures
from pathlib import Path

import grpc

from . import timewarp_coordinator_pb2 as pb
from . import timewarp_coordinator_pb2_grpc as pb_grpc
from .clock import SharedClock

log = logging.getLogger(__name__)


class CoordinatorError(RuntimeError):
    """The coordinator cannot start or cannot be reached; the message says why."""


def is_loopback(host: str) -> bool:
    if host in ("localhost", ""):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def split_address(address: str) -> tuple[str, int]:
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit() or not host:
        raise CoordinatorError(f"coordinator address {address!r}: expected HOST:PORT")
    return host, int(port)


class _Service(pb_grpc.CoordinatorServicer):
    def __init__(self, coord: "Coordinator"):
        self.c = coord

    def _check(self, token: str, context) -> None:
        if self.c.token and not secrets.compare_digest(token or "", self.c.token):
            context.abort(grpc.StatusCode.UNAUTHENTICATED, "wrong or missing token (TIMEWARP_TOKEN)")

    def Join(self, request, context):
        self._check(request.token, context)
        log.debug("join from pid %d on %s: %s", request.pid, request.hostname, " ".join(request.argv))
        return pb.JoinReply(run_id=self.c.clock.run_id, clock_path=self.c.clock.path, hostname=socket.gethostname(),
                            topology=self.c.topology, gpu=self.c.gpu, gpus=self.c.gpus)

    def Status(self, request, context):
        self._check(request.token, context)
        return pb.StatusReply(run_id=self.c.clock.run_id, json=json.dumps(self.c.clock.status()))

    def Abort(self, request, context):
        self._check(request.token, context)
        self.c.abort(request.reason or "aborted through the coordinator's Abort call")
        return pb.AbortReply()

    def Watch(self, request, context):
        self._check(request.token, context)
        q: queue.Queue = queue.Queue()
        self.c._watchers.append(q)
        try:
            while context.is_active():
                try:
                    ev = q.get(timeout=1.0)
                except queue.Empty:
                    continue
                yield ev
                if ev.kind == pb.Event.ENDED:
                    return
        finally:
            self.c._watchers.remove(q)


class Coordinator:
    """A running coordinator: .address (HOST:PORT), .clock (SharedClock), abort(), close()."""

    def __init__(self, lib_dir: Path, gpu: str, gpus: int, topology: str = "", listen: str = "127.0.0.1:0",
                 token: str | None = None, host_speed: float = 1.0, pace_target_us: float | None = None,
                 native_target_us: float | None = None, blend_us: float = 0.0):
        host, port = split_address(listen)
        if not is_loopback(host) and not token:
            raise CoordinatorError(f"the coordinator would listen on {listen}, beyond loopback: a shared token is "
                                   "required (--token or TIMEWARP_TOKEN)")
        self.token = token or ""
        self.gpu, self.gpus, self.topology = gpu, gpus, topology
        self._watchers: list[queue.Queue] = []
        self.clock = SharedClock(lib_dir, topology=topology, host_speed=host_speed,
                                 pace_target_us=pace_target_us, native_target_us=native_target_us,
                                 blend_us=blend_us)
        self._server = grpc.server(futures.ThreadPoolExecutor(max_workers=4, thread_name_prefix="timewarp-coord"))
        pb_grpc.add_CoordinatorServicer_to_server(_Service(self), self._server)
        bound = self._server.add_insecure_port(f"{host}:{port}")
        if not bound:
            self.clock.close()
            raise CoordinatorError(f"the coordinator cannot listen on {listen} (address in use or not local?)")
        self._server.start()
        self.address = f"{host}:{bound}"

    def env(self) -> dict[str, str]:
        return {"TIMEWARP_CLOCK": self.clock.path, "TIMEWARP_COORDINATOR": self.address}

    def abort(self, reason: str) -> None:
        self.clock.abort(reason)
        for q in list(self._watchers):
            q.put(pb.Event(kind=pb.Event.ABORTED, reason=reason))

    def close(self) -> None:
        for q in list(self._watchers):
            q.put(pb.Event(kind=pb.Event.ENDED))
        self._server.stop(grace=0.5)
        self.clock.close()


def join(address: str, token: str | None = None, timeout: float = 10.0):
    """Join the coordinator at address: returns its JoinReply. Errors name the address and the cause."""
    channel = grpc.insecure_channel(address)
    stub = pb_grpc.CoordinatorStub(channel)
    try:
        reply = stub.Join(pb.JoinRequest(token=token or "", pid=os.getpid(), hostname=socket.gethostname(),
                                         argv=[]), timeout=timeout)
    except grpc.RpcError as e:
        code = e.code()
        if code == grpc.StatusCode.UNAVAILABLE or code == grpc.StatusCode.DEADLINE_EXCEEDED:
            raise CoordinatorError(f"no coordinator answers at {address} ({code.name.lower()}): is its "
                                   "`timewarp run` still running?") from None
        raise CoordinatorError(f"coordinator at {address}: {e.details()}") from None
    finally:
        channel.close()
    if reply.hostname != socket.gethostname():
        raise CoordinatorError(f"the coordinator at {address} runs on host {reply.hostname!r}; its clock is shared "
                               "memory there, so processes must run on that host (multi-host runs are not supported yet)")
    if not Path(reply.clock_path).exists():
        raise CoordinatorError(f"the coordinator at {address} names clock file {reply.clock_path}, which this "
                               "process cannot see (another container?)")
    return reply
