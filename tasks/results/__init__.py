"""Results records: every real-data measurement kept in git with its provenance (issue #55).

records.py builds and merges records (no paths, no params.yaml); record.py is the command
that writes them from finished runs: `python -m tasks.results.record --help`.
"""
