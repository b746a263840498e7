"""``python -m malleo`` runs the CLI."""
from malleo.emulator.cli import main

main()
