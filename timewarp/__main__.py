"""`python -m timewarp ...` is the `timewarp` command."""
from timewarp.integrations.cli import main

main()
