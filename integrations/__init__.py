"""The `timewarp` command (cli.py), the launcher that runs programs under emulation, and the demo."""
