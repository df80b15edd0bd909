"""The run core: backends' interface, registry, runner, isolation, verdicts, faults."""
