"""Benchmarks: the benchmark command (`python3 -m bench.suite`), its reports (`bench.reports`,
the curated runs in bench/results/), docs/performance.md (`python3 -m bench.to_markdown`), and the
scripts that measure kernel variants, host overhead and the app under load."""
