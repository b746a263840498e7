"""malleo.emulator: trace I/O, workload models, the replay driver, metrics and reports."""
