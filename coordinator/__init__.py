"""The coordinator: one virtual clock across every process of a run (server.py, clock.py), and its gRPC
protocol (proto/timewarp_coordinator.proto)."""
