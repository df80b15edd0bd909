"""Libraries over toolchains that several backends use."""
