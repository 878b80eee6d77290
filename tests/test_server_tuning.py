"""ui.server_tuning: the collector and the switch interval are tuned once per process, whoever
calls first."""

import gc
import sys

from ui import server_tuning


def test_tune_process_sets_thresholds_switch_interval_and_freezes_once():
    server_tuning.tune_process()  # True here, or False when a page test of this process ran app.py first
    tuned = (server_tuning.YOUNG_THRESHOLD, *server_tuning.OLDER_THRESHOLDS)
    assert gc.get_threshold() == tuned
    assert gc.get_freeze_count() > 0
    assert sys.getswitchinterval() == server_tuning.SWITCH_INTERVAL_S
    gc.set_threshold(700, 10, 10)
    try:
        assert server_tuning.tune_process() is False  # a later run leaves the process as it is
        assert gc.get_threshold() == (700, 10, 10)
    finally:
        gc.set_threshold(*tuned)


def test_optional_modules_are_imported_at_the_first_run_unless_turned_off(monkeypatch):
    """A page's optional import (PyTorch for the Benchmarks page) happens when the process starts,
    not when the first student needs it in the middle of a class; modules that are not installed
    are skipped, and CONV_EXPLORER_PRELOAD=off turns it off."""
    # a small stdlib module stands for PyTorch; taken out of sys.modules for the test
    monkeypatch.delitem(sys.modules, "colorsys", raising=False)
    monkeypatch.setattr(server_tuning, "PRELOAD", ("colorsys", "no_such_module_anywhere"))
    monkeypatch.setenv("CONV_EXPLORER_PRELOAD", "off")
    assert server_tuning.preload_optional_imports() == []
    assert "colorsys" not in sys.modules
    monkeypatch.delenv("CONV_EXPLORER_PRELOAD")
    assert server_tuning.preload_optional_imports() == ["colorsys"]
    assert "colorsys" in sys.modules
