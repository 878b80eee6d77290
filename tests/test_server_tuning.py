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
