"""pytest conventions of radixkv's Python tests (run by ctest: tests/cmake/python.cmake).

- `needs_torch`: a test that needs torch skips, saying so, where torch does not import, except
  under CI=true, where it fails: CI installs python3-torch, so a skip there would hide a test.
- A run in which every test skipped exits with 77, which ctest reports as "Skipped" (the same
  code as the doctest suites' RADIXKV_SKIP), never as a pass; a run that collected no test fails.
- Every run ends with "[radixkv skipped] <test>: <reason>" per skipped test and
  "[radixkv pytest] passed=P skipped=S failed=F", which scripts/check-tests.sh reads.
"""

import os

import pytest

SKIP_EXIT_CODE = 77


def _torch_or_reason():
    try:
        import torch  # noqa: F401
    except ImportError as error:
        return None, f"torch does not import ({error})"
    return torch, None


@pytest.fixture
def torch():
    module, reason = _torch_or_reason()
    if module is None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"{reason}; CI must install python3-torch so that this test runs")
        pytest.skip(reason)
    return module


def pytest_sessionfinish(session, exitstatus):
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is None:
        return
    passed = len(reporter.stats.get("passed", []))
    skipped = len(reporter.stats.get("skipped", []))
    failed = len(reporter.stats.get("failed", [])) + len(reporter.stats.get("error", []))
    print()
    for report in reporter.stats.get("skipped", []):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        print(f"[radixkv skipped] {report.nodeid}: {reason}")
    print(f"[radixkv pytest] passed={passed} skipped={skipped} failed={failed}")
    if exitstatus == 0 and passed == 0 and skipped > 0:
        session.exitstatus = SKIP_EXIT_CODE
