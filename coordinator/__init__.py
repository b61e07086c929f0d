"""Virtual-time coordinator (gRPC); see issue 4."""
