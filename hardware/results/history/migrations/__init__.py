"""Alembic migrations of the results history (run by hardware/results/history/store.py, never by hand)."""
